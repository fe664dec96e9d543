"""Server-side apply: PATCH with `application/apply-patch+yaml`, as kube-apiserver's field manager and
sigs.k8s.io/structured-merge-diff's Updater.Apply do it.

The applied configuration is merged into the live object (maps by key, associative lists by their
keys or values, everything else replaced); the applier then owns exactly the configuration's fields
(an `Apply` entry); fields it applied last time and no longer applies are removed unless another
manager owns them; fields whose values change leave their other owners, which is a conflict (409)
unless `force` is set. kubectl's own manager ("kubectl") may take over, without conflict, the fields
client-side apply recorded in the last-applied annotation, and keeps that annotation up to date.
"""

from __future__ import annotations

from typing import Any

import orjson

from .. import errors
from ..errors import ApiError
from ..storage.resources import ResourceType
from . import fieldsets, fieldshapes
from .fieldsets import field_element
from .managedfields import (
    APPLY,
    STRIPPED,
    UPDATE,
    Entry,
    Managed,
    SchemaError,
    compare,
    decode,
    encode,
    field_set,
    grouped_items,
    item_element,
    reset_fields,
    take_fields,
)

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
KUBECTL = "kubectl"  # the manager whose applies migrate client-side apply's fields
_ABSENT = object()


def apply(rt: ResourceType, live: dict | None, config: Any, manager: str, subresource: str | None, force: bool,
          now: str) -> dict:
    """The object once `config` is applied to `live` (None: the object does not exist yet), carrying its
    new managedFields. Raises ApiError (400 for a bad configuration, 409 for conflicts)."""
    _check(rt, config)
    shape = fieldshapes.root(rt)
    ignore = reset_fields(rt, subresource)
    current = _without_managed_fields(live) if live is not None else None
    managed = _entries(rt, live, current, shape, ignore, subresource, now)
    try:
        applied = fieldsets.difference(fieldsets.without_fields(field_set(config, shape, strict=True), ignore),
                                       STRIPPED)
        merged = _merge(current if current is not None else {}, config, shape)
    except SchemaError as err:
        raise _untyped(rt, config, err) from err
    previous = managed.get((manager, APPLY, "", subresource or ""))
    applier = Entry(manager, APPLY, rt.group_version, subresource or "", previous.time if previous else None,
                    applied)
    managed = {**managed, applier.identity: applier}
    if previous is not None:
        merged = _prune(merged, previous.fields, managed, shape)
    before = current if current is not None else fieldshapes.zero_object(rt)
    comparison = compare(before, merged, shape, ignore)
    if not force:
        conflicts = _conflicts(managed, applier, comparison.changed())
        if conflicts and manager == KUBECTL:
            conflicts = _not_in_last_applied(rt, conflicts, current, shape)
        if conflicts:
            raise errors.apply_conflict([(entry.printed(), fieldsets.path_string(path)) for entry, path in conflicts])
    managed = _others_lose(managed, applier, comparison)
    if merged != current:
        applier.time = now
    if not applier.fields:
        del managed[applier.identity]
    if manager == KUBECTL and current is not None and _annotations(current).get(LAST_APPLIED):
        merged = _with_last_applied(merged, config)
    result = dict(merged)
    result["metadata"] = dict(result.get("metadata") or {})
    encoded = encode(managed)
    if encoded is None:
        result["metadata"].pop("managedFields", None)
    else:
        result["metadata"]["managedFields"] = encoded
    return result


def _check(rt: ResourceType, config: Any) -> None:
    if not isinstance(config, dict):
        raise errors.bad_request("error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot "
                                 f"unmarshal {_go_type(config)} into Go value of type map[string]interface {{}}")
    # Read as unstructured.GetAPIVersion/GetKind read them: what is not a string is "".
    api_version, kind = (value if isinstance(value := config.get(key), str) else "" for key in ("apiVersion", "kind"))
    if (api_version, kind) != (rt.group_version, rt.kind):
        group, _, version = api_version.rpartition("/")
        raise errors.bad_request(f"invalid object type: {group}/{version}, Kind={kind}")
    if _metadata(config).get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    if not isinstance(config.get("metadata", {}), dict | None):
        # What the conversion to a typed value says of it (structured-merge-diff), before any field is compared.
        got = orjson.dumps(config["metadata"]).decode()
        raise _untyped(rt, config, SchemaError(f".metadata: expected map, got {got}"))


def _metadata(config: dict) -> dict:
    """`metadata` as unstructured's accessors read it: what is not a map has no fields (the schema refuses it)."""
    meta = config.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _go_type(value: Any) -> str:
    return {str: "string", list: "array", bool: "bool", type(None): "null"}.get(type(value), "number")


def _untyped(rt: ResourceType, config: dict, err: SchemaError) -> ApiError:
    """The configuration does not fit the schema (duplicate keys...): the server answers it as an error it
    did not expect, 500 with reason Unknown (kubernetes#118476)."""
    meta = _metadata(config)
    group, _, version = rt.group_version.rpartition("/")
    return ApiError(500, "Unknown", f"failed to create typed patch object ({meta.get('namespace') or ''}/"
                                    f"{meta.get('name') or ''}; {group}/{version}, Kind={rt.kind}): {err}")


def _without_managed_fields(obj: dict) -> dict:
    meta = obj.get("metadata") or {}
    if "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def _annotations(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _entries(rt: ResourceType, live: dict | None, current: dict | None, shape, ignore: tuple, subresource: str | None,
             now: str) -> Managed:
    """The live entries; an object that has none gets one for what is already there, "before-first-apply"
    (skipNonAppliedManager), so applying over it conflicts as over any other manager's fields."""
    if live is None or current is None:  # the one is None when the other is: a new object
        return {}
    managed = decode((live.get("metadata") or {}).get("managedFields")) or {}
    if managed:
        return managed
    try:
        existing = compare(fieldshapes.zero_object(rt), current, shape, ignore)
    except SchemaError:
        return {}
    starter = Entry("before-first-apply", UPDATE, rt.group_version, subresource or "", now, fieldsets.EMPTY)
    return take_fields({}, existing, starter, now)


def _conflicts(managed: Managed, applier: Entry, changed: dict) -> list[tuple[Entry, tuple]]:
    out = []
    for identity, entry in managed.items():
        if identity == applier.identity:
            continue
        out += [(entry, path) for path in fieldsets.paths(fieldsets.intersection(entry.fields, changed))]
    out.sort(key=lambda conflict: (conflict[0].printed(), conflict[1]))
    return out


def _others_lose(managed: Managed, applier: Entry, comparison) -> Managed:
    """Every other manager loses the fields whose values changed (taken over) and those removed."""
    changed, removed = comparison.changed(), comparison.removed
    out: Managed = {}
    for identity, entry in managed.items():
        if identity != applier.identity:
            kept = fieldsets.difference(fieldsets.difference(entry.fields, changed), removed)
            if not kept:
                continue
            if kept is not entry.fields:
                entry = Entry(entry.manager, entry.operation, entry.api_version, entry.subresource, entry.time, kept)
        out[identity] = entry
    return out


# --- kubectl's migration from client-side apply ---------------------------------------------------


def _not_in_last_applied(rt: ResourceType, conflicts: list, current: dict | None, shape) -> list:
    """Conflicts left once those on fields the last-applied annotation holds, with the live values, are
    allowed (lastAppliedManager): kubectl's first server-side apply takes over its client-side fields."""
    allowed = _last_applied_fields(rt, current, shape)
    if allowed is None:
        return conflicts
    return [(entry, path) for entry, path in conflicts if not fieldsets.has(allowed, path)]


def _last_applied_fields(rt: ResourceType, current: dict | None, shape) -> dict | None:
    text = _annotations(current).get(LAST_APPLIED) if current is not None else None
    if current is None or not text:
        return None
    try:
        last = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != rt.group_version:
        return None
    try:
        fields = field_set(last, shape)
        differs = compare(last, current, shape)
    except SchemaError:
        return None
    for gone in (differs.modified, differs.added, differs.removed):
        fields = fieldsets.difference(fields, gone)
    return fields


def _with_last_applied(merged: dict, config: dict) -> dict:
    """The annotation set to the configuration just applied (lastAppliedUpdater), as Go encodes it."""
    meta = dict(config.get("metadata") or {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    text = orjson.dumps({**config, "metadata": meta}, option=orjson.OPT_SORT_KEYS).decode()
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"
    merged_meta = dict(merged.get("metadata") or {})
    merged_meta["annotations"] = {**(merged_meta.get("annotations") or {}), LAST_APPLIED: text}
    return {**merged, "metadata": merged_meta}


# --- merging the configuration into the live object ---------------------------------------------


def _merge(live: Any, config: Any, shape) -> Any:
    """typed.Merge: the configuration's values win; maps and associative lists merge item by item."""
    if config is _ABSENT:
        return live
    if live is _ABSENT:
        return config
    if isinstance(live, dict) and isinstance(config, dict) and not shape.atomic and (live or config):
        out = dict(live)
        for key, value in config.items():
            out[key] = _merge(live.get(key, _ABSENT), value, shape.field(key)[0])
        return out
    if (isinstance(live, list) and isinstance(config, list) and shape.list_type != fieldshapes.ATOMIC
            and (live or config)):
        return _merge_lists(live, config, shape)
    return config


def _merge_lists(live: list, config: list, shape) -> list:
    """Live items keep their places; the configuration's items come in its order among them
    (mergingWalker.visitListItems)."""
    item_shape = shape.item()
    config_elements = [item_element(item, shape) for item in config]
    configured = dict(zip(config_elements, config, strict=True))
    live_elements = [item_element(item, shape) for item in live]
    live_items = {element: items[0] if len(items) == 1 else _ABSENT
                  for element, items in grouped_items(live, shape).items()}
    shared = iter([element for element in config_elements if element in live_items])
    next_shared = next(shared, None)
    merged_config: set[str] = set()
    out = []
    li = ri = 0
    while li < len(live_elements) or ri < len(config_elements):
        if li < len(live_elements) and ri < len(config_elements):
            element = live_elements[li]
            if element == config_elements[ri]:
                merged_config.add(element)
                out.append(_merge(live_items[element], configured[element], item_shape))
                li, ri = li + 1, ri + 1
                next_shared = next(shared, None)
                continue
            if element in configured and next_shared is not None and next_shared != element:
                li += 1
                continue
        if li < len(live_elements):
            element = live_elements[li]
            if element not in configured:
                out.append(live[li])
                li += 1
                continue
            if element in merged_config:
                li += 1
        if ri < len(config_elements):
            element = config_elements[ri]
            merged_config.add(element)
            out.append(_merge(live_items.get(element, _ABSENT), configured[element], item_shape))
            ri += 1
            if next_shared is not None and next_shared == element:
                next_shared = next(shared, None)
    return out


# --- pruning what the applier stopped applying ----------------------------------------------------


def _prune(merged: dict, last: dict, managed: Managed, shape) -> dict:
    """Remove what the applier applied last time and not now, unless someone (the applier's new
    configuration included) owns it (Updater.prune, addBackOwnedItems, addBackDanglingItems)."""
    owned: dict = {}
    for entry in managed.values():
        owned = fieldsets.union(owned, entry.fields)
    present = fieldsets.with_named_fields(field_set(merged, shape), shape)
    doomed = fieldsets.difference(fieldsets.intersection(present, fieldsets.with_named_fields(last, shape)),
                                  fieldsets.with_named_fields(owned, shape))
    return _remove(merged, doomed, shape) if doomed else merged


def _remove(value: Any, doomed: dict, shape) -> Any:
    """`value` without the members of `doomed` (typed.RemoveItems); a map or list emptied goes too."""
    if isinstance(value, dict) and not shape.atomic:
        out: dict = {}
        for key, child_value in value.items():
            node = doomed.get(field_element(key))
            if node is not None and fieldsets.is_member(node):
                continue
            if node is not None:
                child_value = _remove(child_value, fieldsets.children(node), shape.field(key)[0])
                if child_value in ({}, []):
                    continue
            out[key] = child_value
        return out
    if isinstance(value, list) and shape.list_type != fieldshapes.ATOMIC:
        item_shape = shape.item()
        items: list = []
        for item in value:
            node = doomed.get(item_element(item, shape))
            if node is not None and fieldsets.is_member(node):
                continue
            items.append(item if node is None else _remove(item, fieldsets.children(node), item_shape))
        return items
    return value
