"""What a write to a `/status` subresource takes from the request: each kind's REST status strategy.

A custom resource's status strategy keeps everything but `status` from the stored object (and drops
`status` when the request has none). Most built-in ones are looser (their PrepareForUpdate): they keep
only the spec, so a PUT or PATCH of a pod's or a Service's /status also changes its labels, annotations
and finalizers. The pod's keeps its ownerReferences too (old kubelets corrupted them, breaking garbage
collection), and a Deployment's its labels. The kinds not listed here (namespaces, whose /finalize is
served as /status, and CRDs) keep everything but status.
"""

from __future__ import annotations

from .resources import ResourceType

PODS, DEPLOYMENTS = ("", "pods"), ("apps", "deployments")
# The built-in kinds whose status strategy keeps only the spec, and the metadata fields it keeps too.
KEEPS = {PODS: ("ownerReferences",), ("", "services"): (), DEPLOYMENTS: ("labels",), ("apps", "replicasets"): (),
         ("batch", "jobs"): (),
         ("batch", "cronjobs"): (), ("policy", "poddisruptionbudgets"): (), ("", "resourcequotas"): ()}


def status_write(rt: ResourceType, old: dict, new: dict, meta: dict) -> tuple[dict, dict]:
    """(object, metadata) to store for a /status write of `new` (metadata `meta`) over `old`."""
    key = rt.storage_key
    if key not in KEEPS:
        obj = dict(old)
        if "status" in new:
            obj["status"] = new["status"]
        elif rt.crd_name is not None:  # a custom resource's status is whatever the request says, even none
            obj.pop("status", None)
        return obj, dict(old["metadata"])
    obj = {**new, "spec": old.get("spec")}
    if "spec" not in old:
        del obj["spec"]
    meta = dict(meta)
    for field in KEEPS[key]:
        if field in old["metadata"]:
            meta[field] = old["metadata"][field]
        else:
            meta.pop(field, None)
    if key == PODS:
        obj["status"] = _pod_status(obj.get("status") or {}, old.get("status") or {})
    return obj, meta


def _pod_status(status: dict, old: dict) -> dict:
    """The QoS class is kept when the write drops it, and so is every observedGeneration left unset."""
    status = dict(status)
    for field in ("qosClass", "observedGeneration"):
        if not status.get(field) and old.get(field):
            status[field] = old[field]
    earlier: dict[str, list[int]] = {}
    for condition in old.get("conditions") or ():
        earlier.setdefault(condition.get("type"), []).append(condition.get("observedGeneration") or 0)
    conditions = []
    for condition in status.get("conditions") or ():
        queue = earlier.get(condition.get("type"))
        generation = queue.pop(0) if queue else 0
        if not condition.get("observedGeneration") and generation:
            condition = {**condition, "observedGeneration": generation}
        conditions.append(condition)
    if "conditions" in status:
        status["conditions"] = conditions
    return status
