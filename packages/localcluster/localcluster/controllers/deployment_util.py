"""What the deployment controller computes without writing (pkg/controller/deployment/util's part):
the template hash, the rollout fenceposts, the annotations it keeps, and the status and its conditions.
"""

from __future__ import annotations

import hashlib
import math

import orjson

from ..api import NAME_CHARS, now_rfc3339
from .workloads import seconds_since

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX = "deployment.kubernetes.io/max-replicas"
# Deployment annotations never copied to its ReplicaSets (deploymentutil's annotationsToSkip).
NOT_COPIED = {"kubectl.kubernetes.io/last-applied-configuration", REVISION, REVISION_HISTORY, DESIRED, MAX,
              "deprecated.deployment.rollback.to"}
REVISION_HISTORY_CHARS = 2000  # sync.go's maxRevHistoryLengthInChars: the longest revision-history kept


def semantic(value):
    """The value as apimachinery's Semantic.DeepEqual sees it on the Go type: an empty map, list or struct is
    the same as none (`resources: {}` from a client that marshalled the Go struct, or none)."""
    if isinstance(value, dict):
        kept = {k: semantic(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in ({}, [], None)}
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


def template_hash(template: dict) -> str:
    """The pod template's hash, shaped as the real one: a 32-bit number's decimal digits each mapped by
    rand.SafeEncodeString (so only `4-9bcdf` appear). The real controller hashes the Go struct with FNV;
    this hashes its JSON, so the value differs, never its form."""
    digest = hashlib.sha256(orjson.dumps(semantic(template), option=orjson.OPT_SORT_KEYS)).digest()
    number = int.from_bytes(digest[:4], "big")
    return "".join(NAME_CHARS[ord(digit) % len(NAME_CHARS)] for digit in str(number))


def scaled(value, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value)


def fenceposts(spec: dict) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as counts (deploymentutil.ResolveFenceposts); both 0 for Recreate."""
    strategy = spec.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    replicas = spec.get("replicas", 1)
    surge = scaled(rolling.get("maxSurge", "25%"), replicas, True)
    unavailable = scaled(rolling.get("maxUnavailable", "25%"), replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1  # never a rollout that cannot move
    return surge, min(unavailable, replicas)


def replicas(rs: dict) -> int:
    return (rs.get("spec") or {}).get("replicas", 1)


def status(rs: dict, field: str) -> int:
    return (rs.get("status") or {}).get(field) or 0


def revision(rs: dict) -> int:
    try:
        return int((rs["metadata"].get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def without_hash(template: dict) -> dict:
    """The template as the Deployment wrote it: without the ReplicaSet's pod-template-hash label."""
    meta = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != HASH_LABEL}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    out = {**template, "metadata": meta}
    if not meta:
        del out["metadata"]
    return out


def condition(kind: str, status: str, reason: str, message: str, old: list) -> dict:
    """A condition whose lastTransitionTime moves only when its status does (lastUpdateTime with any change)."""
    now = now_rfc3339()
    previous = next((c for c in old if c.get("type") == kind), None)
    new = {"type": kind, "status": status, "lastUpdateTime": now, "lastTransitionTime": now, "reason": reason,
           "message": message}
    if previous is not None and previous.get("status") == status:
        new["lastTransitionTime"] = previous.get("lastTransitionTime", now)
        if (previous.get("reason"), previous.get("message")) == (reason, message):
            new["lastUpdateTime"] = previous.get("lastUpdateTime", now)
    return new




def counts(all_sets: list[dict], new: dict | None) -> dict:
    """calculateStatus' counts: summed from the ReplicaSets' status (unavailable: from their spec)."""
    available = sum(status(rs, "availableReplicas") for rs in all_sets)
    return {"replicas": sum(status(rs, "replicas") for rs in all_sets),
            "updatedReplicas": status(new, "replicas") if new is not None else 0,
            "readyReplicas": sum(status(rs, "readyReplicas") for rs in all_sets),
            "availableReplicas": available,
            "unavailableReplicas": max(sum(replicas(rs) for rs in all_sets) - available, 0)}


def complete(spec: dict, found: dict) -> bool:
    wanted = spec.get("replicas", 1)
    return found["updatedReplicas"] == wanted and found["replicas"] == wanted and found["availableReplicas"] == wanted


def conditions(spec: dict, old_status: dict, found: dict, new_name: str, created: bool) -> tuple[list[dict], float]:
    """The Available and Progressing conditions, and when to look again (the progress deadline; 0: no need).

    As SetDeploymentCondition, a condition that changes moves to the end of the list."""
    old = old_status.get("conditions") or []
    _, max_unavailable = fenceposts(spec)
    if found["availableReplicas"] >= spec.get("replicas", 1) - max_unavailable:
        available = condition("Available", "True", "MinimumReplicasAvailable",
                              "Deployment has minimum availability.", old)
    else:
        available = condition("Available", "False", "MinimumReplicasUnavailable",
                              "Deployment does not have minimum availability.", old)
    previous = next((c for c in old if c.get("type") == "Progressing"), None)
    recheck = 0.0
    if spec.get("paused"):
        progressing = condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", old)
    elif complete(spec, found):
        progressing = condition("Progressing", "True", "NewReplicaSetAvailable",
                                f'ReplicaSet "{new_name}" has successfully progressed.', old)
    elif created:
        progressing = condition("Progressing", "True", "NewReplicaSetCreated", f'Created new replica set "{new_name}"',
                                old)
        recheck = spec.get("progressDeadlineSeconds", 600)
    elif previous is not None and previous.get("reason") == "DeploymentPaused":
        progressing = condition("Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed", old)
    else:
        progressing, recheck = _progressing(spec, new_name, previous, old, found, old_status)
    out = list(old)
    for changed in (available, progressing):
        if changed not in out:
            out = [c for c in out if c.get("type") != changed["type"]] + [changed]
    return out, recheck


def _progressing(spec: dict, name: str, previous: dict | None, old: list, found: dict,
                 old_status: dict) -> tuple[dict, float]:
    """Progress is a change of the counts; without one for progressDeadlineSeconds, the deadline is exceeded."""
    moved = previous is None or previous.get("reason") == "NewReplicaSetAvailable" or any(
        (old_status.get(k) or 0) != v for k, v in found.items())
    if previous is not None and not moved and previous.get("reason") == "ProgressDeadlineExceeded":
        return previous, 0.0
    since = 0.0 if moved or previous is None else seconds_since(previous.get("lastUpdateTime"))
    deadline = spec.get("progressDeadlineSeconds", 600)
    if since >= deadline:
        return condition("Progressing", "False", "ProgressDeadlineExceeded",
                         f'ReplicaSet "{name}" has timed out progressing.', old), 0.0
    if previous is not None and previous.get("reason") in ("NewReplicaSetCreated", "DeploymentResumed") and \
            not moved:
        return previous, deadline - since
    fresh = condition("Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.', old)
    if moved:
        fresh["lastUpdateTime"] = now_rfc3339()
    return fresh, deadline - since
