"""The mutants of one module: every place an operator below changes what a function decides.

A mutant is (node index in `ast.walk` order, operator, argument): applying it to a fresh parse of the same
source gives the same change every time, so a mutant can be described in the parent and applied in a child.
Only code inside functions is mutated (module and class bodies run once at import: a code swap cannot reach
them); signatures, decorators and annotations are left alone for the same reason.

Operators (issue 33): comparisons (negated, and < <= > >= moved by one), `and`/`or` swapped and each operand
dropped, `not` removed, integer constants +1/-1, + and - swapped, True/False swapped, `return x` -> `return
None`, a statement removed (replaced by `pass`), an if/while/ternary condition replaced by True and by False.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

COMPARE = {
    ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,),
    ast.Lt: (ast.LtE, ast.GtE), ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE), ast.GtE: (ast.Gt, ast.Lt),
    ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
    ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
}
OPERATOR_TEXT = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
                 ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass(frozen=True)
class Mutant:
    path: str          # the module's file, relative to the repository
    index: int         # the node's position in ast.walk(tree)
    operator: str
    argument: object
    line: int
    function: tuple[str, int]  # (co_qualname, co_firstlineno) of the outermost function around the change
    description: str

    @property
    def ident(self) -> str:
        return f"{self.path}:{self.line}:{self.index}:{self.operator}:{self.argument}"


def parse(source: str, path: str) -> ast.Module:
    return ast.parse(source, filename=path)


def mutants(source: str, path: str) -> list[Mutant]:
    tree = parse(source, path)
    nodes = list(ast.walk(tree))
    parents = _parents(tree)
    outer = _outermost_functions(tree)
    skipped = _untouchable(tree)
    found = []
    for index, node in enumerate(nodes):
        function = outer.get(id(node))
        if function is None or id(node) in skipped:
            continue
        for operator, argument, text in _operators(node, parents.get(id(node)), source):
            line = getattr(node, "lineno", 0)
            found.append(Mutant(path, index, operator, argument, line, function, text))
    return found


def apply(tree: ast.Module, mutant: Mutant) -> ast.Module:
    """The tree with `mutant` applied (a copy; `tree` is a fresh parse of the mutant's source)."""
    tree = copy.deepcopy(tree)
    node = list(ast.walk(tree))[mutant.index]
    parent = _parents(tree)[id(node)]
    operator, argument = mutant.operator, mutant.argument
    if operator == "compare":
        position, new = argument
        node.ops[position] = getattr(ast, new)()
    elif operator == "boolop":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif operator == "drop_operand":
        rest = [value for i, value in enumerate(node.values) if i != argument]
        _replace(parent, node, rest[0] if len(rest) == 1 else ast.BoolOp(op=node.op, values=rest))
    elif operator == "not":
        _replace(parent, node, node.operand)
    elif operator == "int":
        node.value += argument
    elif operator == "bool":
        node.value = not node.value
    elif operator == "binop":
        node.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
    elif operator == "return_none":
        node.value = None
    elif operator == "remove":
        _replace(parent, node, ast.Pass())
    elif operator == "condition":
        node.test = ast.Constant(value=argument)
    else:
        raise ValueError(operator)
    return ast.fix_missing_locations(_locate(tree))


def _operators(node, parent, source):
    """(operator, argument, description) for each mutant of `node`."""
    if isinstance(node, ast.Compare):
        for position, op in enumerate(node.ops):
            for new in COMPARE.get(type(op), ()):
                yield "compare", (position, new.__name__), f"{OPERATOR_TEXT[type(op)]} -> {OPERATOR_TEXT[new]}"
    elif isinstance(node, ast.BoolOp):
        name, other = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        yield "boolop", None, f"{name} -> {other}"
        for i, value in enumerate(node.values):
            yield "drop_operand", i, f"drop `{_text(source, value)}` from `{name}`"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "not", None, f"not {_text(source, node.operand)} -> {_text(source, node.operand)}"
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        yield "int", 1, f"{node.value} -> {node.value + 1}"
        yield "int", -1, f"{node.value} -> {node.value - 1}"
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        yield "bool", None, f"{node.value} -> {not node.value}"
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        yield "binop", None, "+ -> -" if isinstance(node.op, ast.Add) else "- -> +"
    if isinstance(node, ast.Return) and node.value is not None and not _is_none(node.value):
        yield "return_none", None, f"return {_text(source, node.value)} -> return None"
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        for value in (True, False):
            yield "condition", value, f"condition `{_text(source, node.test)}` -> {value}"
    if isinstance(node, ast.stmt) and _removable(node, parent):
        yield "remove", None, f"remove `{_first_line(source, node)}`"


def _removable(node, parent) -> bool:
    if isinstance(node, (ast.Pass, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Global, ast.Nonlocal)):
        return False
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):  # docstrings, `...`
        return False
    return parent is not None


def _untouchable(tree) -> set[int]:
    """Nodes a code swap cannot change, or that only annotate: signatures, decorators, annotations."""
    skipped = set()

    def skip(node):
        if node is not None:
            skipped.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            skip(node.args)
            skip(node.returns)
            for decorator in node.decorator_list:
                skip(decorator)
        elif isinstance(node, ast.Lambda):
            skip(node.args)
        elif isinstance(node, ast.AnnAssign):
            skip(node.annotation)
        elif isinstance(node, ast.arg):
            skip(node.annotation)
    return skipped


def _outermost_functions(tree) -> dict[int, tuple[str, int]]:
    """id(node) -> (qualname, first line) of the outermost function containing it (its code object is swapped)."""
    inside: dict[int, tuple[str, int]] = {}

    def visit(node, scope: list[str], current):
        for child in ast.iter_child_nodes(node):
            key = current
            if current is None and isinstance(child, FUNCTIONS):
                name = "<lambda>" if isinstance(child, ast.Lambda) else child.name
                first = min([child.lineno] + [d.lineno for d in getattr(child, "decorator_list", ())])
                key = (".".join([*scope, name]), first)
                _mark(child, key, inside)
                continue
            if current is not None:
                inside[id(child)] = current
            visit(child, [*scope, child.name] if isinstance(child, ast.ClassDef) else scope, key)

    visit(tree, [], None)
    return inside


def _mark(function, key, inside):
    for body in (function.body if isinstance(function.body, list) else [function.body]):
        for node in ast.walk(body):
            inside[id(node)] = key


def _parents(tree) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _replace(parent, old, new):
    ast.copy_location(new, old)
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return
        if isinstance(value, list) and any(item is old for item in value):
            value[next(i for i, item in enumerate(value) if item is old)] = new
            return
    raise ValueError("node not under its parent")


def _locate(tree):
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            if not hasattr(child, "lineno") and hasattr(node, "lineno") and "lineno" in child._attributes:
                ast.copy_location(child, node)
    return tree


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _text(source, node) -> str:
    text = ast.get_source_segment(source, node) or ast.unparse(node)
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def _first_line(source, node) -> str:
    return _text(source, node).split("\n")[0]
