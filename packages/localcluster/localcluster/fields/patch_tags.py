"""The strategic merge patch's schema: the Go API types' struct tags (patchStrategy, patchMergeKey,
x-kubernetes-list-type) of the kinds this server knows, as nested fields."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# --- strategic merge patch: the schema --------------------------------------------------


@dataclass(frozen=True, slots=True)
class PatchField:
    """Patch metadata of one field: its Go struct tags and its nested fields.

    ``merge`` is patchStrategy "merge" (a list that is merged, not replaced) and
    ``merge_key`` its patchMergeKey (empty for lists of primitives). ``fields`` describes
    the value when it is an object, or each item when it is a list of objects.

    Server-side apply (fieldshapes.py) reads the same table, plus what its +listType,
    +listMapKey, +mapType and +structType tags say where that differs from the patch
    strategy: ``keys``, a merged list's key fields when there are several; ``atomic``,
    a value owned as a whole (an atomic map or struct, or a list merged by strategic
    merge patch but atomic to apply); ``atomic_items``, list items owned as a whole.
    """

    merge: bool = False
    merge_key: str = ""
    fields: Mapping[str, PatchField] = field(default_factory=dict)
    keys: tuple[str, ...] = ()
    atomic: bool = False
    atomic_items: bool = False


PatchSchema = Mapping[str, PatchField]
NO_METADATA = PatchField()  # a field with no tags: objects merge, lists are replaced


def _merged_list(merge_key: str = "", fields: PatchSchema | None = None, **apply_tags) -> PatchField:
    return PatchField(merge=True, merge_key=merge_key, fields=fields or {}, **apply_tags)


def _nested(fields: PatchSchema) -> PatchField:
    return PatchField(fields=fields)


# From the patchStrategy/patchMergeKey tags of k8s.io/api (and the apply tags, see PatchField).
# Lists absent here are replaced whole, as in Go: e.g. tolerations, envFrom, containerStatuses,
# initContainerStatuses, readinessGates, Service clusterIPs and ipFamilies.
_ATOMIC = PatchField(atomic=True)
_OBJECT_META: PatchSchema = {
    "finalizers": _merged_list(),
    "ownerReferences": _merged_list("uid", atomic_items=True),
}
_CONTAINER: PatchSchema = {
    "ports": _merged_list("containerPort", keys=("containerPort", "protocol")),
    "env": _merged_list("name"),
    "volumeMounts": _merged_list("mountPath"),
    "volumeDevices": _merged_list("devicePath"),
}
_POD_SPEC: PatchSchema = {
    "volumes": _merged_list("name"),
    "initContainers": _merged_list("name", _CONTAINER),
    "containers": _merged_list("name", _CONTAINER),
    "ephemeralContainers": _merged_list("name", _CONTAINER),
    "imagePullSecrets": _merged_list("name"),
    "hostAliases": _merged_list("ip"),
    "topologySpreadConstraints": _merged_list("topologyKey", keys=("topologyKey", "whenUnsatisfiable")),
    "schedulingGates": _merged_list("name"),
    "resourceClaims": _merged_list("name"),
    "nodeSelector": _ATOMIC,
}
_POD_STATUS: PatchSchema = {
    "conditions": _merged_list("type"),
    "podIPs": _merged_list("ip"),
    "hostIPs": _merged_list("ip", atomic=True),
    "resourceClaimStatuses": _merged_list("name"),
}
_CONDITIONS_STATUS: PatchSchema = {"conditions": _merged_list("type")}
_POD_TEMPLATE: PatchSchema = {"metadata": _nested(_OBJECT_META), "spec": _nested(_POD_SPEC)}

META_ONLY: PatchSchema = {"metadata": _nested(_OBJECT_META)}
_BINDING: PatchSchema = {**META_ONLY, "roleRef": _ATOMIC}
# admissionregistration/v1 ValidatingWebhook and MutatingWebhook (rules and admissionReviewVersions: atomic).
_WEBHOOK: PatchSchema = {"matchConditions": _merged_list("name"), "namespaceSelector": _ATOMIC,
                         "objectSelector": _ATOMIC}
KIND_SCHEMAS: Mapping[str, PatchSchema] = {
    "Pod": {**META_ONLY, "spec": _nested(_POD_SPEC), "status": _nested(_POD_STATUS)},
    "Service": {
        **META_ONLY,
        "spec": _nested({"ports": _merged_list("port", keys=("port", "protocol")), "selector": _ATOMIC}),
        "status": _nested(_CONDITIONS_STATUS),
    },
    "Namespace": {**META_ONLY, "status": _nested(_CONDITIONS_STATUS)},
    "Deployment": {
        **META_ONLY,
        "spec": _nested({"selector": _ATOMIC, "template": _nested(_POD_TEMPLATE)}),
        "status": _nested(_CONDITIONS_STATUS),
    },
    "ReplicaSet": {
        **META_ONLY,
        "spec": _nested({"selector": _ATOMIC, "template": _nested(_POD_TEMPLATE)}),
        "status": _nested(_CONDITIONS_STATUS),
    },
    "ServiceAccount": {**META_ONLY, "secrets": _merged_list("name")},
    # core/v1 and events.k8s.io/v1: their object references are atomic structs.
    "Event": {**META_ONLY, "involvedObject": _ATOMIC, "regarding": _ATOMIC, "related": _ATOMIC},
    "RoleBinding": _BINDING,
    "ClusterRoleBinding": _BINDING,
    "ValidatingWebhookConfiguration": {**META_ONLY, "webhooks": _merged_list("name", _WEBHOOK)},
    "MutatingWebhookConfiguration": {**META_ONLY, "webhooks": _merged_list("name", _WEBHOOK)},
    # Lease has no tagged lists beyond metadata.
}


def kind_field(kind: str) -> PatchField:
    """The tagged fields of a built-in kind, as one object field (server-side apply reads them too)."""
    return _nested(KIND_SCHEMAS.get(kind, META_ONLY))


METADATA_FIELD = _nested(_OBJECT_META)

