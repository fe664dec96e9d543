"""The Kubernetes CEL lists library in CRD rules (k8s.io/apiserver/pkg/cel/library/lists.go): what it returns,
and its errors, as cel-go's."""

from __future__ import annotations

import celpy
import pytest

from localcluster.validation.schema import cel_program


def evaluate(expression: str):
    program, error, _ = cel_program(expression)
    assert not error, error
    try:
        return program.evaluate({})
    except celpy.CELEvalError as err:
        return err


@pytest.mark.parametrize(("expression", "expected"), [
    ("[1, 3].sum()", 4), ("[].sum()", 0), ("[1.0, 3.5].sum()", 4.5),
    ("[{'r': 2}, {}].map(x, has(x.r) ? x.r : 1).sum()", 3),
    ("[1, 3].min()", 1), ("[1, 3].max()", 3), ("['b', 'a'].min()", "a"),
    ("[1, 2, 2].isSorted()", True), ("[2, 1].isSorted()", False), ("[].isSorted()", True),
])
def test_values(expression, expected):
    assert evaluate(expression) == expected


@pytest.mark.parametrize(("expression", "error"), [
    ("[9223372036854775807, 1].sum()", "integer overflow"),
    ("[].min()", ""), ("[].max()", ""),
])
def test_errors(expression, error):
    result = evaluate(expression)
    assert isinstance(result, celpy.CELEvalError), result
    assert error in str(result.args[0])
