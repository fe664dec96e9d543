"""CEL expressions as cel-go's checker and cost estimator see them: an AST of idents, selects, calls,
literals and comprehensions, with the macros (`has`, `all`, `exists`, `exists_one`, `map`, `filter`)
expanded as cel-go's parser expands them (parser/macro.go), and operators as their function names
(`_==_`, `_&&_`, `_?_:_`, `_[_]`, `@in`, ...).

Built from cel-python's parse tree, so what parses here is what localcluster's evaluator accepts.
Every node keeps the offset of the token cel-go reports errors at (an identifier's start, a select's
`.`, a call's `(`), for error messages in cel-go's form.
"""

from __future__ import annotations

import codecs
import functools
import re
from dataclasses import dataclass, field
from typing import Any

from celpy import celparser
from lark import Token, Tree

ACCUMULATOR = "@result"  # parser.AccumulatorName: the accumulator of every macro comprehension


class CelSyntaxError(ValueError):
    pass


@dataclass(eq=False)
class Expr:
    """One node. kind: literal, ident, select, call, list, map, struct or comprehension."""

    kind: str
    offset: int = 0
    value: Any = None  # literal: the value; ident: the name; select: the field; call: the function
    literal_type: str = ""  # literal: int, uint, double, string, bytes, bool or null
    operand: Expr | None = None  # select's operand
    test_only: bool = False  # select: has()
    target: Expr | None = None  # call: the receiver of a member call
    args: list[Expr] = field(default_factory=list)  # call: arguments; list: elements
    entries: list[tuple[Expr, Expr]] = field(default_factory=list)  # map literal
    # comprehension
    iter_var: str = ""
    iter_range: Expr | None = None
    accu_var: str = ""
    accu_init: Expr | None = None
    loop_condition: Expr | None = None
    loop_step: Expr | None = None
    result: Expr | None = None

    def children(self) -> list[Expr]:
        parts = [self.operand, self.target, *self.args, *(x for entry in self.entries for x in entry),
                 self.iter_range, self.accu_init, self.loop_condition, self.loop_step, self.result]
        return [part for part in parts if part is not None]


def part(node: Expr | None) -> Expr:
    """A part its kind always has (a select's operand; a comprehension's range, accumulator, loop and result):
    the builder sets them all."""
    if node is None:
        raise CelSyntaxError("incomplete expression")
    return node


_PARSER = None


@functools.lru_cache(maxsize=512)
def parse(text: str) -> Expr:
    """The AST of `text` (shared: callers must not change it); CelSyntaxError with cel-python's message
    when it does not parse."""
    global _PARSER
    if _PARSER is None:
        _PARSER = celparser.CELParser()
    try:
        tree = _PARSER.parse(text)
    except Exception as err:  # lark's UnexpectedInput and celpy's CELParseError
        raise CelSyntaxError(" ".join(str(err).split())) from err
    return _Builder(text).expr(tree)


_BINARY = {"relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
           "relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in", "addition_add": "_+_",
           "addition_sub": "_-_", "multiplication_mul": "_*_", "multiplication_div": "_/_",
           "multiplication_mod": "_%_"}


def _end(node: Tree | Token) -> int:
    """Where the text of a subtree ends (its right-most token's end)."""
    while isinstance(node, Tree) and node.children:
        node = node.children[-1]
    return (node.end_pos or 0) if isinstance(node, Token) else 0


def _token(node: Tree | Token) -> Token:
    """A node the grammar makes a token (a name, a literal)."""
    if not isinstance(node, Token):
        raise CelSyntaxError(f"expected a token, got {node.data}")
    return node


def _offset(node: Tree | Token) -> int:
    if isinstance(node, Token):
        return node.start_pos or 0
    for token in node.scan_values(lambda value: isinstance(value, Token)):
        return token.start_pos or 0
    return 0


class _Builder:
    def __init__(self, text: str) -> None:
        self.text = text

    def call(self, function: str, args: list[Expr], offset: int, target: Expr | None = None) -> Expr:
        return Expr("call", offset, value=function, target=target, args=args)

    def expr(self, tree: Tree) -> Expr:
        return getattr(self, "_" + tree.data)(tree)

    def _expr(self, tree: Tree) -> Expr:
        if len(tree.children) == 1:
            return self.expr(tree.children[0])
        condition, true, false = (self.expr(child) for child in tree.children)
        return self.call("_?_:_", [condition, true, false], self._operator_offset(tree.children[0], "?"))

    def _operator_offset(self, left: Tree, operator: str) -> int:
        """Where cel-go puts an operator's node: at the operator token, found after its left operand."""
        end = _end(left)
        found = self.text.find(operator, end)
        return found if found >= 0 else end

    def _logical(self, tree: Tree, function: str, operator: str) -> Expr:
        if len(tree.children) == 1:
            return self.expr(tree.children[0])
        left, right = tree.children
        return self.call(function, [self.expr(left), self.expr(right)], self._operator_offset(left, operator))

    def _conditionalor(self, tree: Tree) -> Expr:
        return self._logical(tree, "_||_", "||")

    def _conditionaland(self, tree: Tree) -> Expr:
        return self._logical(tree, "_&&_", "&&")

    def _binary(self, tree: Tree) -> Expr:
        if len(tree.children) == 1:
            return self.expr(tree.children[0])
        operator, right = tree.children
        left = operator.children[0]
        symbol = {"_<_": "<", "_<=_": "<=", "_>_": ">", "_>=_": ">=", "_==_": "==", "_!=_": "!=", "@in": "in",
                  "_+_": "+", "_-_": "-", "_*_": "*", "_/_": "/", "_%_": "%"}[_BINARY[operator.data]]
        return self.call(_BINARY[operator.data], [self.expr(left), self.expr(right)],
                         self._operator_offset(left, symbol))

    _relation = _addition = _multiplication = _binary

    def _unary(self, tree: Tree) -> Expr:
        if len(tree.children) == 1:
            return self.expr(tree.children[0])
        operator, operand = tree.children
        function = "!_" if operator.data == "unary_not" else "-_"
        return self.call(function, [self.expr(operand)], _offset(operand) - 1)

    def _member(self, tree: Tree) -> Expr:
        return self.expr(tree.children[0])

    def _primary(self, tree: Tree) -> Expr:
        return self.expr(tree.children[0])

    def _paren_expr(self, tree: Tree) -> Expr:
        return self.expr(tree.children[0])

    def _ident(self, tree: Tree) -> Expr:
        token = _token(tree.children[0])
        return Expr("ident", token.start_pos or 0, value=str(token))

    def _dot_ident(self, tree: Tree) -> Expr:
        token = _token(tree.children[0])
        return Expr("ident", (token.start_pos or 1) - 1, value="." + str(token))

    def _args(self, children: list) -> list[Expr]:
        lists = [child for child in children if isinstance(child, Tree) and child.data == "exprlist"]
        return [self.expr(child) for child in lists[0].children] if lists else []

    def _ident_arg(self, tree: Tree) -> Expr:
        token = _token(tree.children[0])
        args = self._args(tree.children[1:])
        offset = (token.end_pos or 0)  # the `(`
        if str(token) == "has" and len(args) == 1:
            return self._has(args[0], offset)
        return self.call(str(token), args, offset)

    def _dot_ident_arg(self, tree: Tree) -> Expr:
        token = _token(tree.children[0])
        return self.call("." + str(token), self._args(tree.children[1:]), token.end_pos or 0)

    def _has(self, arg: Expr, offset: int) -> Expr:
        if arg.kind != "select":
            raise CelSyntaxError("invalid argument to has() macro")
        return Expr("select", offset, value=arg.value, operand=arg.operand, test_only=True)

    def _member_dot(self, tree: Tree) -> Expr:
        operand, name = tree.children[0], _token(tree.children[1])
        return Expr("select", (name.start_pos or 1) - 1, value=str(name), operand=self.expr(operand))

    def _member_dot_arg(self, tree: Tree) -> Expr:
        operand, name = tree.children[0], _token(tree.children[1])
        args = self._args(tree.children[2:])
        offset = name.end_pos or 0
        target = self.expr(operand)
        macro = _MACROS.get((str(name), len(args)))
        if macro is not None:
            if args[0].kind != "ident":
                raise CelSyntaxError(f"{name}() variable name must be a simple identifier")
            return macro(self, target, args[0].value, args[1:], offset)
        return self.call(str(name), args, offset, target=target)

    def _member_index(self, tree: Tree) -> Expr:
        operand, index = tree.children
        return self.call("_[_]", [self.expr(operand), self.expr(index)], _offset(index) - 1)

    def _member_object(self, tree: Tree) -> Expr:
        operand = tree.children[0]
        node = Expr("struct", _offset(tree), value=self.expr(operand))
        inits = tree.children[1].children if len(tree.children) > 1 else []
        node.entries = [(Expr("literal", _offset(name), value=str(name), literal_type="string"), self.expr(value))
                        for name, value in zip(inits[::2], inits[1::2], strict=True)]
        return node

    def _list_lit(self, tree: Tree) -> Expr:
        elements = [self.expr(child) for child in tree.children[0].children] if tree.children else []
        return Expr("list", _offset(tree), args=elements)

    def _map_lit(self, tree: Tree) -> Expr:
        inits = tree.children[0].children if tree.children else []
        entries = [(self.expr(k), self.expr(v)) for k, v in zip(inits[::2], inits[1::2], strict=True)]
        return Expr("map", _offset(tree), entries=entries)

    def _literal(self, tree: Tree) -> Expr:
        token = _token(tree.children[0])
        kind, text = token.type, str(token)
        offset = token.start_pos or 0
        if kind == "INT_LIT":
            return Expr("literal", offset, value=_integer(text), literal_type="int")
        if kind == "UINT_LIT":
            return Expr("literal", offset, value=_integer(text[:-1]), literal_type="uint")
        if kind == "FLOAT_LIT":
            return Expr("literal", offset, value=float(text), literal_type="double")
        if kind == "BOOL_LIT":
            return Expr("literal", offset, value=text == "true", literal_type="bool")
        if kind == "NULL_LIT":
            return Expr("literal", offset, value=None, literal_type="null")
        if kind == "BYTES_LIT":
            return Expr("literal", offset, value=_string_value(text[1:]).encode(), literal_type="bytes")
        return Expr("literal", offset, value=_string_value(text), literal_type="string")


def _integer(text: str) -> int:
    return int(text, 16) if "x" in text.lower() else int(text)  # decimals may have leading zeros: 010


def _string_value(text: str) -> str:
    raw = text[:1] in "rR"
    if raw:
        text = text[1:]
    quote = 3 if text[:3] in ('"""', "'''") else 1
    body = text[quote:-quote]
    if raw:
        return body
    return re.sub(r"\\(?:[abfnrtv\"'\\?`]|[0-7]{3}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})",
                  lambda m: codecs.decode(m.group(0), "unicode_escape"), body)


# --- macros, as cel-go's parser expands them ------------------------------------------------------


def _ident(name: str, offset: int) -> Expr:
    return Expr("ident", offset, value=name)


def _literal(value: Any, literal_type: str, offset: int) -> Expr:
    return Expr("literal", offset, value=value, literal_type=literal_type)


def _comprehension(target: Expr, var: str, init: Expr, condition: Expr, step: Expr, result: Expr,
                   offset: int) -> Expr:
    return Expr("comprehension", offset, iter_var=var, iter_range=target, accu_var=ACCUMULATOR, accu_init=init,
                loop_condition=condition, loop_step=step, result=result)


def _all(builder: _Builder, target: Expr, var: str, args: list[Expr], offset: int) -> Expr:
    accu = _ident(ACCUMULATOR, offset)
    condition = builder.call("@not_strictly_false", [_ident(ACCUMULATOR, offset)], offset)
    step = builder.call("_&&_", [accu, args[0]], offset)
    return _comprehension(target, var, _literal(True, "bool", offset), condition, step,
                          _ident(ACCUMULATOR, offset), offset)


def _exists(builder: _Builder, target: Expr, var: str, args: list[Expr], offset: int) -> Expr:
    negated = builder.call("!_", [_ident(ACCUMULATOR, offset)], offset)
    condition = builder.call("@not_strictly_false", [negated], offset)
    step = builder.call("_||_", [_ident(ACCUMULATOR, offset), args[0]], offset)
    return _comprehension(target, var, _literal(False, "bool", offset), condition, step,
                          _ident(ACCUMULATOR, offset), offset)


def _exists_one(builder: _Builder, target: Expr, var: str, args: list[Expr], offset: int) -> Expr:
    plus_one = builder.call("_+_", [_ident(ACCUMULATOR, offset), _literal(1, "int", offset)], offset)
    step = builder.call("_?_:_", [args[0], plus_one, _ident(ACCUMULATOR, offset)], offset)
    result = builder.call("_==_", [_ident(ACCUMULATOR, offset), _literal(1, "int", offset)], offset)
    return _comprehension(target, var, _literal(0, "int", offset), _literal(True, "bool", offset), step, result,
                          offset)


def _map(builder: _Builder, target: Expr, var: str, args: list[Expr], offset: int) -> Expr:
    function, predicate = args[-1], (args[0] if len(args) == 2 else None)
    step = builder.call("_+_", [_ident(ACCUMULATOR, offset), Expr("list", offset, args=[function])], offset)
    if predicate is not None:
        step = builder.call("_?_:_", [predicate, step, _ident(ACCUMULATOR, offset)], offset)
    return _comprehension(target, var, Expr("list", offset), _literal(True, "bool", offset), step,
                          _ident(ACCUMULATOR, offset), offset)


def _filter(builder: _Builder, target: Expr, var: str, args: list[Expr], offset: int) -> Expr:
    kept = Expr("list", offset, args=[_ident(var, offset)])
    step = builder.call("_?_:_", [args[0], builder.call("_+_", [_ident(ACCUMULATOR, offset), kept], offset),
                                  _ident(ACCUMULATOR, offset)], offset)
    return _comprehension(target, var, Expr("list", offset), _literal(True, "bool", offset), step,
                          _ident(ACCUMULATOR, offset), offset)


_MACROS = {("all", 2): _all, ("exists", 2): _exists, ("exists_one", 2): _exists_one, ("map", 2): _map,
           ("map", 3): _map, ("filter", 2): _filter}
