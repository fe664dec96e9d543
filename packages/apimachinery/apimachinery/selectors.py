"""Kubernetes label selectors, in their string form: parsed once, matched many times (the informers' listers).

The grammar, its error messages and its matching rules follow k8s.io/apimachinery/pkg/labels (Parse,
NewRequirement, Requirement.Matches); keys and values are checked as apimachinery/validation.py says. The
selectors only the test server parses (an object's structured label selector, field selectors) are
localcluster/validation/selectors.py's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from apimachinery.validation import label_value_errors, qualified_name_errors

__all__ = ["LabelSelector", "NothingSelector", "Requirement", "SelectorError", "new_requirement",
           "parse_label_selector"]


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

    def __str__(self) -> str:
        """The string form, as labels.Selector.String() writes it (a Scale's status.selector)."""
        return ",".join(_requirement_string(r) for r in self.requirements)


class NothingSelector(LabelSelector):
    """What a missing (null) structured selector means: it selects nothing."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(())

    @property
    def empty(self) -> bool:
        return False

    def matches(self, labels: Labels | None) -> bool:
        return False


def _requirement_string(req: Requirement) -> str:
    if req.operator == EXISTS:
        return req.key
    if req.operator == DOES_NOT_EXIST:
        return "!" + req.key
    if req.operator in (IN, NOT_IN):
        return f"{req.key} {req.operator} ({','.join(sorted(req.values))})"
    symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(req.operator, req.operator)
    return f"{req.key}{symbol}{req.values[0]}"


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


def _invalid(field: str, value: str, errors: list[str]) -> str:
    return f'{field}: Invalid value: "{value}": {"; ".join(errors)}'


def new_requirement(key: str, op: str, values: Iterable[str]) -> Requirement:
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
        if value_errors := label_value_errors(value):
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
            word = _WORD_RE.match(text, pos)
            assert word is not None  # the character at pos is neither whitespace nor special: a word of one at least
            literal = word.group()
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
            return new_requirement(key, DOES_NOT_EXIST, ())
        if self._peek()[0] in (_END, _COMMA):
            return new_requirement(key, EXISTS, ())
        op, literal = self._next(values_context=False)
        if op not in _BINARY_OPERATORS:
            raise SelectorError(f"found '{literal}', expected: {', '.join(_BINARY_OPERATORS)}")
        values = self._value_set() if op in (IN, NOT_IN) else self._exact_value()
        # Like Go's sets.String.List(): deduplicated and sorted.
        return new_requirement(key, op, sorted(values))

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
