"""Pruning (unknown fields dropped) and structural defaulting, as apiextensions does before validation."""

from __future__ import annotations

from typing import Any

from .compiled import _Node
from .field_errors import _ABSENT, _RESOURCE_FIELDS

# --- pruning and defaulting ---------------------------------------------------------------------


def _prune(value: Any, node: _Node, path: str, dropped: list[str]) -> None:
    if isinstance(value, dict):
        _prune_object(value, node, _RESOURCE_FIELDS if node.embedded else frozenset(), path, dropped)
    elif isinstance(value, list) and node.items is not None:
        for i, item in enumerate(value):
            _prune(item, node.items, f"{path}[{i}]", dropped)


def _prune_object(obj: dict, node: _Node, kept: frozenset[str], path: str, dropped: list[str]) -> None:
    extra = node.additional
    keeps_unknown = node.preserve_unknown or extra is True
    for key in list(obj):
        if key in kept:
            continue
        child = node.properties.get(key) or (extra if isinstance(extra, _Node) else None)
        child_path = f"{path}.{key}" if path else key
        if child is None:
            if not keeps_unknown:
                del obj[key]
                dropped.append(child_path)
        elif obj[key] is None and not child.nullable and child.default is _ABSENT:
            del obj[key]
        else:
            _prune(obj[key], child, child_path, dropped)


def _default(value: Any, node: _Node) -> None:
    """structuraldefaulting.Default: defaults land before recursing, so defaults get defaulted too."""
    if isinstance(value, dict):
        _default_object(value, node)
    elif isinstance(value, list) and node.items is not None:
        items = node.items
        for index, item in enumerate(value):
            if _needs_default(item, items):
                value[index] = item = _copy_json(items.default)
            if items.has_defaults:
                _default(item, items)


def _default_object(obj: dict, node: _Node) -> None:
    for key, prop in node.properties.items():
        if _needs_default(obj.get(key, _ABSENT), prop):
            obj[key] = _copy_json(prop.default)
    extra = node.additional if isinstance(node.additional, _Node) else None
    for key, value in obj.items():
        child: _Node | None = node.properties.get(key)
        if child is None and extra is not None:
            child = extra
            if _needs_default(value, extra):
                obj[key] = value = _copy_json(extra.default)
        if child is not None and child.has_defaults:
            _default(value, child)


def _needs_default(value: Any, node: _Node) -> bool:
    """Absent, or null where null is not allowed, and the schema has a default."""
    return node.default is not _ABSENT and (value is _ABSENT or (value is None and not node.nullable))


def _copy_json(value: Any) -> Any:
    """A copy of a default value, so objects never share it with the schema."""
    if isinstance(value, dict):
        return {key: _copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_json(item) for item in value]
    return value


