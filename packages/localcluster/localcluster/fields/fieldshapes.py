"""What server-side apply needs to know of a kind's schema: which values are owned whole, how list
items are told apart, and which object fields are named (struct fields) rather than map keys.

Two sources, one interface (`atomic`, `list_type`, `keys`, `key_default`, `declares`, `field`, `item`):
- built-in kinds: the tagged-field table of patch_tags.py (patch strategies plus the apply tags),
  with every object key a named field and untagged lists atomic, as kube-openapi's schemas make
  them for the Go types; which fields a struct declares, from the kind's OpenAPI schema
  (builtin_schemas.py);
- custom resources: the CRD version's openAPIV3Schema (`x-kubernetes-list-type`,
  `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`), metadata being ObjectMeta; fields the
  schema does not declare get structured-merge-diff's deduced type (map keys, atomic lists).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from ..storage.resources import ResourceType
from ..validation import BySchema, builtin_schemas
from .patch_tags import METADATA_FIELD, kind_field

ATOMIC, SET, MAP = "atomic", "set", "map"


class BuiltinShape:
    """A value of a built-in kind, described by a patch_tags.py `PatchField` and its OpenAPI schema node (None: not
    known, any field may exist). Shapes below are made once."""

    __slots__ = ("_below", "_entry", "_field", "_item", "_schema", "atomic", "keys", "list_type")

    def __init__(self, described, schema: dict | None = None) -> None:
        self._field = described
        self._schema = schema
        self._below: dict[str, tuple[BuiltinShape, bool]] = {}
        self._entry: tuple[BuiltinShape, bool] | None = None  # a map's value, whatever its key
        self._item: BuiltinShape | None = None
        self.atomic: bool = described.atomic
        self.keys: tuple[str, ...] = described.keys or ((described.merge_key,) if described.merge_key else ())
        self.list_type = ATOMIC if described.atomic or not described.merge else MAP if described.merge_key else SET

    @staticmethod
    def key_default(name: str) -> Any:
        # The one defaulted key field of the built-in list keys: ports' protocol.
        return "TCP" if name == "protocol" else None

    def declares(self, name: str) -> bool:
        """Whether an object here may have field `name`: any, unless the schema makes it a struct (a Go
        struct has its fields; a map or a type that reads its own JSON takes any key)."""
        properties = (self._schema or {}).get("properties")
        return properties is None or name in properties

    def field(self, name: str) -> tuple[BuiltinShape, bool]:
        found = self._below.get(name)
        if found is not None:
            return found
        described = self._field.fields.get(name)
        properties = (self._schema or {}).get("properties")
        if described is not None or (properties is not None and name in properties):
            schema = _resolved(properties.get(name)) if properties is not None else None
            found = self._below[name] = (BuiltinShape(described or _NO_TAGS, schema), True)
            return found
        values = (self._schema or {}).get("additionalProperties")
        if not isinstance(values, dict):
            return _UNTAGGED_FIELD  # not cached: undeclared names are unbounded
        if self._entry is None:  # map keys (labels, data) are unbounded: one shape for them all
            self._entry = (BuiltinShape(_NO_TAGS, _resolved(values)), True)
        return self._entry

    def item(self) -> BuiltinShape:
        if self._item is None:
            described = self._field
            self._item = BuiltinShape(replace(described, merge=False, merge_key="", keys=(),
                                              atomic=described.atomic_items, atomic_items=False),
                                      _resolved((self._schema or {}).get("items")))
        return self._item


def _resolved(node: dict | None) -> dict | None:
    """A schema node, its `$ref` followed to the definition it names."""
    ref = (node or {}).get("$ref")
    if ref is None:
        return node
    return builtin_schemas.definitions().get(ref.removeprefix(builtin_schemas.V2_PREFIX))


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


_NO_TAGS = type(METADATA_FIELD)()
_UNTAGGED = BuiltinShape(_NO_TAGS)  # a field without tags, whose schema is not known
_UNTAGGED_FIELD = (_UNTAGGED, True)
_DEDUCED = SchemaShape(None)
_DEDUCED_FIELD = (_DEDUCED, False)
_METADATA = BuiltinShape(METADATA_FIELD)
_crd_root: BySchema[_ResourceRoot] = BySchema(_ResourceRoot)
_SCHEMALESS_ROOT = _ResourceRoot(None)


def root(rt: ResourceType):
    """The shape of a whole object of `rt`, built once per kind or CRD schema."""
    if rt.crd_name is None:
        return _builtin_root(rt.group, rt.version, rt.kind)
    return _SCHEMALESS_ROOT if rt.schema is None else _crd_root(rt.schema)


@functools.cache
def _builtin_root(group: str, version: str, kind: str) -> BuiltinShape:
    schema = builtin_schemas.definitions().get(builtin_schemas.definition_name(group, version, kind))
    return BuiltinShape(kind_field(kind), schema)


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
    ("apps", "ReplicaSet"): {"spec": {"selector": None, "template": {"metadata": {}, "spec": {"containers": None}}},
                             "status": {"replicas": 0}},
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
