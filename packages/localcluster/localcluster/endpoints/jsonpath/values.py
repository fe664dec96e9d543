"""The errors of a path and of its evaluation, the Go value types the evaluation tells apart, and the
numbers and bytes of an object as kube-apiserver holds them."""

from __future__ import annotations

EOF = ""
INT64 = 2**63


class JSONPathError(ValueError):
    """A path client-go does not parse."""


class Failed(Exception):
    """An evaluation's error, with the values Go returns beside it (an existence filter still counts them)."""

    def __init__(self, message: str, values: list) -> None:
        super().__init__(message)
        self.values = values


class Uint8(int):
    """A byte of a string (`.*` and `..` walk a string's bytes): Go's uint8, which compares with integers only."""


class PathFloat(float):
    """A float written in the path (`1.0`): kept a float where the object's whole floats are integers."""


def number(value):
    """A JSON number as kube-apiserver holds it once stored: int64, or float64 if not whole or past int64."""
    if type(value) is float and value.is_integer() and -INT64 <= value < INT64:
        return int(value)
    if type(value) is int and not -INT64 <= value < INT64:
        return float(value)
    return value


def utf8_bytes(text: str) -> bytes:
    """A string's bytes (a byte that is not UTF-8, from a `\\xff` of a quoted string, is kept as it was)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


