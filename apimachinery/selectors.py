"""Kubernetes label and field selectors: parsed once, matched many times.

The label-selector grammar, its error messages and its matching rules follow
k8s.io/apimachinery/pkg/labels (Parse, NewRequirement, Requirement.Matches); field
selectors follow k8s.io/apimachinery/pkg/fields.ParseSelector.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "SUBDOMAIN_MSG",
    "FieldRequirement",
    "FieldSelector",
    "LabelSelector",
    "Requirement",
    "SelectorError",
    "label_selector_from_dict",
    "parse_field_selector",
    "parse_label_selector",
    "qualified_name_errors",
]


class SelectorError(ValueError):
    """A selector that cannot be parsed; the message reads like the apiserver's."""


# Operator spellings are those of k8s.io/apimachinery/pkg/selection.
EQUALS = "="
DOUBLE_EQUALS = "=="
NOT_EQUALS = "!="
IN = "in"
NOT_IN = "notin"
EXISTS = "exists"
DOES_NOT_EXIST = "!"
GREATER_THAN = "gt"
LESS_THAN = "lt"

_BINARY_OPERATORS = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)

Labels = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Requirement:
    """One label requirement, e.g. ``tier in (web,api)``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


class LabelSelector:
    """All requirements must hold. An empty selector matches everything."""

    __slots__ = ("_checks", "requirements")

    def __init__(self, requirements: Iterable[Requirement]) -> None:
        self.requirements: tuple[Requirement, ...] = tuple(requirements)
        self._checks = tuple(_compile_requirement(r) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Labels | None) -> bool:
        labels = labels or {}
        for check in self._checks:
            if not check(labels):
                return False
        return True

    def __repr__(self) -> str:
        return f"LabelSelector({list(self.requirements)!r})"


class _NothingSelector(LabelSelector):
    """What a missing (null) structured selector means: it selects nothing."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(())

    @property
    def empty(self) -> bool:
        return False

    def matches(self, labels: Labels | None) -> bool:
        return False


def _compile_requirement(req: Requirement) -> Callable[[Labels], bool]:
    """Turn a requirement into a closure doing one or two dict lookups.

    ``labels.get(key)`` is None for a missing label and label values are strings, so
    "absent" never equals a wanted value: that gives `=`/`in` their "must exist" and
    `!=`/`notin` their "or is absent" meaning for free.
    """
    key, op = req.key, req.operator
    if op in (EQUALS, DOUBLE_EQUALS):
        wanted = req.values[0]
        return lambda labels: labels.get(key) == wanted
    if op == NOT_EQUALS:
        unwanted = req.values[0]
        return lambda labels: labels.get(key) != unwanted
    if op == IN:
        wanted_set = frozenset(req.values)
        return lambda labels: labels.get(key) in wanted_set
    if op == NOT_IN:
        unwanted_set = frozenset(req.values)
        return lambda labels: labels.get(key) not in unwanted_set
    if op == EXISTS:
        return lambda labels: key in labels
    if op == DOES_NOT_EXIST:
        return lambda labels: key not in labels
    bound = int(req.values[0])
    sign = 1 if op == GREATER_THAN else -1

    def compares(labels: Labels) -> bool:  # a missing or non-integer label never matches
        value = _label_int(labels, key)
        return value is not None and (value - bound) * sign > 0

    return compares


_INT64_RE = re.compile(r"[+-]?[0-9]+")


def _parse_int64(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): Python's int() also takes spaces and '_'."""
    if not _INT64_RE.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _label_int(labels: Labels, key: str) -> int | None:
    value = labels.get(key)
    return None if value is None else _parse_int64(value)


# --- validation (k8s.io/apimachinery/pkg/util/validation) ---------------------------

_QUALIFIED_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_NAME_CHARS_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
    " (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def qualified_name_errors(key: str) -> list[str]:
    """validation.IsQualifiedName (a label key, an Event's reporting controller): an optional DNS-subdomain
    prefix, '/', and a name; its messages word for word."""
    parts = key.split("/")
    if len(parts) > 2:
        return [f"a qualified name {_NAME_CHARS_MSG} with an optional DNS subdomain prefix and '/' "
                f"(e.g. 'example.com/MyName')"]
    errors = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        elif len(prefix) > 253:
            errors.append("prefix part must be no more than 253 characters")
        if prefix and not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
            errors.append(f"prefix part {SUBDOMAIN_MSG}")
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errors.append(f"name part {_NAME_CHARS_MSG}")
    return errors


def _label_value_errors(value: str) -> list[str]:
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(f"a valid label must be an empty string or {_NAME_CHARS_MSG.removeprefix('must ')}")
    return errors


def _invalid(field: str, value: str, errors: list[str]) -> str:
    return f'{field}: Invalid value: "{value}": {"; ".join(errors)}'


def _new_requirement(key: str, op: str, values: Iterable[str]) -> Requirement:
    """labels.NewRequirement: checks the key, the value count for the operator, and each value."""
    values = tuple(values)
    problems = []
    if key_errors := qualified_name_errors(key):
        problems.append(_invalid("key", key, key_errors))
    if op in (IN, NOT_IN) and not values:
        problems.append("values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty")
    elif op in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS) and len(values) != 1:
        problems.append("values: Invalid value: exact-match compatibility requires one single value")
    elif op in (EXISTS, DOES_NOT_EXIST) and values:
        problems.append("values: Invalid value: values set must be empty for exists and does not exist")
    elif op in (GREATER_THAN, LESS_THAN):
        if len(values) != 1:
            problems.append("values: Invalid value: for 'Gt', 'Lt' operators, exactly one value is required")
        problems += [
            f"values[{i}]: Invalid value: \"{v}\": for 'Gt', 'Lt' operators, the value must be an integer"
            for i, v in enumerate(values)
            if _parse_int64(v) is None
        ]
    for i, value in enumerate(values):
        if value_errors := _label_value_errors(value):
            problems.append(_invalid(f"values[{i}][{key}]", value, value_errors))
    if problems:
        raise SelectorError(problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]")
    return Requirement(key, op, values)


# --- the label selector string grammar (labels.Parse) ----------------------------------

# Token kinds.
_IDENTIFIER = "identifier"
_END = "end of string"
_OPEN_PAREN = "("
_CLOSE_PAREN = ")"
_COMMA = ","
_BANG = "!"

_SPECIAL_CHARS = frozenset("=!(),<>")
_WHITESPACE = frozenset(" \t\r\n")
_SYMBOLS = {
    "(": _OPEN_PAREN,
    ")": _CLOSE_PAREN,
    ",": _COMMA,
    "!": _BANG,
    "=": EQUALS,
    "==": DOUBLE_EQUALS,
    "!=": NOT_EQUALS,
    ">": GREATER_THAN,
    "<": LESS_THAN,
}
_KEYWORDS = {"in": IN, "notin": NOT_IN}
# Go's lexer knows only these four whitespace characters.
_WORD_RE = re.compile(r"[^=!(),<> \t\r\n]+")


def _tokenize(text: str) -> list[tuple[str, str]]:
    """Split into (kind, literal) pairs, ending with an end-of-string token."""
    tokens = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in _WHITESPACE:
            pos += 1
        if pos == len(text):
            tokens.append((_END, ""))
            return tokens
        if text[pos] in _SPECIAL_CHARS:
            # The longest symbol wins: "!=" and "==" are the only two-character ones.
            literal = text[pos : pos + 2] if text[pos : pos + 2] in _SYMBOLS else text[pos]
            kind = _SYMBOLS[literal]
        else:
            literal = _WORD_RE.match(text, pos).group()
            kind = _KEYWORDS.get(literal, _IDENTIFIER)
        tokens.append((kind, literal))
        pos += len(literal)


class _Parser:
    """The recursive-descent parser of labels.Parse, error messages included."""

    def __init__(self, text: str) -> None:
        self._tokens = _tokenize(text)
        self._pos = 0

    def _peek(self, values_context: bool = True) -> tuple[str, str]:
        return self._as_context(self._tokens[self._pos], values_context)

    def _next(self, values_context: bool = True) -> tuple[str, str]:
        token = self._tokens[self._pos]
        self._pos += 1
        return self._as_context(token, values_context)

    @staticmethod
    def _as_context(token: tuple[str, str], values_context: bool) -> tuple[str, str]:
        # "in" and "notin" are operators only where an operator is expected: `in in (in)` is valid.
        kind, literal = token
        if values_context and kind in (IN, NOT_IN):
            return _IDENTIFIER, literal
        return kind, literal

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            kind, literal = self._peek()
            if kind == _END:
                return requirements
            if kind not in (_IDENTIFIER, _BANG):
                raise SelectorError(f"found '{literal}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except SelectorError as exc:
                raise SelectorError(f"unable to parse requirement: {exc}") from None
            kind, literal = self._next()
            if kind == _END:
                return requirements
            if kind != _COMMA:
                raise SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            kind, literal = self._peek()
            if kind not in (_IDENTIFIER, _BANG):
                raise SelectorError(f"found '{literal}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        negated = self._peek()[0] == _BANG
        if negated:
            self._next()
        kind, key = self._next()
        if kind != _IDENTIFIER:
            raise SelectorError(f"found '{key}', expected: identifier")
        if key_errors := qualified_name_errors(key):
            raise SelectorError(_invalid("key", key, key_errors))
        if negated:  # "!key" takes no operator: "!a=b" fails on the "=" that follows
            return _new_requirement(key, DOES_NOT_EXIST, ())
        if self._peek()[0] in (_END, _COMMA):
            return _new_requirement(key, EXISTS, ())
        op, literal = self._next(values_context=False)
        if op not in _BINARY_OPERATORS:
            raise SelectorError(f"found '{literal}', expected: {', '.join(_BINARY_OPERATORS)}")
        values = self._value_set() if op in (IN, NOT_IN) else self._exact_value()
        # Like Go's sets.String.List(): deduplicated and sorted.
        return _new_requirement(key, op, sorted(values))

    def _value_set(self) -> set[str]:
        kind, literal = self._next()
        if kind != _OPEN_PAREN:
            raise SelectorError(f"found '{literal}' expected: '('")
        kind, literal = self._peek()
        if kind == _CLOSE_PAREN:  # "()" is the set holding only the empty value
            self._next()
            return {""}
        if kind not in (_IDENTIFIER, _COMMA):
            raise SelectorError(f"found '{literal}', expected: ',', ')' or identifier")
        values = self._identifier_list()
        self._next()  # the ")" that ended the list
        return values

    def _identifier_list(self) -> set[str]:
        """Comma-separated values up to (not including) ")".

        An empty slot, as in "(a,,b)" or "(,a)", is the empty value.
        """
        values: set[str] = set()
        while True:
            kind, literal = self._next()
            if kind == _IDENTIFIER:
                values.add(literal)
                next_kind, next_literal = self._peek()
                if next_kind == _CLOSE_PAREN:
                    return values
                if next_kind != _COMMA:
                    raise SelectorError(f"found '{next_literal}', expected: ',' or ')'")
            elif kind == _COMMA:
                if not values:
                    values.add("")
                next_kind = self._peek()[0]
                if next_kind == _CLOSE_PAREN:
                    values.add("")
                    return values
                if next_kind == _COMMA:
                    self._next()
                    values.add("")
            else:
                raise SelectorError(f"found '{literal}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        if self._peek()[0] in (_END, _COMMA):  # "a=" selects the empty value
            return {""}
        kind, literal = self._next()
        if kind != _IDENTIFIER:
            raise SelectorError(f"found '{literal}', expected: identifier")
        return {literal}


def parse_label_selector(text: str) -> LabelSelector:
    """Parse the string form, e.g. ``app=web,tier in (a,b),!canary``; "" selects everything."""
    requirements = _Parser(text).parse()
    # Go sorts by key for a deterministic form; it also puts cheap checks in a stable order.
    return LabelSelector(sorted(requirements, key=lambda r: r.key))


_STRUCTURED_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def label_selector_from_dict(selector: Mapping | None) -> LabelSelector:
    """metav1.LabelSelectorAsSelector: ``{"matchLabels": {...}, "matchExpressions": [...]}``.

    A null selector selects nothing; an empty one selects everything.
    """
    if selector is None:
        return _NothingSelector()
    if not isinstance(selector, Mapping):
        raise SelectorError("a label selector must be an object")
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not isinstance(expressions, list):
        raise SelectorError("matchLabels must be an object and matchExpressions a list")
    requirements = [_new_requirement(k, EQUALS, (_as_str(v),)) for k, v in match_labels.items()]
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
    return _new_requirement(key, _STRUCTURED_OPERATORS[operator], [_as_str(v) for v in values])


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
