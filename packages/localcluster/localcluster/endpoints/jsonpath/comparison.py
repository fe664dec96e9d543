"""A filter's comparisons, as Go's text/template compares (third_party/forked/golang/template/funcs.go)."""

from __future__ import annotations

from .values import Failed, Uint8, number, utf8_bytes

# --- comparison (third_party/forked/golang/template/funcs.go) --------------------------------------------------


def _basic_kind(value) -> str:
    value = number(value)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Uint8):
        return "uint"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    raise ValueError("invalid type for comparison")


def _kinds(a, b) -> tuple[str, str, object, object]:
    ka, kb = _basic_kind(a), _basic_kind(b)
    if ka != kb and {ka, kb} != {"int", "uint"}:
        raise ValueError("incompatible types for comparison")
    if ka == "string" == kb:
        return ka, kb, utf8_bytes(a), utf8_bytes(b)
    return ka, kb, number(a), number(b)


def _equal(a, b) -> bool:
    _, _, x, y = _kinds(a, b)
    return x == y


def _less(a, b) -> bool:
    ka, _, x, y = _kinds(a, b)
    if ka == "bool":
        raise ValueError("invalid type for comparison")
    return x < y  # type: ignore[operator]  # same kinds, or an int and a byte


_OPERATORS = {
    "==": _equal,
    "!=": lambda a, b: not _equal(a, b),
    "<": _less,
    "<=": lambda a, b: _less(a, b) or _equal(a, b),
    ">": lambda a, b: not (_less(a, b) or _equal(a, b)),
    ">=": lambda a, b: not _less(a, b),
}


def compare(operator: str, left, right, so_far: list | None = None) -> bool:
    """A filter's comparison; Failed (with the items matched so far) for an operator it does not know or
    values that do not compare."""
    if operator not in _OPERATORS:
        raise Failed(f"unrecognized filter operator {operator}", so_far or [])
    try:
        return _OPERATORS[operator](left, right)
    except ValueError as error:
        raise Failed(str(error), so_far or []) from None


