"""Sets of field paths in the FieldsV1 encoding of `metadata.managedFields[].fieldsV1`.

A set is kept as the JSON tree the API shows (sigs.k8s.io/structured-merge-diff's fieldpath.Set
serialised), so stored entries need no decoding: each key is a path element, `f:<name>` (a field),
`k:{...}` (a list item by its key fields), `v:<json>` (a set item by value) or `i:<n>` (an index);
its value is the subtree under it. A node is a member of the set (a path owned as such) when it
is `{}` or holds `"."`. A set is the root's children: the root itself is never a member.

The trees are never changed in place (stored objects are shared snapshots): every operation
returns new dicts where something changed and reuses the input's subtrees where nothing did.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

MEMBER = "."
EMPTY: dict = {}

# --- path elements ------------------------------------------------------------------------------


def field_element(name: str) -> str:
    return "f:" + name


def _json(value: Any) -> str:
    # Go's encoder escapes <, > and & (jsoniter's standard-library mode does the same).
    text = orjson.dumps(value).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def key_element(fields: dict) -> str:
    """An associative list item by its key fields (sorted by name, as the server writes them)."""
    return "k:" + _json(dict(sorted(fields.items())))


def value_element(value: Any) -> str:
    return "v:" + _json(value)


def _value_order(value: Any) -> tuple:
    """structured-merge-diff's total order of values: numbers, strings, booleans, lists, maps, null."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(_value_order(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k, _value_order(v)) for k, v in sorted(value.items())))
    return (5,)


def element_order(element: str) -> tuple:
    """Members first (`.`), then fields by name, list keys, set values, indexes: fieldpath's order."""
    if element == MEMBER:
        return (0,)
    kind, body = element[0], element[2:]
    if kind == "f":
        return (1, body)
    if kind == "k":
        return (2, tuple((k, _value_order(v)) for k, v in orjson.loads(body).items()))
    if kind == "v":
        return (3, _value_order(orjson.loads(body)))
    return (4, int(body))


def element_string(element: str) -> str:
    """An element as fieldpath.Path.String() prints it: `.name`, `[key="v",k2=1]`, `[="v"]`, `[0]`."""
    kind, body = element[0], element[2:]
    if kind == "f":
        return "." + body
    if kind == "k":
        return "[" + ",".join(f"{k}={_go_string(v)}" for k, v in orjson.loads(body).items()) + "]"
    if kind == "v":
        return f"[={_go_string(orjson.loads(body))}]"
    return f"[{body}]"


def _go_string(value: Any) -> str:
    """value.ToString: strings quoted (%q), the rest as Go prints them."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if isinstance(value, list):
        return "[" + ",".join(_go_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "".join(f"{k}={_go_string(v)}" for k, v in value.items())
    return str(value)


def path_string(path: tuple[str, ...]) -> str:
    return "".join(element_string(element) for element in path)


# --- sharing ------------------------------------------------------------------------------------

_interned: dict[bytes, dict] = {}
_INTERNED_LIMIT = 4096


def interned(s: dict) -> dict:
    """One shared copy of each distinct set: objects made from one template (a job's pods, their
    statuses) then hold one tree between them instead of a tree each, which the cyclic GC would walk."""
    if not s:
        return s
    key = orjson.dumps(s)
    found = _interned.get(key)
    if found is None:
        if len(_interned) >= _INTERNED_LIMIT:
            _interned.clear()
        found = _interned[key] = s
    return found


# --- set algebra ---------------------------------------------------------------------------------


def is_member(node: dict) -> bool:
    return not node or MEMBER in node


def make_node(member: bool, below: dict) -> dict | None:
    """A node from its parts (its children, without "."), None when it holds nothing."""
    if not below:
        return {} if member else None
    return {MEMBER: EMPTY, **below} if member else below


def children(node: dict) -> dict:
    return {k: v for k, v in node.items() if k != MEMBER} if MEMBER in node else node


def union(a: dict, b: dict) -> dict:
    """Every path of either set."""
    if not a:
        return b
    if not b:
        return a
    return _merged(a, b)


def _merged(a: dict, b: dict) -> dict:
    """Both nodes' contents (nodes that hold something, "." included)."""
    out = None
    added = False
    for element, b_node in b.items():
        a_node = a.get(element)
        if a_node is None:
            out = out if out is not None else dict(a)
            out[element] = b_node
            added = True
        elif a_node is not b_node and element != MEMBER:
            joined = _node_union(a_node, b_node)
            if joined is not a_node:
                out = out if out is not None else dict(a)
                out[element] = joined
    if out is None:
        return a
    return sorted_node(out) if added else out


def _node_union(a: dict, b: dict) -> dict:
    if not a:  # a member without children
        return b if not b or MEMBER in b else {MEMBER: EMPTY, **b}
    if not b:
        return a if MEMBER in a else {MEMBER: EMPTY, **a}
    return _merged(a, b)


def difference(a: dict, b: dict) -> dict:
    """The paths of `a` that are not in `b` (a member of `b` does not take away `a`'s children)."""
    if not a or not b:
        return a
    return _subtracted(a, b)


def _subtracted(a: dict, b: dict) -> dict:
    out = None
    for element, b_node in b.items():
        a_node = a.get(element)
        if a_node is None:
            continue
        remaining = None if element == MEMBER else _node_difference(a_node, b_node)
        if remaining is a_node:
            continue
        out = out if out is not None else dict(a)
        if remaining is None:
            del out[element]
        else:
            out[element] = remaining
    return a if out is None else out


def _node_difference(a: dict, b: dict) -> dict | None:
    if not a:  # a member without children
        return None if is_member(b) else a
    if not b:  # b takes away a's membership only
        return {k: v for k, v in a.items() if k != MEMBER} if MEMBER in a else a
    out = _subtracted(a, b)
    if out is a:
        return a
    if not out:
        return None
    return EMPTY if len(out) == 1 and MEMBER in out else out


def intersection(a: dict, b: dict) -> dict:
    """The paths in both sets."""
    if not a or not b:
        return EMPTY
    return _common(a, b)


def _common(a: dict, b: dict) -> dict:
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    out = {}
    for element, s_node in small.items():
        l_node = large.get(element)
        if l_node is None:
            continue
        if element == MEMBER:
            out[MEMBER] = EMPTY
            continue
        if not s_node or not l_node:
            if is_member(s_node) and is_member(l_node):
                out[element] = EMPTY
            continue
        common = _common(s_node, l_node)
        if common:
            out[element] = EMPTY if len(common) == 1 and MEMBER in common else common
    return out


def without_fields(s: dict, names: tuple[str, ...]) -> dict:
    """`s` without whole top-level fields (those a write's strategy resets, e.g. status)."""
    elements = [field_element(name) for name in names]
    if not any(element in s for element in elements):
        return s
    return {k: v for k, v in s.items() if k not in elements}


def sorted_node(node: dict) -> dict:
    return {k: node[k] for k in sorted(node, key=element_order)}


def paths(s: dict, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every member path, in the set's order."""
    for element, node in s.items():
        if element == MEMBER:
            continue
        path = (*prefix, element)
        if is_member(node):
            yield path
        yield from paths(node, path)


def has(s: dict, path: tuple[str, ...]) -> bool:
    """Whether `path` is a member of `s`."""
    node = None
    for element in path:
        node = s.get(element)
        if node is None:
            return False
        s = node
    return node is not None and is_member(node)


def with_named_fields(s: dict, shape) -> dict:
    """`s` where every named (struct) field with something below it is a member too
    (EnsureNamedFieldsAreMembers): owning `.spec.replicas` then keeps `.spec` itself."""
    out = {}
    for element, node in s.items():
        if element == MEMBER:
            continue
        below = children(node)
        if element.startswith("f:"):
            child_shape, named = shape.field(element[2:])
        else:
            child_shape, named = shape.item(), False
        out[element] = make_node(is_member(node) or (named and bool(below)),
                                 with_named_fields(below, child_shape) if below else below)
    return out
