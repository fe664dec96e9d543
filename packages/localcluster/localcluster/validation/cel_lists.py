"""The Kubernetes CEL lists library (k8s.io/apiserver/pkg/cel/library/lists.go, served since 1.24) for the
rules of CRDs: `sum()`, `min()`, `max()` and `isSorted()` on lists. cel-python has none of them, and a CRD's
rule that calls one must be evaluated as the real server evaluates it, not fail to compile.

As the library: `sum()` of an empty list is 0, and of ints overflows as cel-go's int64 does; `min()` and
`max()` of an empty list are errors.
"""

from __future__ import annotations

import itertools

import celpy
from celpy import celtypes

INT64 = (-(2**63), 2**63 - 1)


def _sum(values):
    if not isinstance(values, list):
        return celpy.CELEvalError("no such overload")
    if not values:
        return celtypes.IntType(0)
    total = values[0]
    for value in values[1:]:
        if isinstance(total, int) and isinstance(value, int) and not INT64[0] <= int(total) + int(value) <= INT64[1]:
            return celpy.CELEvalError("integer overflow")
        try:
            total = total + value
        except (TypeError, ValueError):
            return celpy.CELEvalError("no such overload")
    return total


def _extreme(name: str, pick):
    def function(values):
        if not isinstance(values, list):
            return celpy.CELEvalError("no such overload")
        if not values:
            return celpy.CELEvalError(f"{name}(list) called on an empty list")
        try:
            return pick(values)
        except TypeError:
            return celpy.CELEvalError("no such overload")
    return function


def _is_sorted(values):
    if not isinstance(values, list):
        return celpy.CELEvalError("no such overload")
    try:
        return celtypes.BoolType(all(a <= b for a, b in itertools.pairwise(values)))
    except TypeError:
        return celpy.CELEvalError("no such overload")


FUNCTIONS = {"sum": _sum, "min": _extreme("min", min), "max": _extreme("max", max), "isSorted": _is_sorted}
