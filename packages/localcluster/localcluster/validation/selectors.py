"""The selectors only the test server parses: the structured label selector of an object's spec
(metav1.LabelSelectorAsSelector: matchLabels and matchExpressions) and field selectors (fields.ParseSelector).

The string label selector, which the controller's informers parse too, is apimachinery/selectors.py's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from apimachinery.selectors import (
    DOES_NOT_EXIST,
    DOUBLE_EQUALS,
    EQUALS,
    EXISTS,
    IN,
    NOT_EQUALS,
    NOT_IN,
    LabelSelector,
    NothingSelector,
    Requirement,
    SelectorError,
    new_requirement,
)

__all__ = ["FieldRequirement", "FieldSelector", "label_selector_from_dict", "parse_field_selector"]


_STRUCTURED_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def label_selector_from_dict(selector: Mapping | None) -> LabelSelector:
    """metav1.LabelSelectorAsSelector: ``{"matchLabels": {...}, "matchExpressions": [...]}``.

    A null selector selects nothing; an empty one selects everything.
    """
    if selector is None:
        return NothingSelector()
    if not isinstance(selector, Mapping):
        raise SelectorError("a label selector must be an object")
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not isinstance(expressions, list):
        raise SelectorError("matchLabels must be an object and matchExpressions a list")
    requirements = [new_requirement(k, EQUALS, (_as_str(v),)) for k, v in match_labels.items()]
    requirements += [_expression_requirement(e) for e in expressions]
    return LabelSelector(sorted(requirements, key=lambda r: r.key))


def _expression_requirement(expression: object) -> Requirement:
    if not isinstance(expression, Mapping):
        raise SelectorError("a matchExpressions item must be an object")
    operator = expression.get("operator")
    if operator not in _STRUCTURED_OPERATORS:
        raise SelectorError(f'"{operator}" is not a valid label selector operator')
    values = expression.get("values") or []
    if not isinstance(values, list):
        raise SelectorError("matchExpressions values must be a list")
    key = _as_str(expression.get("key"))
    return new_requirement(key, _STRUCTURED_OPERATORS[operator], [_as_str(v) for v in values])


def _as_str(value: object) -> str:
    if not isinstance(value, str):
        raise SelectorError(f"label selector keys and values must be strings, got {value!r}")
    return value


# --- field selectors (fields.ParseSelector) -------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """``field`` is a dotted path; ``operator`` is "=" (also for "==") or "!="."""

    field: str
    operator: str
    value: str


class FieldSelector:
    """All requirements must hold. A missing field reads as the empty string."""

    __slots__ = ("_checks", "fields", "requirements")

    def __init__(self, requirements: Iterable[FieldRequirement]) -> None:
        self.requirements: tuple[FieldRequirement, ...] = tuple(requirements)
        self.fields: tuple[str, ...] = tuple(dict.fromkeys(r.field for r in self.requirements))
        self._checks = tuple((tuple(r.field.split(".")), r.operator == NOT_EQUALS, r.value) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def exact_value(self, field: str) -> str | None:
        """The value an ``=``/``==`` requirement demands of ``field``, if any (e.g. metadata.name)."""
        for r in self.requirements:
            if r.field == field and r.operator != NOT_EQUALS:
                return r.value
        return None

    def matches(self, obj: Mapping) -> bool:
        for path, negated, value in self._checks:
            if (_field_value(obj, path) == value) == negated:
                return False
        return True

    def __repr__(self) -> str:
        return f"FieldSelector({list(self.requirements)!r})"


def _field_value(obj: Mapping, path: tuple[str, ...]) -> str:
    value: object = obj
    for part in path:
        if not isinstance(value, Mapping):
            return ""
        value = value.get(part)
    if isinstance(value, str):
        return value
    if isinstance(value, bool):  # e.g. spec.hostNetwork, which the apiserver renders as "true"/"false"
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return ""


def parse_field_selector(text: str) -> FieldSelector:
    """Parse e.g. ``metadata.name=foo,status.phase!=Running``; "" selects everything.

    As in Go, nothing is trimmed, and ``\\,``, ``\\=`` and ``\\\\`` escape those characters in
    values. Whether a field is supported is for the caller to decide (see ``fields``).
    """
    requirements = []
    for term in _split_terms(text):
        if not term:
            continue
        field, op, raw_value = _split_term(text, term)
        requirements.append(FieldRequirement(field, op, _unescape(raw_value)))
    return FieldSelector(requirements)


def _split_terms(text: str) -> list[str]:
    """Split on commas that a backslash does not escape (escapes are kept for _unescape)."""
    terms, start, escaped = [], 0, False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


_TERM_RE = re.compile(r"(.*?)(!=|==|=)(.*)", re.DOTALL)


def _split_term(text: str, term: str) -> tuple[str, str, str]:
    """The first operator splits: the field part has no escaping."""
    match = _TERM_RE.fullmatch(term)
    if match is None:
        raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
    field, op, value = match.groups()
    return field, EQUALS if op == DOUBLE_EQUALS else op, value


def _unescape(value: str) -> str:
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    chars, escaped = [], False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{char}")
            chars.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise SelectorError(f"invalid field selector: unescaped character in value: {char}")
        else:
            chars.append(char)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(chars)
