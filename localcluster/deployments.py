"""The deployment controller: a Deployment's pods and its status, without ReplicaSets.

kube-controller-manager keeps one ReplicaSet per pod template of a Deployment and the ReplicaSet
controller keeps its pods. localcluster does both in one step and makes no ReplicaSet objects: it keeps
`spec.replicas` running pods of the current template, named `<deployment>-<template hash>-<random>`,
labelled `pod-template-hash` and owned by the Deployment itself (so deleting the Deployment collects
them); pods of an older template are deleted at once, as the Recreate strategy does (maxSurge and
maxUnavailable do not pace a rollout); a paused Deployment's pods are left as they are. Its status is
what the real controller reports from the pods: observedGeneration, replicas, updatedReplicas,
readyReplicas, availableReplicas (Ready for minReadySeconds), unavailableReplicas, and the Available
and Progressing conditions (ProgressDeadlineExceeded after progressDeadlineSeconds without progress),
which is what `kubectl rollout status` and `kubectl scale` read. Whether the pods become ready is the
pod runner's part: with the `none` runner they stay Pending and a rollout never completes, as on a
cluster whose nodes run nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
from datetime import UTC, datetime

import orjson

from .api import DEPLOYMENTS, NAME_CHARS, Api, now_rfc3339
from .errors import ApiError
from .store import DELETED, Event, obj_key

log = logging.getLogger("localcluster.deployments")

PODS = ("", "pods")
HASH_LABEL = "pod-template-hash"


def template_hash(template: dict) -> str:
    """A stable name-safe hash of the pod template (the real controller hashes it with FNV into the same alphabet)."""
    digest = int.from_bytes(hashlib.sha256(orjson.dumps(template, option=orjson.OPT_SORT_KEYS)).digest()[:8], "big")
    chars = []
    for _ in range(10):
        digest, rest = divmod(digest, len(NAME_CHARS))
        chars.append(NAME_CHARS[rest])
    return "".join(chars)


def _seconds_since(timestamp: str | None) -> float:
    if not timestamp:
        return 0.0
    then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return (datetime.now(UTC) - then).total_seconds()


def _ready_since(pod: dict) -> str | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            return cond.get("lastTransitionTime") or ""
    return None


def _max_unavailable(spec: dict, replicas: int) -> int:
    """The strategy's maxUnavailable as a count (percentages round down); 0 for Recreate."""
    rolling = (spec.get("strategy") or {}).get("rollingUpdate")
    if not rolling or (spec.get("strategy") or {}).get("type") == "Recreate":
        return 0
    value = rolling.get("maxUnavailable", "25%")
    if isinstance(value, str) and value.endswith("%"):
        return min(math.floor(replicas * int(value[:-1]) / 100), replicas)
    return min(int(value), replicas)


def _condition(kind: str, status: str, reason: str, message: str, old: list) -> dict:
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


class DeploymentController:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.store = api.store
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: set[tuple[str, str]] = set()
        self._timers: dict[tuple[str, str], asyncio.TimerHandle] = {}

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()

    async def stop(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._loop = None

    def on_event(self, ev: Event) -> None:
        if self._loop is None:
            return
        if ev.key == DEPLOYMENTS and ev.type != DELETED:
            self._queue(obj_key(ev.obj))
        elif ev.key == PODS:
            for ref in ev.obj["metadata"].get("ownerReferences") or ():
                if ref.get("controller") and ref.get("kind") == "Deployment" and ref.get("apiVersion") == "apps/v1":
                    self._queue((ev.obj["metadata"].get("namespace", ""), ref.get("name", "")))

    def _queue(self, key: tuple[str, str]) -> None:
        if key not in self._pending and self._loop is not None:
            self._pending.add(key)
            self._loop.call_soon(self._sync, key)

    def _later(self, key: tuple[str, str], delay: float) -> None:
        """Sync again after `delay` (a pod's minReadySeconds, the progress deadline); the earliest wins."""
        if self._loop is None:
            return
        handle = self._timers.get(key)
        when = self._loop.time() + delay
        if handle is not None and not handle.cancelled() and handle.when() <= when:
            return
        if handle is not None:
            handle.cancel()
        self._timers[key] = self._loop.call_at(when, self._queue, key)

    # --- one sync -------------------------------------------------------------------------------

    def _sync(self, key: tuple[str, str]) -> None:
        self._pending.discard(key)
        deployment = self.store.get(DEPLOYMENTS, key)
        if deployment is None or deployment["metadata"].get("deletionTimestamp"):
            handle = self._timers.pop(key, None)
            if handle is not None:
                handle.cancel()
            return
        try:
            if not (deployment.get("spec") or {}).get("paused"):
                self._scale_pods(deployment)
            self._write_status(key, deployment)
        except ApiError as err:  # a pod gone meanwhile (its event syncs again), or a create refused
            log.log(logging.DEBUG if err.code in (404, 409) else logging.WARNING, "deployment %s/%s: %s", *key,
                    err.message)

    def _pods(self, deployment: dict) -> list[dict]:
        uid = deployment["metadata"]["uid"]
        pods = []
        for store_key, okey in list(self.store.dependents.get(uid, ())):
            pod = self.store.get(store_key, okey) if store_key == PODS else None
            if pod is not None and any(r.get("uid") == uid and r.get("controller")
                                       for r in pod["metadata"].get("ownerReferences") or ()):
                pods.append(pod)
        return pods

    def _scale_pods(self, deployment: dict) -> None:
        """Create and delete pods toward the wanted count of the current template."""
        spec = deployment.get("spec") or {}
        wanted = spec.get("replicas", 1)
        current = template_hash(spec.get("template") or {})
        pods_rt = self.api.registry.get("", "v1", "pods")
        active = [p for p in self._pods(deployment) if _active(p)]
        mine = [p for p in active if (p["metadata"].get("labels") or {}).get(HASH_LABEL) == current]
        doomed = [p for p in active if p not in mine]
        # Scaling down, the least advanced go first: unscheduled, then not ready, then the newest.
        mine.sort(key=lambda p: p["metadata"]["creationTimestamp"], reverse=True)
        mine.sort(key=lambda p: (bool(p["spec"].get("nodeName")), _ready_since(p) is not None))
        doomed += mine[:max(len(mine) - wanted, 0)]
        for pod in doomed:
            meta = pod["metadata"]
            self.api.delete(pods_rt, meta["namespace"], meta["name"], {"preconditions": {"uid": meta["uid"]}})
        for _ in range(wanted - len(mine)):
            self.api.create(pods_rt, deployment["metadata"]["namespace"], self._new_pod(deployment, current))

    def _new_pod(self, deployment: dict, current: str) -> dict:
        meta = deployment["metadata"]
        template = orjson.loads(orjson.dumps((deployment.get("spec") or {}).get("template") or {}))
        pod_meta = template.get("metadata") or {}
        pod_meta["labels"] = {**(pod_meta.get("labels") or {}), HASH_LABEL: current}
        pod_meta["generateName"] = f"{meta['name']}-{current}-"
        pod_meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": meta["name"],
                                        "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template.get("spec") or {}}

    def _write_status(self, key: tuple[str, str], deployment: dict) -> None:
        spec = deployment.get("spec") or {}
        wanted = spec.get("replicas", 1)
        current = template_hash(spec.get("template") or {})
        active = [p for p in self._pods(deployment) if _active(p)]
        updated = [p for p in active if (p["metadata"].get("labels") or {}).get(HASH_LABEL) == current]
        min_ready = spec.get("minReadySeconds") or 0
        ready = available = 0
        for pod in updated + [p for p in active if p not in updated]:
            since = _ready_since(pod)
            if since is None:
                continue
            ready += 1
            waited = _seconds_since(since)
            if waited >= min_ready:
                available += 1
            else:
                self._later(key, min_ready - waited)
        old = deployment.get("status") or {}
        counts = {"replicas": len(active), "updatedReplicas": len(updated), "readyReplicas": ready,
                  "availableReplicas": available, "unavailableReplicas": max(wanted - available, 0)}
        status: dict = {"observedGeneration": deployment["metadata"].get("generation", 1)}
        status.update({k: v for k, v in counts.items() if v})
        status["conditions"] = self._conditions(key, deployment, old, counts)
        if status != old:
            rt = self.api.registry.get("apps", "v1", "deployments")
            self.api.system_write(rt, {**deployment, "status": status})

    def _conditions(self, key: tuple[str, str], deployment: dict, old_status: dict, counts: dict) -> list[dict]:
        spec = deployment.get("spec") or {}
        wanted = spec.get("replicas", 1)
        old = old_status.get("conditions") or []
        name = f"{deployment['metadata']['name']}-{template_hash(spec.get('template') or {})}"
        if counts["availableReplicas"] >= wanted - _max_unavailable(spec, wanted):
            available = _condition("Available", "True", "MinimumReplicasAvailable",
                                   "Deployment has minimum availability.", old)
        else:
            available = _condition("Available", "False", "MinimumReplicasUnavailable",
                                   "Deployment does not have minimum availability.", old)
        complete = (counts["updatedReplicas"] == wanted and counts["replicas"] == wanted
                    and counts["availableReplicas"] == wanted)
        if spec.get("paused"):
            progressing = _condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", old)
        elif complete:
            progressing = _condition("Progressing", "True", "NewReplicaSetAvailable",
                                     f'ReplicaSet "{name}" has successfully progressed.', old)
        else:
            progressing = self._progressing(key, spec, name, old, counts, old_status)
        return [available, progressing]

    def _progressing(self, key: tuple[str, str], spec: dict, name: str, old: list, counts: dict,
                     old_status: dict) -> dict:
        """Progress is a change of the counts; without one for progressDeadlineSeconds, the deadline is exceeded."""
        previous = next((c for c in old if c.get("type") == "Progressing"), None)
        moved = previous is None or previous.get("reason") == "NewReplicaSetAvailable" or any(
            old_status.get(k, 0) != v for k, v in counts.items())
        if not moved and previous.get("reason") == "ProgressDeadlineExceeded":
            return previous
        since = 0.0 if moved else _seconds_since(previous.get("lastUpdateTime"))
        deadline = spec.get("progressDeadlineSeconds", 600)
        if since >= deadline:
            return _condition("Progressing", "False", "ProgressDeadlineExceeded",
                              f'ReplicaSet "{name}" has timed out progressing.', old)
        self._later(key, deadline - since)
        fresh = _condition("Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.', old)
        if moved:
            fresh["lastUpdateTime"] = now_rfc3339()
        return fresh


def _active(pod: dict) -> bool:
    """A pod the ReplicaSet controller counts: not being deleted, not finished."""
    return not pod["metadata"].get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in (
        "Succeeded", "Failed")
