"""The mutant maker (tests/mutation/mutants.py): each operator changes what it says, only inside functions."""

from __future__ import annotations

import ast

from tests.mutation import mutants as mutation

SOURCE = '''
LIMIT = 3


def decide(count, flags):
    """A docstring is never removed."""
    if count < LIMIT and not flags:
        return count + 1
    return None
'''


def mutated(description: str) -> str:
    [mutant] = [m for m in mutation.mutants(SOURCE, "m.py") if m.description == description]
    return ast.unparse(mutation.apply(mutation.parse(SOURCE, "m.py"), mutant))


def test_only_function_bodies_are_mutated_and_never_a_docstring():
    found = mutation.mutants(SOURCE, "m.py")
    assert {m.function for m in found} == {("decide", 5)}
    assert not [m for m in found if "docstring" in m.description]


def test_each_operator_changes_what_it_says():
    assert "count <= LIMIT" in mutated("< -> <=")
    assert "count < LIMIT or not flags" in mutated("and -> or")
    assert "count < LIMIT and flags" in mutated("not flags -> flags")
    assert "return count + 2" in mutated("1 -> 2")
    assert "return count - 1" in mutated("+ -> -")
    assert "if True:" in mutated("condition `count < LIMIT and not flags` -> True")
    assert "        return\n    return None" in mutated("return count + 1 -> return None")


def test_a_mutant_applied_to_a_fresh_parse_compiles():
    tree = mutation.parse(SOURCE, "m.py")
    for mutant in mutation.mutants(SOURCE, "m.py"):
        compile(mutation.apply(tree, mutant), "m.py", "exec")
