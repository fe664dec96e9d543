"""The deployment controller: a Deployment's ReplicaSets, its rollouts and its status.

As kube-controller-manager's (pkg/controller/deployment), it keeps one ReplicaSet per pod template of
a Deployment, named `<deployment>-<template hash>`, labelled and selecting `pod-template-hash`, owned by
the Deployment, with the annotations `deployment.kubernetes.io/revision` (the Deployment gets the new
ReplicaSet's too), `desired-replicas` and `max-replicas` (and `revision-history` on a ReplicaSet brought
back by a rollback); the ReplicaSet controller (replicasets.py) keeps their pods. What `kubectl rollout
history` and `rollout undo` read and write is therefore there. A sync, as the real one:
- a paused Deployment, or a scaling event (a ReplicaSet's desired-replicas is not spec.replicas), only
  scales the ReplicaSets it has (proportionally when several are active), creating none;
- RollingUpdate: the new ReplicaSet grows while the total stays within replicas + maxSurge, the old
  ones shrink while the available pods stay at least replicas - maxUnavailable (25% each by default,
  surge rounded up, unavailable down);
- Recreate: the old ReplicaSets go to 0, and once none of their pods is left the new one is scaled up;
- a complete rollout deletes the old, empty ReplicaSets beyond revisionHistoryLimit.
Every change of a ReplicaSet's size is a `ScalingReplicaSet` Event on the Deployment ("Scaled up
replica set web-5d8f9c7b64 from 0 to 2"). The status is summed from the ReplicaSets' (observedGeneration,
replicas, updatedReplicas, readyReplicas, availableReplicas, unavailableReplicas) with the Available
and Progressing conditions (ProgressDeadlineExceeded after progressDeadlineSeconds without progress),
which `kubectl rollout status` reads. Whether pods become ready is the pod runner's part: with the
`none` runner they stay Pending and a rollout never completes, as on a cluster whose nodes run nothing.
terminatingReplicas is summed from the ReplicaSets'. An orphan ReplicaSet the selector matches is adopted (one
left by `kubectl delete deployment --cascade=orphan`, say), one no longer matched released. Not modelled:
collisionCount (a hash collision).
"""

from __future__ import annotations

import hashlib
import logging
import math

import orjson

from .api import DEPLOYMENTS, NAME_CHARS, REPLICA_SETS, Api, now_rfc3339
from .errors import ApiError
from .store import DELETED, Event, obj_key
from .workloads import (
    MANAGER,
    PODS,
    Key,
    Recorder,
    SyncQueue,
    as_controller,
    claim,
    controller_of,
    controller_ref,
    has_controller,
    owned,
    seconds_since,
    selects,
)

log = logging.getLogger("localcluster.deployments")

COMPONENT = "deployment-controller"
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX = "deployment.kubernetes.io/max-replicas"
# Deployment annotations never copied to its ReplicaSets (deploymentutil's annotationsToSkip).
NOT_COPIED = {"kubectl.kubernetes.io/last-applied-configuration", REVISION, REVISION_HISTORY, DESIRED, MAX,
              "deprecated.deployment.rollback.to"}
REVISION_HISTORY_CHARS = 2000  # the controller's default --deployment-controller-... limit of revision-history


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


def _scaled(value, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value)


def _fenceposts(spec: dict) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as counts (deploymentutil.ResolveFenceposts); both 0 for Recreate."""
    strategy = spec.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    replicas = spec.get("replicas", 1)
    surge = _scaled(rolling.get("maxSurge", "25%"), replicas, True)
    unavailable = _scaled(rolling.get("maxUnavailable", "25%"), replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1  # never a rollout that cannot move
    return surge, min(unavailable, replicas)


def _replicas(rs: dict) -> int:
    return (rs.get("spec") or {}).get("replicas", 1)


def _status(rs: dict, field: str) -> int:
    return (rs.get("status") or {}).get(field) or 0


def _revision(rs: dict) -> int:
    try:
        return int((rs["metadata"].get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def _without_hash(template: dict) -> dict:
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
        self.queue = SyncQueue(self._sync)
        self.recorder = Recorder(api, COMPONENT)

    def start(self) -> None:
        self.queue.start()

    async def stop(self) -> None:
        self.queue.stop()

    def on_event(self, ev: Event) -> None:
        if not self.queue.running:
            return
        if ev.key == DEPLOYMENTS and ev.type != DELETED:
            self.queue.add(obj_key(ev.obj))
        elif ev.key == REPLICA_SETS:
            self._queue_owner(ev.obj)
            if ev.type != DELETED and not has_controller(ev.obj):  # an orphan: the Deployments that may adopt it
                namespace = ev.obj["metadata"].get("namespace", "")
                for deployment in self.store.objects(DEPLOYMENTS, namespace):
                    if selects(deployment, ev.obj["metadata"].get("labels") or {}):
                        self.queue.add((namespace, deployment["metadata"]["name"]))
        elif ev.key == PODS and ev.type == DELETED:
            # Recreate waits for the old pods to be gone; a removal changes no ReplicaSet's status.
            ref = controller_of(ev.obj, "apps/v1", "ReplicaSet")
            rs = self.store.get(REPLICA_SETS, (ev.obj["metadata"].get("namespace", ""), ref["name"])) if ref else None
            if rs is not None:
                self._queue_owner(rs)

    def _queue_owner(self, rs: dict) -> None:
        ref = controller_of(rs, "apps/v1", "Deployment")
        if ref is not None:
            self.queue.add((rs["metadata"].get("namespace", ""), ref.get("name", "")))

    # --- one sync -------------------------------------------------------------------------------

    def _sync(self, key: Key) -> None:
        deployment = self.store.get(DEPLOYMENTS, key)
        if deployment is None or deployment["metadata"].get("deletionTimestamp"):
            self.queue.forget(key)
            return
        try:
            with as_controller(self.api):
                sync = _Sync(self, deployment)
                sync.run()
                sync.write_status()
        except ApiError as err:  # an object changed meanwhile (its event syncs again), or a write refused
            log.log(logging.DEBUG if err.code in (404, 409) else logging.WARNING, "deployment %s/%s: %s", *key,
                    err.message)
            self.queue.later(key, 1.0)


class _Sync:
    """One sync of one Deployment: the ReplicaSets it owns, changed in place as they are written."""

    def __init__(self, controller: DeploymentController, deployment: dict) -> None:
        self.controller = controller
        self.api = controller.api
        self.deployment = deployment
        self.spec = deployment.get("spec") or {}
        self.wanted = self.spec.get("replicas", 1)
        self.annotations = dict(deployment["metadata"].get("annotations") or {})
        self.rs_rt = self.api.registry.get("apps", "v1", "replicasets")
        self.all = sorted(claim(self.api, deployment, self.rs_rt),
                          key=lambda rs: (rs["metadata"]["creationTimestamp"], rs["metadata"]["name"]))
        template = semantic(self.spec.get("template") or {})
        found = [rs for rs in self.all
                 if semantic(_without_hash((rs.get("spec") or {}).get("template") or {})) == template]
        self.new: dict | None = found[0] if found else None  # the oldest, as FindNewReplicaSet
        self.created = False

    @property
    def old(self) -> list[dict]:
        return [rs for rs in self.all if rs is not self.new]

    def run(self) -> None:
        if self.new is not None:
            self._sync_new()
        if self.spec.get("paused") or self._scaling_event():
            self._scale()
            if self.spec.get("paused"):
                self._clean_up()
        elif (self.spec.get("strategy") or {}).get("type") == "Recreate":
            self._recreate()
        else:
            self._rolling()

    # --- the new ReplicaSet -----------------------------------------------------------------------

    def _new_revision(self) -> int:
        return max((_revision(rs) for rs in self.old), default=0) + 1

    def _copy_annotations(self, annotations: dict) -> bool:
        changed = False
        for k, v in self.annotations.items():
            if k not in NOT_COPIED and annotations.get(k) != v:
                annotations[k] = v
                changed = True
        return changed

    def _sync_new(self) -> None:
        """An existing new ReplicaSet: the Deployment's annotations, a revision above every old one's (the
        revision it had kept in revision-history: a rollback), minReadySeconds."""
        rs = self.new
        annotations = dict(rs["metadata"].get("annotations") or {})
        changed = self._copy_annotations(annotations)
        revision = self._new_revision()
        if _revision(rs) < revision:
            if REVISION in annotations:
                history = [r for r in annotations.get(REVISION_HISTORY, "").split(",") if r] + [annotations[REVISION]]
                while len(",".join(history)) > REVISION_HISTORY_CHARS:
                    history.pop(0)
                annotations[REVISION_HISTORY] = ",".join(history)
            annotations[REVISION] = str(revision)
            changed = True
        min_ready = self.spec.get("minReadySeconds") or 0
        if changed or (rs["spec"].get("minReadySeconds") or 0) != min_ready:
            spec = {**rs["spec"], "minReadySeconds": min_ready} if min_ready else \
                {k: v for k, v in rs["spec"].items() if k != "minReadySeconds"}
            self._update(rs, {**rs, "metadata": {**rs["metadata"], "annotations": annotations}, "spec": spec})
        self.annotations[REVISION] = (self.new["metadata"].get("annotations") or {})[REVISION]

    def _create_new(self, replicas: int) -> None:
        meta = self.deployment["metadata"]
        template = orjson.loads(orjson.dumps(self.spec.get("template") or {}))
        hashed = template_hash(template)
        template.setdefault("metadata", {})["labels"] = {**(template["metadata"].get("labels") or {}),
                                                         HASH_LABEL: hashed}
        selector = orjson.loads(orjson.dumps(self.spec.get("selector") or {}))
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: hashed}
        annotations: dict = {}
        self._copy_annotations(annotations)
        annotations[REVISION] = str(self._new_revision())
        annotations.update(self._replica_annotations())
        spec = {"replicas": replicas, "selector": selector, "template": template}
        if self.spec.get("minReadySeconds"):
            spec["minReadySeconds"] = self.spec["minReadySeconds"]
        body = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": f"{meta['name']}-{hashed}", "namespace": meta["namespace"],
                             "labels": template["metadata"]["labels"], "annotations": annotations,
                             "ownerReferences": [controller_ref(self.deployment)]},
                "spec": spec}
        try:
            created = self.api.create(self.rs_rt, meta["namespace"], body)
        except ApiError as err:
            if err.code != 409:
                message = f'Failed to create new replica set "{body["metadata"]["name"]}": {err.message}'
                self.controller.recorder.event(self.deployment, "Warning", "FailedCreate", message)
            raise
        self.all.append(created)
        self.new = created
        self.created = True
        self.annotations[REVISION] = annotations[REVISION]
        if replicas > 0:
            self.controller.recorder.event(self.deployment, "Normal", "ScalingReplicaSet",
                                           f"Scaled up replica set {created['metadata']['name']} from 0 to {replicas}")

    def _new_replicas(self) -> int:
        """deploymentutil.NewRSNewReplicas: how big the new ReplicaSet may be now."""
        current_new = _replicas(self.new) if self.new is not None else 0
        if (self.spec.get("strategy") or {}).get("type") == "Recreate":
            return self.wanted
        surge, _ = _fenceposts(self.spec)
        current = sum(_replicas(rs) for rs in self.all)
        most = self.wanted + surge
        if current >= most:
            return current_new
        return current_new + min(most - current, self.wanted - current_new)

    # --- scaling --------------------------------------------------------------------------------

    def _replica_annotations(self) -> dict:
        surge, _ = _fenceposts(self.spec)
        return {DESIRED: str(self.wanted), MAX: str(self.wanted + surge)}

    def _update(self, rs: dict, body: dict) -> dict:
        meta = rs["metadata"]
        updated = self.api.update(self.rs_rt, meta["namespace"], meta["name"], body)
        self.all = [updated if r is rs else r for r in self.all]
        if self.new is rs:
            self.new = updated
        return updated

    def _scale_rs(self, rs: dict, size: int) -> dict:
        """Set a ReplicaSet's size and replica annotations; an Event when the size changes."""
        before = _replicas(rs)
        annotations = {**(rs["metadata"].get("annotations") or {}), **self._replica_annotations()}
        if before == size and annotations == (rs["metadata"].get("annotations") or {}):
            return rs
        updated = self._update(rs, {**rs, "metadata": {**rs["metadata"], "annotations": annotations},
                                    "spec": {**rs["spec"], "replicas": size}})
        if before != size:
            way = "up" if size > before else "down"
            self.controller.recorder.event(self.deployment, "Normal", "ScalingReplicaSet",
                                           f"Scaled {way} replica set {rs['metadata']['name']} from {before} to {size}")
        return updated

    def _scaling_event(self) -> bool:
        for rs in self.all:
            desired = (rs["metadata"].get("annotations") or {}).get(DESIRED)
            if _replicas(rs) > 0 and desired is not None and desired != str(self.wanted):
                return True
        return False

    def _scale(self) -> None:
        """DeploymentController.scale: a scaling event (or a paused Deployment) resizes what exists."""
        active = [rs for rs in self.all if _replicas(rs) > 0]
        if len(active) <= 1:
            target = active[0] if active else (self.new or (self.all[-1] if self.all else None))
            if target is not None:
                self._scale_rs(target, self.wanted)
            return
        if self.new is not None and _replicas(self.new) == self.wanted and \
                _status(self.new, "availableReplicas") == self.wanted:
            for rs in active:
                if rs is not self.new:
                    self._scale_rs(rs, 0)
            return
        if (self.spec.get("strategy") or {}).get("type") == "Recreate":
            return
        surge, _ = _fenceposts(self.spec)
        to_add = (self.wanted + surge if self.wanted > 0 else 0) - sum(_replicas(rs) for rs in active)
        # Each gets its share of the change (by the size it had for the max-replicas it was annotated with),
        # the larger first (on a tie: the newer when growing, the older when shrinking); the rest to the first.
        newer_first = to_add > 0
        order = sorted(active, key=lambda rs: rs["metadata"]["creationTimestamp"], reverse=newer_first)
        order.sort(key=lambda rs: -_replicas(rs))
        sizes = {}
        added = 0
        for rs in order:
            share = 0
            if to_add and added != to_add:
                allowed = to_add - added
                share = min(self._fraction(rs), allowed) if to_add > 0 else max(self._fraction(rs), allowed)
            sizes[rs["metadata"]["name"]] = _replicas(rs) + share
            added += share
        if added != to_add:
            name = order[0]["metadata"]["name"]
            sizes[name] = max(sizes[name] + to_add - added, 0)
        for rs in order:
            self._scale_rs(rs, sizes[rs["metadata"]["name"]])

    def _fraction(self, rs: dict) -> int:
        """deploymentutil.getReplicaSetFraction."""
        if self.wanted == 0:
            return -_replicas(rs)
        surge, _ = _fenceposts(self.spec)
        try:
            annotated = int((rs["metadata"].get("annotations") or {})[MAX])
        except (KeyError, ValueError):
            annotated = (self.deployment.get("status") or {}).get("replicas") or 0
        if annotated <= 0:
            return 0
        exact = _replicas(rs) * (self.wanted + surge) / annotated
        return math.floor(exact + 0.5) - _replicas(rs)

    # --- strategies -----------------------------------------------------------------------------

    def _rolling(self) -> None:
        if self.new is None:
            self._create_new(self._new_replicas())
        elif _replicas(self.new) > self.wanted:
            self._scale_rs(self.new, self.wanted)
            return
        elif _replicas(self.new) < self.wanted:
            size = self._new_replicas()
            if size != _replicas(self.new):
                self._scale_rs(self.new, size)
                return
        if self._scale_down_old():
            return
        if self._complete():
            self._clean_up()

    def _scale_down_old(self) -> bool:
        """reconcileOldReplicaSets: shrink the old ones as far as availability allows."""
        if not any(_replicas(rs) for rs in self.old):
            return False
        _, max_unavailable = _fenceposts(self.spec)
        min_available = self.wanted - max_unavailable
        new_unavailable = _replicas(self.new) - _status(self.new, "availableReplicas")
        budget = sum(_replicas(rs) for rs in self.all) - min_available - new_unavailable
        if budget <= 0:
            return False
        scaled = 0
        for rs in list(self.old):  # first their unhealthy pods, oldest ReplicaSet first
            if scaled >= budget:
                break
            unhealthy = _replicas(rs) - _status(rs, "availableReplicas")
            if _replicas(rs) == 0 or unhealthy <= 0:
                continue
            down = min(budget - scaled, unhealthy)
            self._scale_rs(rs, _replicas(rs) - down)
            scaled += down
        available = sum(_status(rs, "availableReplicas") for rs in self.all)
        room = available - min_available
        down_total = 0
        for rs in list(self.old):
            if down_total >= room:
                break
            if _replicas(rs) == 0:
                continue
            down = min(_replicas(rs), room - down_total)
            self._scale_rs(rs, _replicas(rs) - down)
            down_total += down
        return scaled + down_total > 0

    def _recreate(self) -> None:
        scaled = False
        for rs in self.old:
            if _replicas(rs) != 0:
                self._scale_rs(rs, 0)
                scaled = True
        if scaled or self._old_pods_running():
            return
        if self.new is None:
            self._create_new(self.wanted)
        elif _replicas(self.new) != self.wanted:
            self._scale_rs(self.new, self.wanted)
        if self._complete():
            self._clean_up()

    def _old_pods_running(self) -> bool:
        """Any pod of an old ReplicaSet not finished, even one being deleted: Recreate waits for it."""
        for rs in self.old:
            for pod in owned(self.api, rs, PODS):
                if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                    return True
        return False

    def _complete(self) -> bool:
        status = self._counts()
        return (status["updatedReplicas"] == self.wanted and status["replicas"] == self.wanted
                and status["availableReplicas"] == self.wanted)

    def _clean_up(self) -> None:
        """Delete the oldest empty old ReplicaSets beyond revisionHistoryLimit."""
        limit = self.spec.get("revisionHistoryLimit")
        if limit is None:
            return
        alive = sorted((rs for rs in self.old if not rs["metadata"].get("deletionTimestamp")),
                       key=lambda rs: (_revision(rs), rs["metadata"]["creationTimestamp"]))
        for rs in alive[:max(len(alive) - limit, 0)]:
            if _status(rs, "replicas") or _replicas(rs) or \
                    rs["metadata"].get("generation", 1) > _status(rs, "observedGeneration"):
                continue
            meta = rs["metadata"]
            self.api.delete(self.rs_rt, meta["namespace"], meta["name"], {"preconditions": {"uid": meta["uid"]}})

    # --- status ---------------------------------------------------------------------------------

    def _counts(self) -> dict:
        available = sum(_status(rs, "availableReplicas") for rs in self.all)
        return {"replicas": sum(_status(rs, "replicas") for rs in self.all),
                "updatedReplicas": _status(self.new, "replicas") if self.new is not None else 0,
                "readyReplicas": sum(_status(rs, "readyReplicas") for rs in self.all),
                "availableReplicas": available,
                "unavailableReplicas": max(sum(_replicas(rs) for rs in self.all) - available, 0)}

    def write_status(self) -> None:
        counts = self._counts()
        old = self.deployment.get("status") or {}
        status: dict = {"observedGeneration": self.deployment["metadata"].get("generation", 1)}
        status.update({k: v for k, v in counts.items() if v})
        # A pointer in 1.35 (DeploymentReplicaSetTerminatingReplicas, beta): the sum, once every ReplicaSet has one.
        terminating = [(rs.get("status") or {}).get("terminatingReplicas") for rs in self.all]
        if None not in terminating:
            status["terminatingReplicas"] = sum(terminating)
        if old.get("collisionCount"):
            status["collisionCount"] = old["collisionCount"]
        status["conditions"] = self._conditions(old, counts)
        meta = self.deployment["metadata"]
        if status != old or self.annotations != (meta.get("annotations") or {}):
            current = self.api.store.get(DEPLOYMENTS, (meta["namespace"], meta["name"]))
            if current is None or current["metadata"]["resourceVersion"] != meta["resourceVersion"]:
                return  # changed meanwhile: its event syncs again
            rt = self.api.registry.get("apps", "v1", "deployments")
            self.api.system_write(rt, {**self.deployment, "metadata": {**meta, "annotations": self.annotations},
                                       "status": status}, MANAGER, "status")

    def _conditions(self, old_status: dict, counts: dict) -> list[dict]:
        old = old_status.get("conditions") or []
        _, max_unavailable = _fenceposts(self.spec)
        if counts["availableReplicas"] >= self.wanted - max_unavailable:
            available = _condition("Available", "True", "MinimumReplicasAvailable",
                                   "Deployment has minimum availability.", old)
        else:
            available = _condition("Available", "False", "MinimumReplicasUnavailable",
                                   "Deployment does not have minimum availability.", old)
        name = self.new["metadata"]["name"] if self.new is not None else \
            f"{self.deployment['metadata']['name']}-{template_hash(self.spec.get('template') or {})}"
        previous = next((c for c in old if c.get("type") == "Progressing"), None)
        if self.spec.get("paused"):
            progressing = _condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", old)
        elif self._complete():
            progressing = _condition("Progressing", "True", "NewReplicaSetAvailable",
                                     f'ReplicaSet "{name}" has successfully progressed.', old)
        elif self.created:
            progressing = _condition("Progressing", "True", "NewReplicaSetCreated",
                                     f'Created new replica set "{name}"', old)
            self.controller.queue.later(obj_key(self.deployment), self.spec.get("progressDeadlineSeconds", 600))
        elif previous is not None and previous.get("reason") == "DeploymentPaused":
            progressing = _condition("Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed", old)
        else:
            progressing = self._progressing(name, previous, old, counts, old_status)
        conditions = list(old)
        for condition in (available, progressing):
            # SetDeploymentCondition: a condition that changes is moved to the end of the list.
            if condition not in conditions:
                conditions = [c for c in conditions if c.get("type") != condition["type"]] + [condition]
        return conditions

    def _progressing(self, name: str, previous: dict | None, old: list, counts: dict, old_status: dict) -> dict:
        """Progress is a change of the counts; without one for progressDeadlineSeconds, the deadline is exceeded."""
        key = obj_key(self.deployment)
        moved = previous is None or previous.get("reason") == "NewReplicaSetAvailable" or any(
            (old_status.get(k) or 0) != v for k, v in counts.items())
        if not moved and previous.get("reason") == "ProgressDeadlineExceeded":
            return previous
        since = 0.0 if moved else seconds_since(previous.get("lastUpdateTime"))
        deadline = self.spec.get("progressDeadlineSeconds", 600)
        if since >= deadline:
            return _condition("Progressing", "False", "ProgressDeadlineExceeded",
                              f'ReplicaSet "{name}" has timed out progressing.', old)
        self.controller.queue.later(key, deadline - since)
        if previous is not None and previous.get("reason") in ("NewReplicaSetCreated", "DeploymentResumed") and \
                not moved:
            return previous
        fresh = _condition("Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.', old)
        if moved:
            fresh["lastUpdateTime"] = now_rfc3339()
        return fresh
