"""What the job engine keeps of each object in its informer caches (controller-runtime's cache transforms).

The informer already drops `managedFields`; these transforms also drop what the engine never reads, as an
object enters the cache, so 10,000 cached pods cost their metadata and status and not their spec. Each keeps
exactly what some module of the engine reads (tests/controller/test_trim.py checks the reading paths
against trimmed objects):

- pods: metadata (names, uid, labels, ownerReferences, deletionTimestamp, resourceVersion are read)
  with only the kind's own annotations (`<prefix>/run-mode`: the mode a pod was made in, which decides
  whether a debug change replaces it and whether its end is an outcome), and the whole status (phase,
  startTime, conditions, container statuses, reason, message). The spec is dropped: the engine builds
  pods from the job's template and never compares a running pod's spec with anything.
- Services: metadata without annotations, and of the spec only the ports (compared with the
  job's ports in services.stored_ports); selector, clusterIP and status are never read.
- PodGroups: metadata without annotations and the spec (gang size, queue and priority are
  compared with the job's); the status is never read.
- jobs: everything but kubectl's last-applied-configuration annotation (a second copy of the
  spec). The spec and status stay whole: the status write PUTs the cached spec back
  (KubeClient.replace_status), and the plan reads both.

Cached objects are shared read-only; a transform may edit the freshly decoded object it is given.
"""

from __future__ import annotations

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _metadata(obj: dict, keep_prefix: str = "") -> dict:
    meta = dict(obj.get("metadata") or {})
    annotations = meta.pop("annotations", None)
    meta.pop("managedFields", None)
    if keep_prefix and annotations:
        kept = {key: value for key, value in annotations.items() if key.startswith(keep_prefix)}
        if kept:
            meta["annotations"] = kept
    return meta


def trim_pod(obj: dict, keep_prefix: str = "") -> dict:
    """`keep_prefix`: the annotations kept (the kind's own, `<label prefix>/`)."""
    out = {"apiVersion": obj.get("apiVersion", "v1"), "kind": obj.get("kind", "Pod"),
           "metadata": _metadata(obj, keep_prefix)}
    if "status" in obj:
        out["status"] = obj["status"]
    return out


def trim_service(obj: dict) -> dict:
    out = {"apiVersion": obj.get("apiVersion", "v1"), "kind": obj.get("kind", "Service"), "metadata": _metadata(obj)}
    ports = (obj.get("spec") or {}).get("ports")
    out["spec"] = {"ports": ports} if ports is not None else {}
    return out


def trim_podgroup(obj: dict) -> dict:
    out = {key: obj[key] for key in ("apiVersion", "kind") if key in obj}
    out["metadata"] = _metadata(obj)
    if "spec" in obj:
        out["spec"] = obj["spec"]
    return out


def trim_job(obj: dict) -> dict:
    annotations = (obj.get("metadata") or {}).get("annotations")
    if annotations and LAST_APPLIED in annotations:
        obj["metadata"]["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return obj
