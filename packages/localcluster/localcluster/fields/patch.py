"""The three PATCH flavours of the Kubernetes API, on plain JSON dicts.

- ``json_merge_patch``: RFC 7386 (application/merge-patch+json).
- ``json_patch``: RFC 6902 (application/json-patch+json), via the ``jsonpatch`` library.
- ``strategic_merge_patch``: application/strategic-merge-patch+json, following
  k8s.io/apimachinery/pkg/util/strategicpatch (StrategicMergePatch) for the kinds this
  server knows, with the list merge keys of the Go API types' struct tags (patch_tags.py).

Inputs are never mutated: each function patches a private copy of the target and builds
new containers for whatever it takes from the patch, so the result shares nothing with
either input.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import jsonpatch
import jsonpointer
import orjson

from .patch_tags import KIND_SCHEMAS, META_ONLY, NO_METADATA, PatchField, PatchSchema

__all__ = ["PatchError", "json_merge_patch", "json_patch", "strategic_merge_patch"]


class PatchError(ValueError):
    """The patch is malformed or cannot be applied to the object."""


def _copy_json(value: Any) -> Any:
    # An orjson round trip copies a JSON tree about 9x faster than copy.deepcopy.
    return orjson.loads(orjson.dumps(value))


# --- RFC 7386 ---------------------------------------------------------------------------


def json_merge_patch(target: dict, patch: dict) -> dict:
    """Objects merge recursively, ``null`` deletes a key, anything else (lists too) replaces."""
    if not isinstance(patch, dict):
        raise PatchError("a merge patch must be a JSON object")
    return _merge_patch_into(_copy_json(target), patch)


def _merge_patch_into(target: dict, patch: dict) -> dict:
    """Apply ``patch`` to ``target``, which is ours to modify."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            target[key] = _merge_patch_into(current if isinstance(current, dict) else {}, value)
        else:
            target[key] = _copy_json(value) if isinstance(value, list) else value
    return target


# --- RFC 6902 ---------------------------------------------------------------------------


def json_patch(target: dict, ops: list) -> dict:
    """Apply a list of RFC 6902 operations; a failing ``test`` or a bad path raises PatchError."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a JSON array of operations")
    try:
        result = jsonpatch.JsonPatch(ops).apply(_copy_json(target), in_place=True)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
        raise PatchError(f"JSON patch failed: {exc}") from exc
    if not isinstance(result, dict):
        raise PatchError("a JSON patch must leave a JSON object")
    return result


# --- strategic merge patch: the merge ---------------------------------------------------

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ELEMENT_ORDER = "$setElementOrder"
_DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
_LIST_DIRECTIVE_PREFIXES = (_SET_ELEMENT_ORDER, _DELETE_FROM_PRIMITIVE_LIST)


class _Deleted:
    """What merging a ``{"$patch": "delete"}`` object yields: the key goes away."""


_DELETED = _Deleted()


def strategic_merge_patch(target: dict, patch: dict, kind: str) -> dict:
    """Apply a strategic merge patch to an object of ``kind`` (e.g. "Pod").

    Kinds without an entry get the ObjectMeta rules only; elsewhere they behave like a
    JSON merge patch (lists replaced), with the patch directives still honoured.
    """
    if not isinstance(patch, dict):
        raise PatchError("a strategic merge patch must be a JSON object")
    result = _merge_map(_copy_json(target), patch, KIND_SCHEMAS.get(kind, META_ONLY))
    return {} if isinstance(result, _Deleted) else result


def _merge_map(original: dict, patch: Mapping, schema: PatchSchema) -> dict | _Deleted:
    """Merge ``patch`` into ``original``, which is ours to modify (Go's mergeMap).

    Unlike Go, a value that has nothing to merge with (a new key, a type change, a list
    that is replaced) is merged into an empty value instead of being stored raw: that way
    nested directives and nulls are applied and never end up in the stored object.
    """
    if _DIRECTIVE in patch:
        return _map_directive(patch, schema)
    _apply_retain_keys(original, patch)
    ordered = _apply_element_orders(original, patch, schema)
    for key, value in patch.items():
        if key in ordered or key == _RETAIN_KEYS or key.startswith(_SET_ELEMENT_ORDER):
            continue
        if key.startswith(_DELETE_FROM_PRIMITIVE_LIST):
            _delete_from_primitive_list(original, key, value)
        elif value is None:
            original.pop(key, None)
        else:
            merged = _merge_value(original.get(key), value, schema.get(key, NO_METADATA))
            if merged is _DELETED:
                original.pop(key, None)
            else:
                original[key] = merged
    return original


def _map_directive(patch: Mapping, schema: PatchSchema) -> dict | _Deleted:
    directive = patch[_DIRECTIVE]
    if directive == "replace":
        return _merge_map({}, {k: v for k, v in patch.items() if k != _DIRECTIVE}, schema)
    if directive == "delete":
        return _DELETED
    raise PatchError(f"unknown patch type: {directive} in map: {patch}")


def _merge_value(original: Any, patch: Any, meta: PatchField) -> Any:
    """Merge one patch value into the original value of the same key (which may be absent)."""
    if isinstance(patch, dict):
        return _merge_map(original if isinstance(original, dict) else {}, patch, meta.fields)
    if not isinstance(patch, list):
        return patch
    if meta.merge:
        return _merge_list(original if isinstance(original, list) else [], patch, meta)
    return _fresh_list(patch, meta)


def _fresh_list(items: list, meta: PatchField) -> list:
    """A replacing list, with its objects merged into nothing to apply their directives."""
    fresh = []
    for item in items:
        if isinstance(item, dict):
            value = _merge_map({}, item, meta.fields)
        else:
            value = _copy_json(item) if isinstance(item, list) else item
        if value is not _DELETED:
            fresh.append(value)
    return fresh


def _merge_list(original: list, patch: list, meta: PatchField) -> list:
    """Go's mergeSlice for a list with patch strategy "merge"."""
    if not original and not patch:
        return []
    if not _holds_objects(original, patch):
        # Primitives (e.g. finalizers) form an ordered set.
        merged = list(dict.fromkeys(original + patch))
        return _normalize_order(merged, patch, original, "")
    if not meta.merge_key:
        raise PatchError("cannot merge lists of objects without a merge key")
    original, patch, replace = _apply_list_directives(original, patch, meta.merge_key)
    if replace:
        return _fresh_list(patch, meta)
    merged = _merge_items(original, patch, meta)
    return _normalize_order(merged, patch, original, meta.merge_key)


def _holds_objects(*lists: list) -> bool:
    """Whether the lists hold objects rather than primitives; mixes and nested lists are errors."""
    kinds = {type(item) if isinstance(item, dict | list) else None for lst in lists for item in lst}
    if list in kinds:
        raise PatchError("lists of lists are not supported")
    if len(kinds) > 1:
        raise PatchError("list element types are not identical")
    return dict in kinds


def _apply_list_directives(original: list, patch: list, merge_key: str) -> tuple[list, list, bool]:
    """Handle ``$patch`` items: ``delete`` drops every original item with that key,
    ``replace`` means the plain patch items become the whole list.

    Returns the original without deleted items, the plain patch items, and whether to replace.
    """
    plain, replace = [], False
    for item in patch:
        if _DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[_DIRECTIVE]
        if directive == "delete":
            doomed = _identity(item, merge_key)
            original = [o for o in original if not (merge_key in o and o[merge_key] == doomed)]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(f"unknown patch type: {directive} in map: {item}")
    return original, plain, replace


def _merge_items(original: list, patch: list, meta: PatchField) -> list:
    """Merge each patch item into the original item with the same merge key, or append it."""
    merged = list(original)
    position = _first_positions(merged, meta.merge_key)
    for item in patch:
        identity = _identity(item, meta.merge_key)
        if identity in position:
            i = position[identity]
            merged[i] = _merge_map(merged[i], item, meta.fields)
        else:
            position[identity] = len(merged)
            merged.append(_merge_map({}, item, meta.fields))
    return merged


def _identity(item: Any, merge_key: str) -> Hashable:
    """What identifies a list item: its merge-key value, or the item itself for primitives."""
    if merge_key:
        if not isinstance(item, dict) or merge_key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {merge_key}")
        item = item[merge_key]
    if isinstance(item, dict | list):
        raise PatchError(f"cannot use {item} to identify a list item")
    return item


def _first_positions(items: list, merge_key: str) -> dict[Hashable, int]:
    """Identity -> index of its first occurrence (Go looks items up from the front)."""
    positions: dict[Hashable, int] = {}
    for i, item in enumerate(items):
        positions.setdefault(_identity(item, merge_key), i)
    return positions


def _normalize_order(merged: list, patch_order: list, live_order: list, merge_key: str) -> list:
    """Go's normalizeElementOrder: order the merged list like the patch says.

    Items named in ``patch_order`` take that order. The others (server-only items) keep
    their live order and are interleaved with them by live position: a server-only item
    goes before a patch item that comes after it in the live list. A patch item that is
    not in the live list has no position, so it goes before the server-only items that
    remain; that is why, as in Kubernetes, a new item lands at the front of the list
    when the patch gives no ``$setElementOrder``.
    """
    in_patch = _first_positions(patch_order, merge_key)
    live = _first_positions(live_order, merge_key)
    from_patch: list = []
    server_only: list = []
    for item in merged:
        (from_patch if _identity(item, merge_key) in in_patch else server_only).append(item)
    from_patch.sort(key=lambda item: in_patch[_identity(item, merge_key)])
    return _interleave(server_only, from_patch, live, merge_key)


def _interleave(server_only: list, from_patch: list, live: dict, merge_key: str) -> list:
    """Go's mergeSortedSlice: keep both sequences' order, using live positions to mix them."""
    result, i, j = [], 0, 0
    while i < len(server_only) and j < len(from_patch):
        left = live.get(_identity(server_only[i], merge_key))
        right = live.get(_identity(from_patch[j], merge_key))
        if left is not None and right is not None and left < right:
            result.append(server_only[i])
            i += 1
        else:
            result.append(from_patch[j])
            j += 1
    return result + server_only[i:] + from_patch[j:]


def _apply_retain_keys(original: dict, patch: Mapping) -> None:
    """``$retainKeys``: clear every original key not listed; the patch may only set listed keys."""
    if _RETAIN_KEYS not in patch:
        return
    retained = patch[_RETAIN_KEYS]
    if not isinstance(retained, list) or not all(isinstance(k, str) for k in retained):
        raise PatchError("invalid patch format of retainKeys")
    allowed = set(retained)
    for key, value in patch.items():
        if value is None or key == _RETAIN_KEYS or key.startswith(_LIST_DIRECTIVE_PREFIXES):
            continue
        if key not in allowed:
            raise PatchError("invalid patch: the retainKeys directive does not list every field in the patch")
    for key in [k for k in original if k not in allowed]:
        del original[key]


def _apply_element_orders(original: dict, patch: Mapping, schema: PatchSchema) -> set[str]:
    """``$setElementOrder/<list>``: merge that list now, then order it as given.

    kubectl apply sends the full desired order alongside only the changed items. Returns
    the list keys handled here, which the main merge loop must then skip.
    """
    handled = set()
    for key, order in patch.items():
        if not key.startswith(_SET_ELEMENT_ORDER):
            continue
        if not isinstance(order, list):
            raise PatchError("invalid patch format of setElementOrder list")
        list_key = _directive_target(key, _SET_ELEMENT_ORDER, "invalid patch format of setElementOrder list")
        if list_key not in original and list_key not in patch:
            continue
        live, changes = _list_or_none(original, list_key), _list_or_none(patch, list_key)
        meta = schema.get(list_key, NO_METADATA)
        _check_order_matches_patch(changes or [], order, meta.merge_key)
        merged = (live or []) if changes is None else _merge_value(live, changes, meta)  # no changes: the key is live
        original[list_key] = _normalize_order(merged, order, live or [], meta.merge_key)
        handled.add(list_key)
    return handled


def _list_or_none(container: Mapping, key: str) -> list | None:
    if key not in container:
        return None
    value = container[key]
    if not isinstance(value, list):
        raise PatchError(f"expected a list for {key}, but received {type(value).__name__}")
    return value


def _check_order_matches_patch(changes: list, order: list, merge_key: str) -> None:
    """The plain patch items must appear in ``$setElementOrder`` and in the same order."""
    if not order:  # Go skips the check then
        return
    wanted = [_identity(item, merge_key) for item in changes if not _is_directive_item(item)]
    remaining = iter([_identity(item, merge_key) for item in order])
    if not all(identity in remaining for identity in wanted):
        raise PatchError(f"the order in patch list {changes} doesn't match $setElementOrder list {order}")


def _is_directive_item(item: Any) -> bool:
    return isinstance(item, dict) and _DIRECTIVE in item


def _delete_from_primitive_list(original: dict, key: str, doomed: Any) -> None:
    """``$deleteFromPrimitiveList/<list>``: remove those values, whatever the list's strategy."""
    list_key = _directive_target(key, _DELETE_FROM_PRIMITIVE_LIST, "invalid patch format of primitive list")
    current = original.get(list_key)
    # As in Go, a missing list (or a type mismatch) leaves nothing to delete from.
    if isinstance(current, list) and isinstance(doomed, list):
        original[list_key] = [item for item in current if item not in doomed]


def _directive_target(key: str, prefix: str, error: str) -> str:
    """The list key named by a ``<prefix>/<list>`` directive key."""
    head, slash, target = key.partition("/")
    if not slash or head != prefix:
        raise PatchError(error)
    return target
