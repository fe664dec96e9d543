"""What server-side apply needs to know of a kind's schema: which values are owned whole, how list
items are told apart, and which object fields are named (struct fields) rather than map keys.

Two sources, one interface (`atomic`, `list_type`, `keys`, `key_default`, `field`, `item`):
- built-in kinds: the tagged-field table of patch.py (patch strategies plus the apply tags),
  with every object key a named field and untagged lists atomic, as kube-openapi's schemas make
  them for the Go types;
- custom resources: the CRD version's openAPIV3Schema (`x-kubernetes-list-type`,
  `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`), metadata being ObjectMeta; fields the
  schema does not declare get structured-merge-diff's deduced type (map keys, atomic lists).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .patch import METADATA_FIELD, kind_field
from .resources import ResourceType

ATOMIC, SET, MAP = "atomic", "set", "map"


class BuiltinShape:
    """A value of a built-in kind, described by a patch.py `_Field`. Shapes below are made once."""

    __slots__ = ("_below", "_field", "_item", "atomic", "keys", "list_type")

    def __init__(self, described) -> None:
        self._field = described
        self._below: dict[str, tuple[BuiltinShape, bool]] = {}
        self._item: BuiltinShape | None = None
        self.atomic: bool = described.atomic
        self.keys: tuple[str, ...] = described.keys or ((described.merge_key,) if described.merge_key else ())
        self.list_type = ATOMIC if described.atomic or not described.merge else MAP if described.merge_key else SET

    @staticmethod
    def key_default(name: str) -> Any:
        # The one defaulted key field of the built-in list keys: ports' protocol.
        return "TCP" if name == "protocol" else None

    @staticmethod
    def declares(name: str) -> bool:
        return True  # the table knows tagged fields only: any other may exist

    def field(self, name: str) -> tuple[BuiltinShape, bool]:
        found = self._below.get(name)
        if found is None:
            described = self._field.fields.get(name)
            if described is None:
                return _UNTAGGED_FIELD  # not cached: map keys (labels, data) are unbounded
            found = self._below[name] = (BuiltinShape(described), True)
        return found

    def item(self) -> BuiltinShape:
        if self._item is None:
            described = self._field
            self._item = BuiltinShape(replace(described, merge=False, merge_key="", keys=(),
                                              atomic=described.atomic_items, atomic_items=False))
        return self._item


class SchemaShape:
    """A value of a custom resource, described by its openAPIV3Schema node (None: deduced)."""

    __slots__ = ("_below", "_item", "_schema", "atomic", "keys", "list_type")

    def __init__(self, schema: dict | None) -> None:
        self._schema = schema
        self._below: dict[str, tuple[Any, bool]] = {}
        self._item: SchemaShape | None = None
        schema = schema or {}
        self.atomic: bool = schema.get("x-kubernetes-map-type") == "atomic"
        self.keys: tuple[str, ...] = tuple(schema.get("x-kubernetes-list-map-keys") or ())
        self.list_type: str = schema.get("x-kubernetes-list-type") or ATOMIC

    def key_default(self, name: str) -> Any:
        items = (self._schema or {}).get("items") or {}
        return ((items.get("properties") or {}).get(name) or {}).get("default")

    def declares(self, name: str) -> bool:
        """Whether an object here may have field `name` (an applied configuration must not have others)."""
        schema = self._schema
        return (schema is None or name in (schema.get("properties") or {}) or bool(schema.get("additionalProperties"))
                or bool(schema.get("x-kubernetes-preserve-unknown-fields")))

    def field(self, name: str) -> tuple[Any, bool]:
        found = self._below.get(name)
        if found is None:
            found = self._field(name)
            if found[1]:  # only declared fields are cached: map keys are unbounded
                self._below[name] = found
        return found

    def _field(self, name: str) -> tuple[Any, bool]:
        schema = self._schema
        if schema is None:
            return _DEDUCED_FIELD
        declared = (schema.get("properties") or {}).get(name)
        if declared is not None:
            return SchemaShape(declared), True
        extra = schema.get("additionalProperties")
        if not isinstance(extra, dict):
            return _DEDUCED_FIELD
        return self._below.get("") or self._below.setdefault("", (SchemaShape(extra), False))

    def item(self) -> SchemaShape:
        if self._item is None:
            items = (self._schema or {}).get("items")
            self._item = SchemaShape(items) if isinstance(items, dict) else _DEDUCED
        return self._item


class _ResourceRoot(SchemaShape):
    """A custom resource's root: its metadata is ObjectMeta, whatever the CRD says of it."""

    __slots__ = ()

    def declares(self, name: str) -> bool:
        return name in ("apiVersion", "kind", "metadata") or super().declares(name)

    def _field(self, name: str) -> tuple[Any, bool]:
        if name == "metadata":
            return _METADATA, True
        return super()._field(name)


_UNTAGGED = BuiltinShape(type(METADATA_FIELD)())  # a field without tags
_UNTAGGED_FIELD = (_UNTAGGED, True)
_DEDUCED = SchemaShape(None)
_DEDUCED_FIELD = (_DEDUCED, False)
_METADATA = BuiltinShape(METADATA_FIELD)
_roots: dict[object, tuple[object, Any]] = {}  # kind or id(schema) -> (what it was built from, shape)


def root(rt: ResourceType):
    """The shape of a whole object of `rt`, built once per kind or CRD schema (a changed CRD brings a
    new schema dict; the cache holds the dict, so its id is not reused while cached)."""
    source = rt.schema if rt.crd_name is not None else rt.kind
    key = id(source) if rt.crd_name is not None else source
    hit = _roots.get(key)
    if hit is not None and hit[0] is source:
        return hit[1]
    if len(_roots) >= 512:
        _roots.clear()
    shape = _ResourceRoot(source) if rt.crd_name is not None else BuiltinShape(kind_field(source))
    _roots[key] = (source, shape)
    return shape


# What a built-in object is before anything is set: the JSON of the Go type's zero value, keeping its
# objects and null lists (fields without omitempty, and structs, which omitempty never drops). A create
# is compared against it, so fields present there are not owned as such (`f:spec` has no `.`), as on a
# real server; a custom resource starts from nothing.
_ZERO_OBJECTS: dict[tuple[str, str], dict] = {
    ("", "Pod"): {"spec": {"containers": None}, "status": {}},
    ("", "Service"): {"spec": {}, "status": {"loadBalancer": {}}},
    ("", "Namespace"): {"spec": {}, "status": {}},
    ("", "Event"): {"involvedObject": {}, "source": {}, "firstTimestamp": None, "lastTimestamp": None,
                    "eventTime": None},
    ("events.k8s.io", "Event"): {"eventTime": None, "regarding": {}, "deprecatedSource": {},
                                 "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None},
    ("coordination.k8s.io", "Lease"): {"spec": {}},
    ("apps", "Deployment"): {"spec": {"selector": None, "strategy": {},
                                      "template": {"metadata": {}, "spec": {"containers": None}}},
                             "status": {}},
    ("rbac.authorization.k8s.io", "Role"): {"rules": None},
    ("rbac.authorization.k8s.io", "ClusterRole"): {"rules": None},
    ("rbac.authorization.k8s.io", "RoleBinding"): {"roleRef": {}},
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): {"roleRef": {}},
    ("apiextensions.k8s.io", "CustomResourceDefinition"): {
        "spec": {"names": {}, "versions": None}, "status": {"acceptedNames": {}, "storedVersions": None}},
}


def zero_object(rt: ResourceType) -> dict:
    if rt.crd_name is not None:
        return {}
    return _ZERO_OBJECTS.get((rt.group, rt.kind), {})
