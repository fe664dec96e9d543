"""`metadata.managedFields`: who set which field, kept on every write as kube-apiserver's field manager
(k8s.io/apimachinery/pkg/util/managedfields, sigs.k8s.io/structured-merge-diff) keeps it.

One entry per (manager, operation, apiVersion for updates, subresource). A create, update or
non-apply patch is an `Update`: the writer takes the fields the write added or changed (they leave
whoever had them), and fields the write removed leave every manager. Server-side apply (apply.py)
is the `Apply` operation. Work is proportional to what a write changed: equal subtrees of the old
and new object are skipped without being walked, and stored sets are shared, never copied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..storage.resources import ResourceType
from . import fieldsets, fieldshapes
from .fieldsets import EMPTY, field_element

UPDATE, APPLY = "Update", "Apply"
MAX_UPDATE_MANAGERS = 10  # more Update entries than this: the oldest merge into "ancient-changes"
_ABSENT = object()

# Never part of a field set (the field manager's stripMetaManager).
_STRIPPED_META = ("name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation",
                  "managedFields", "resourceVersion")
STRIPPED: dict[str, dict] = {"f:apiVersion": {}, "f:kind": {},
            "f:metadata": {".": {}, **{field_element(name): {} for name in _STRIPPED_META}}}


class SchemaError(ValueError):
    """A value that does not fit its schema: a list item without its key fields, and the like."""


# --- list items ---------------------------------------------------------------------------------


def item_element(item: Any, shape) -> str:
    """The path element of an item of an associative list (`k:` by its key fields, `v:` by value)."""
    keys = shape.keys
    if shape.list_type == fieldshapes.MAP and keys:
        if not isinstance(item, dict):
            raise SchemaError("associative list with keys may not have non-map elements")
        found = {}
        for key in keys:
            if key in item:
                found[key] = item[key]
            else:
                default = shape.key_default(key)
                if default is not None:
                    found[key] = default
        if not found:
            raise SchemaError(f"associative list with keys has an element that omits all key fields "
                              f"{_go_list(keys)} (and doesn't have default values for any key fields)")
        return fieldsets.key_element(found)
    if isinstance(item, dict):
        raise SchemaError("associative list without keys has an element that's a map type")
    if isinstance(item, list):
        raise SchemaError("not supported: associative list with lists as elements")
    if item is None:
        raise SchemaError("associative list without keys has an element that's an explicit null")
    return fieldsets.value_element(item)


def _go_list(keys: tuple[str, ...]) -> str:
    return "[" + " ".join(f'"{k}"' for k in keys) + "]"


def grouped_items(items: list, shape) -> dict[str, list]:
    """Items by path element, in first-seen order (duplicates kept together)."""
    out: dict[str, list] = {}
    for item in items:
        out.setdefault(item_element(item, shape), []).append(item)
    return out


# --- comparing two objects ----------------------------------------------------------------------
#
# The walks build sets directly in their stored form, one level at a time: a position answers its own
# node (or None), and its parent keeps the non-empty ones under their path elements, in order.


@dataclass(slots=True)
class Comparison:
    """Field sets of what the new object added, changed and removed (typed.Comparison)."""

    added: dict
    modified: dict
    removed: dict

    def changed(self) -> dict:
        return fieldsets.union(self.modified, self.added)


_NOTHING = (None, None, None)
_MODIFIED = (None, EMPTY, None)


def _compare_value(old: Any, new: Any, shape) -> tuple:
    """(added, modified, removed) nodes of one position; `_ABSENT` on a side that lacks it."""
    if old is new:
        return _NOTHING
    if old is _ABSENT:
        return _every_path(new, shape), None, None
    if new is _ABSENT:
        return None, None, _every_path(old, shape)
    if old == new:
        return _NOTHING
    # A null against a list or map is that container empty, as the typed walk reads it.
    if old is None and isinstance(new, dict | list):
        old = type(new)()
    elif new is None and isinstance(old, dict | list):
        new = type(old)()
    if isinstance(old, dict) and isinstance(new, dict) and not shape.atomic:
        return _compare_maps(old, new, shape, ())
    if isinstance(old, list) and isinstance(new, list) and shape.list_type != fieldshapes.ATOMIC and (old or new):
        return _compare_lists(old, new, shape)
    return _MODIFIED


def _compare_maps(old: dict, new: dict, shape, skip: tuple) -> tuple:
    field = shape.field
    if not old:  # all new (a create's metadata, say): no comparing to do
        added = {"f:" + key: _every_path(value, field(key)[0]) if type(value) in _CONTAINERS else EMPTY
                 for key, value in sorted(new.items()) if key not in skip}
        return added or None, None, None
    added, modified, removed = {}, {}, {}
    for key, new_value in new.items():
        old_value = old.get(key, _ABSENT)
        if old_value is new_value or key in skip or old_value == new_value:
            continue
        a, m, r = _compare_value(old_value, new_value, field(key)[0])
        if a is not None:
            added["f:" + key] = a
        if m is not None:
            modified["f:" + key] = m
        if r is not None:
            removed["f:" + key] = r
    for key, old_value in old.items():
        if key not in new and key not in skip:
            removed["f:" + key] = _every_path(old_value, field(key)[0])
    return _in_order(added), _in_order(modified), _in_order(removed)


def _in_order(node: dict) -> dict | None:
    if not node:
        return None
    return fieldsets.sorted_node(node) if len(node) > 1 else node


def _compare_lists(old: list, new: list, shape) -> tuple:
    item_shape = shape.item()
    olds, news = grouped_items(old, shape), grouped_items(new, shape)
    added, modified, removed = {}, {}, {}
    for element in sorted(olds.keys() | news.keys(), key=fieldsets.element_order):
        left, right = olds.get(element, ()), news.get(element, ())
        if len(left) <= 1 and len(right) <= 1:
            a, m, r = _compare_value(left[0] if left else _ABSENT, right[0] if right else _ABSENT, item_shape)
        elif len(left) >= 2 and len(right) >= 2:
            a, m, r = _MODIFIED if left != right else _NOTHING
        elif len(left) >= 2:  # no longer duplicated: the item is new, its duplicates are gone
            a, m, r = (_every_path(right[0], item_shape) if right else None), None, EMPTY
        else:  # duplicated now
            a, m, r = EMPTY, None, (_every_path(left[0], item_shape) if left else None)
        if a is not None:
            added[element] = a
        if m is not None:
            modified[element] = m
        if r is not None:
            removed[element] = r
    return added or None, modified or None, removed or None


def _every_path(value: Any, shape) -> dict:
    """The node of a value only one side has: it and everything below it, each a member."""
    kind = type(value)
    if kind is dict and value and not shape.atomic:
        node = {fieldsets.MEMBER: EMPTY}
        field = shape.field
        for key in sorted(value):
            child = value[key]
            node["f:" + key] = _every_path(child, field(key)[0]) if type(child) in _CONTAINERS else EMPTY
        return node
    if kind is list and value and shape.list_type != fieldshapes.ATOMIC:
        item_shape = shape.item()
        groups = grouped_items(value, shape)
        node = {fieldsets.MEMBER: EMPTY}
        for element in sorted(groups, key=fieldsets.element_order):
            items = groups[element]
            node[element] = _every_path(items[0], item_shape) if len(items) == 1 else EMPTY
        return node
    return EMPTY


_CONTAINERS = (dict, list)


def compare(old: dict, new: dict, shape, ignore: tuple[str, ...] = ()) -> Comparison:
    """What `new` changed in `old`, whole objects, leaving out what never belongs to a field set
    (apiVersion, kind, metadata's system fields) and the top-level fields in `ignore`."""
    added, modified, removed = _compare_maps(old, new, shape, ("apiVersion", "kind", "metadata", *ignore))
    old_meta, new_meta = old.get("metadata") or EMPTY, new.get("metadata") or EMPTY
    if old_meta is not new_meta:
        meta_added, meta_modified, meta_removed = _compare_maps(old_meta, new_meta, shape.field("metadata")[0],
                                                                _STRIPPED_META)
        added = _with_metadata(added, meta_added)
        modified = _with_metadata(modified, meta_modified)
        removed = _with_metadata(removed, meta_removed)
    return Comparison(added or EMPTY, modified or EMPTY, removed or EMPTY)


def _with_metadata(s: dict | None, node: dict | None) -> dict | None:
    """`s` with `f:metadata` in its sorted place."""
    if node is None:
        return s
    return fieldsets.sorted_node({**(s or {}), "f:metadata": node})


# --- the fields an object sets ------------------------------------------------------------------


def field_set(value: dict, shape, strict: bool = False) -> dict:
    """The fields of an object (typed.ToFieldSet): its leaves, list items, empty or null objects and map
    entries. `strict`, for an applied configuration: duplicate list items and fields the schema does not
    declare are errors, as the server's conversion to a typed value finds them."""
    return _object_fields(value, shape, strict, ())


def _object_fields(value: dict, shape, strict: bool, path: tuple) -> dict:
    out = {}
    for key in sorted(value):
        child_value = value[key]
        child, named = shape.field(key)
        element = field_element(key)
        if strict and not shape.declares(key):
            raise SchemaError(f"{fieldsets.path_string((*path, element))}: field not declared in schema")
        member = (child_value is None or child_value == {} or not named or _owned_whole(child_value, child)
                  or not isinstance(child_value, dict | list))
        node = fieldsets.make_node(member, _value_fields(child_value, child, strict, (*path, element)))
        if node is not None:
            out[element] = node
    return out


def _owned_whole(value: Any, shape) -> bool:
    return (isinstance(value, dict) and shape.atomic) or (isinstance(value, list) and
                                                           shape.list_type == fieldshapes.ATOMIC)


def _value_fields(value: Any, shape, strict: bool, path: tuple) -> dict:
    """The set below a value (its own membership is its parent's business)."""
    if isinstance(value, dict) and not shape.atomic:
        return _object_fields(value, shape, strict, path)
    if isinstance(value, list) and shape.list_type != fieldshapes.ATOMIC:
        item_shape = shape.item()
        groups = grouped_items(value, shape)
        out = {}
        for element in sorted(groups, key=fieldsets.element_order):
            items = groups[element]
            if len(items) > 1 and strict:
                raise SchemaError(f"{fieldsets.path_string(path)}: duplicate entries for key "
                                  f"{fieldsets.element_string(element)}")
            below = _value_fields(items[0], item_shape, strict, (*path, element)) if len(items) == 1 else EMPTY
            out[element] = fieldsets.make_node(True, below)
        return out
    return EMPTY


# --- entries ------------------------------------------------------------------------------------


@dataclass(slots=True)
class Entry:
    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str | None
    fields: dict
    stored: dict | None = None  # the stored entry it was read from, reused while unchanged

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """What tells entries apart (BuildManagerIdentifier): appliers are one entry across versions."""
        return (self.manager, self.operation, self.api_version if self.operation == UPDATE else "",
                self.subresource)

    def encoded(self) -> dict:
        if self.stored is not None:
            return self.stored
        out: dict[str, object] = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = self.fields
        if self.subresource:
            out["subresource"] = self.subresource
        return out

    def printed(self) -> str:
        """The manager as conflict messages name it (printManager)."""
        text = f'"{self.manager}"'
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        return text + (f" using {self.api_version}" if self.operation == UPDATE else "")


Managed = dict  # identity -> Entry


def decode(entries: Any, stored: bool = True) -> Managed | None:
    """Stored or requested (`stored` False: written anew) entries by identity; None when they are not
    valid entries."""
    if not isinstance(entries, list):
        return None
    out: Managed = {}
    for raw in entries:
        if not isinstance(raw, dict) or raw.get("operation") not in (APPLY, UPDATE):
            return None
        fields = raw.get("fieldsV1", EMPTY)
        if not raw.get("apiVersion") or raw.get("fieldsType") != "FieldsV1" or not isinstance(fields, dict):
            return None
        entry = Entry(raw.get("manager") or "", raw["operation"], raw["apiVersion"], raw.get("subresource") or "",
                      raw.get("time"), fields, raw if stored else None)
        out[entry.identity] = entry
    return out


def encode(managed: Managed) -> list[dict] | None:
    """The stored list, in the server's order: operation, time, manager, apiVersion, subresource."""
    if not managed:
        return None
    ordered = sorted(managed.values(), key=lambda e: (e.operation, e.time or "", e.manager, e.api_version,
                                                      e.subresource))
    return [entry.encoded() for entry in ordered]


def is_reset(requested: Any) -> bool:
    """`managedFields: []` or `[{}]` in a write: drop every entry (isResetManagedFields)."""
    return isinstance(requested, list) and (not requested or requested == [{}])


def reset_fields(rt: ResourceType, subresource: str | None) -> tuple[str, ...]:
    """Top-level fields the write's strategy resets, left out of its field sets (GetResetFields)."""
    if subresource == "status":
        return ("spec",)
    return ("status",) if rt.status_subresource else ()


# --- an Update ----------------------------------------------------------------------------------


def take_fields(managed: Managed, comparison: Comparison, writer: Entry, now: str) -> Managed:
    """Give the writer what it added or changed, taking it from the others; drop what it removed."""
    changed = comparison.changed()
    lost = fieldsets.union(changed, comparison.removed)
    out: Managed = {}
    for identity, entry in managed.items():
        kept = fieldsets.difference(entry.fields, lost)
        if kept is not entry.fields:
            entry = Entry(entry.manager, entry.operation, entry.api_version, entry.subresource, entry.time,
                          fieldsets.interned(kept))
        if kept:
            out[identity] = entry
    taken = changed  # compare() leaves out what is never owned (STRIPPED)
    if taken:
        previous = out.get(writer.identity)
        fields = fieldsets.union(previous.fields, taken) if previous is not None else taken
        out[writer.identity] = Entry(writer.manager, UPDATE, writer.api_version, writer.subresource, now,
                                     fieldsets.interned(fields))
    return _capped(out)


def _capped(managed: Managed) -> Managed:
    """Merge the oldest Update entries into an "ancient-changes" one per version (capManagersManager)."""
    updaters = [identity for identity, entry in managed.items() if entry.operation == UPDATE]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return managed
    updaters.sort(key=lambda identity: (managed[identity].time or "", identity))
    first_of_version: dict[str, tuple] = {}
    count = len(updaters)
    for identity in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        entry = managed[identity]
        first = first_of_version.get(entry.api_version)
        if first is None:
            first_of_version[entry.api_version] = identity
            continue
        bucket = Entry("ancient-changes", UPDATE, entry.api_version, "", entry.time, EMPTY)
        if identity == bucket.identity:
            continue  # the bucket itself: merged into, never into itself
        if bucket.identity not in managed:
            bucket.fields = managed.pop(first).fields
        else:
            bucket.fields = managed[bucket.identity].fields
        bucket.fields = fieldsets.union(bucket.fields, entry.fields)
        managed[bucket.identity] = bucket
        del managed[identity]
        count -= 1
    return managed


def on_write(rt: ResourceType, old: dict | None, new: dict, requested: Any, manager: str, subresource: str | None,
             now: str) -> list[dict] | None:
    """The managedFields of `new`, a create (`old` None) or update by `manager` (FieldManager.Update).

    `requested` is the write's own metadata.managedFields (ignored on a subresource): valid entries
    replace the stored ones, `[]` or `[{}]` clears them. An update of an object without entries keeps
    it without (tracking starts at creation or at the first apply). A value that does not fit the
    schema leaves the entries as they were, as the server's UpdateNoErrors does.
    """
    live = (old or {}).get("metadata", {}).get("managedFields")
    managed = _starting_entries(live, None if subresource else requested)
    if not managed and old is not None:
        return None
    shape = fieldshapes.root(rt)
    try:
        comparison = compare(old if old is not None else fieldshapes.zero_object(rt), new, shape,
                             reset_fields(rt, subresource))
    except SchemaError:
        return live
    if not (comparison.added or comparison.modified or comparison.removed) and requested in (None, live):
        return live  # nothing changed hands
    writer = Entry(manager or "unknown", UPDATE, rt.group_version, subresource or "", now, EMPTY)
    return encode(take_fields(managed, comparison, writer, now))


def _starting_entries(live: Any, requested: Any) -> Managed:
    """decodeLiveOrNew: the request's entries when it sets valid ones, else the stored ones."""
    if is_reset(requested):
        return {}
    if requested and requested != live:  # a patch carries the stored entries along: keep those, shared
        decoded = decode(requested, stored=False)
        if decoded:
            return decoded
    return (decode(live) or {}) if live else {}
