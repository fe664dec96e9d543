"""Pruning (unknown fields dropped) and structural defaulting, as apiextensions does before validation."""

from __future__ import annotations

from typing import Any

from .compiled import Node
from .field_errors import ABSENT, RESOURCE_FIELDS

# --- pruning and defaulting ---------------------------------------------------------------------


def _prune(value: Any, node: Node, path: str, dropped: list[str]) -> None:
    if isinstance(value, dict):
        prune_object(value, node, RESOURCE_FIELDS if node.embedded else frozenset(), path, dropped)
    elif isinstance(value, list) and node.items is not None:
        for i, item in enumerate(value):
            _prune(item, node.items, f"{path}[{i}]", dropped)


def prune_object(obj: dict, node: Node, kept: frozenset[str], path: str, dropped: list[str]) -> None:
    extra = node.additional
    keeps_unknown = node.preserve_unknown or extra is True
    for key in list(obj):
        if key in kept:
            continue
        child = node.properties.get(key) or (extra if isinstance(extra, Node) else None)
        child_path = f"{path}.{key}" if path else key
        if child is None:
            if not keeps_unknown:
                del obj[key]
                dropped.append(child_path)
        elif obj[key] is None and not child.nullable and child.default is ABSENT:
            del obj[key]
        else:
            _prune(obj[key], child, child_path, dropped)


def default_value(value: Any, node: Node) -> None:
    """structuraldefaulting.Default: defaults land before recursing, so defaults get defaulted too."""
    if isinstance(value, dict):
        _default_object(value, node)
    elif isinstance(value, list) and node.items is not None:
        items = node.items
        for index, item in enumerate(value):
            if _needs_default(item, items):
                value[index] = item = _copy_json(items.default)
            if items.has_defaults:
                default_value(item, items)


def _default_object(obj: dict, node: Node) -> None:
    for key, prop in node.properties.items():
        if _needs_default(obj.get(key, ABSENT), prop):
            obj[key] = _copy_json(prop.default)
    extra = node.additional if isinstance(node.additional, Node) else None
    for key, value in obj.items():
        child: Node | None = node.properties.get(key)
        if child is None and extra is not None:
            child = extra
            if _needs_default(value, extra):
                obj[key] = value = _copy_json(extra.default)
        if child is not None and child.has_defaults:
            default_value(value, child)


def _needs_default(value: Any, node: Node) -> bool:
    """Absent, or null where null is not allowed, and the schema has a default."""
    return node.default is not ABSENT and (value is ABSENT or (value is None and not node.nullable))


def _copy_json(value: Any) -> Any:
    """A copy of a default value, so objects never share it with the schema."""
    if isinstance(value, dict):
        return {key: _copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_json(item) for item in value]
    return value


