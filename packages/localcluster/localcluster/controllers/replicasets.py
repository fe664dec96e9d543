"""The ReplicaSet controller: a ReplicaSet's pods and its status, as kube-controller-manager's keeps them.

It keeps `spec.replicas` active pods (not finished, not being deleted) owned by each ReplicaSet: it
creates the missing ones from the template, named `<replicaset>-<random>` and owned by the ReplicaSet
(so that deleting the ReplicaSet collects them), and deletes the extra ones, the least advanced first
(unscheduled, then pending, then not ready, then ready for less time, then the newest), recording
`SuccessfulCreate` ("Created pod: NAME") and `SuccessfulDelete` ("Deleted pod: NAME") on the ReplicaSet,
or `FailedCreate` ("Error creating: ...") and a ReplicaFailure condition when a create is refused. Its
status is counted from the pods it found, as the real controller's calculateStatus: replicas,
fullyLabeledReplicas, readyReplicas, availableReplicas (Ready for minReadySeconds), terminatingReplicas
(pods being deleted, not finished: DeploymentReplicaSetTerminatingReplicas is on by default in 1.35) and
observedGeneration. As the real one's ControllerRefManager, it adopts an orphan pod its selector matches and
releases a pod of its own that the selector no longer matches (a strategic merge patch of the pod's
ownerReferences, either way), so relabelling a pod out of a ReplicaSet has it replaced.
"""

from __future__ import annotations

import logging

import orjson

from ..api import REPLICA_SETS, now_rfc3339
from ..errors import ApiError
from ..storage.store import DELETED, Event, obj_key
from .workloads import (
    MANAGER,
    PODS,
    Key,
    WorkloadController,
    active,
    as_controller,
    claim,
    controller_of,
    controller_ref,
    has_controller,
    ready_since,
    seconds_since,
    selects,
)

log = logging.getLogger("localcluster.replicasets")
COMPONENT = "replicaset-controller"
BURST = 500  # the controller's burstReplicas: at most this many creates or deletes per sync
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


class ReplicaSetController(WorkloadController):
    COMPONENT = COMPONENT

    def on_event(self, ev: Event) -> None:
        if not self.queue.running:
            return
        if ev.key == REPLICA_SETS and ev.type != DELETED:
            self.queue.add(obj_key(ev.obj))
        elif ev.key == PODS:
            ref = controller_of(ev.obj, "apps/v1", "ReplicaSet")
            namespace = ev.obj["metadata"].get("namespace", "")
            if ref is not None:
                self.queue.add((namespace, ref.get("name", "")))
            elif ev.type != DELETED and not has_controller(ev.obj):
                for rs in self._selecting(ev.obj):  # an orphan: the ReplicaSets that may adopt it
                    self.queue.add((namespace, rs["metadata"]["name"]))

    def _selecting(self, pod: dict) -> list[dict]:
        labels = pod["metadata"].get("labels") or {}
        return [rs for rs in self.store.objects(REPLICA_SETS, pod["metadata"].get("namespace", ""))
                if selects(rs, labels)]

    def _sync(self, key: Key) -> None:
        rs = self.store.get(REPLICA_SETS, key)
        if rs is None:
            self.queue.forget(key)
            return
        error = None
        with as_controller(self.api):
            mine = claim(self.api, rs, self.api.registry.builtin("", "v1", "pods"))
            pods = [p for p in mine if active(p)]
            terminating = sum(1 for p in mine if p["metadata"].get("deletionTimestamp") and
                              (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))
            if not rs["metadata"].get("deletionTimestamp"):
                error = self._manage(rs, pods)
            self._write_status(key, rs, pods, terminating, error)

    def _manage(self, rs: dict, pods: list[dict]) -> str | None:
        """Create or delete pods toward spec.replicas; the first refusal's message, if any."""
        diff = len(pods) - (rs.get("spec") or {}).get("replicas", 1)
        pods_rt = self.api.registry.builtin("", "v1", "pods")
        namespace = rs["metadata"]["namespace"]
        if diff < 0:
            for _ in range(min(-diff, BURST)):
                try:
                    pod = self.api.create(pods_rt, namespace, self._new_pod(rs))
                except ApiError as err:
                    message = f"Error creating: {err.message}"
                    self.recorder.event(rs, "Warning", "FailedCreate", message)
                    return message
                self.recorder.event(rs, "Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")
        elif diff > 0:
            for pod in sorted(pods, key=_deletion_rank)[:min(diff, BURST)]:
                meta = pod["metadata"]
                try:
                    self.api.delete(pods_rt, namespace, meta["name"], {"preconditions": {"uid": meta["uid"]}})
                except ApiError as err:
                    if err.code == 404:  # gone already: what the controller wanted
                        continue
                    message = f"Error deleting: {err.message}"
                    self.recorder.event(rs, "Warning", "FailedDelete", message)
                    return message
                self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")
        return None

    def _new_pod(self, rs: dict) -> dict:
        """controller.GetPodFromTemplate: the template's labels, annotations, finalizers and spec."""
        template = orjson.loads(orjson.dumps((rs.get("spec") or {}).get("template") or {}))
        template_meta = template.get("metadata") or {}
        meta: dict = {"generateName": f"{rs['metadata']['name']}-", "ownerReferences": [controller_ref(rs)]}
        for field in ("labels", "annotations", "finalizers"):
            if template_meta.get(field):
                meta[field] = template_meta[field]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template.get("spec") or {}}

    def _write_status(self, key: Key, rs: dict, pods: list[dict], terminating: int, error: str | None) -> None:
        spec = rs.get("spec") or {}
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = spec.get("minReadySeconds") or 0
        labelled = ready = available = 0
        for pod in pods:
            labels = pod["metadata"].get("labels") or {}
            labelled += all(labels.get(k) == v for k, v in template_labels.items())
            since = ready_since(pod)
            if since is None:
                continue
            ready += 1
            waited = seconds_since(since)
            if waited >= min_ready:
                available += 1
            else:
                self.queue.later(key, min_ready - waited)
        old = rs.get("status") or {}
        status: dict = {"replicas": len(pods)}
        for field, count in (("fullyLabeledReplicas", labelled), ("readyReplicas", ready),
                             ("availableReplicas", available)):
            if count:
                status[field] = count
        status["observedGeneration"] = rs["metadata"].get("generation", 1)
        status["terminatingReplicas"] = terminating  # a pointer: 0 is written
        conditions = [c for c in old.get("conditions") or () if c.get("type") != "ReplicaFailure"]
        failure = next((c for c in old.get("conditions") or () if c.get("type") == "ReplicaFailure"), None)
        if error is not None:
            if failure is None:
                reason = "FailedCreate" if len(pods) < spec.get("replicas", 1) else "FailedDelete"
                failure = {"type": "ReplicaFailure", "status": "True", "lastTransitionTime": now_rfc3339(),
                           "reason": reason, "message": error}
            conditions.append(failure)
        if conditions:
            status["conditions"] = conditions
        if status != old:
            rt = self.api.registry.builtin("apps", "v1", "replicasets")
            self.api.system_write(rt, {**rs, "status": status}, MANAGER, "status")


def _deletion_rank(pod: dict) -> tuple:
    """controller.ActivePodsWithRanks' order: the pods to delete first sort first."""
    status = pod.get("status") or {}
    since = ready_since(pod)
    restarts = sum(c.get("restartCount") or 0 for c in status.get("containerStatuses") or ())
    return (bool(pod["spec"].get("nodeName")), _PHASE_RANK.get(status.get("phase", "Pending"), 0),
            since is not None, seconds_since(since) if since else 0.0, -restarts,
            # the newer first: creationTimestamps compare as text
            "".join(chr(0x10FFFF - ord(c)) for c in pod["metadata"].get("creationTimestamp", "")))
