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

import logging
import math

import orjson

from ..api import DEPLOYMENTS, REPLICA_SETS
from ..errors import ApiError
from ..storage.store import DELETED, Event, obj_key
from . import deployment_util as util
from .workloads import (
    MANAGER,
    PODS,
    Key,
    WorkloadController,
    as_controller,
    claim,
    controller_of,
    controller_ref,
    has_controller,
    owned,
    selects,
)

log = logging.getLogger("localcluster.deployments")

COMPONENT = "deployment-controller"


class DeploymentController(WorkloadController):
    COMPONENT = COMPONENT

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
        self.rs_rt = self.api.registry.builtin("apps", "v1", "replicasets")
        self.all = sorted(claim(self.api, deployment, self.rs_rt),
                          key=lambda rs: (rs["metadata"]["creationTimestamp"], rs["metadata"]["name"]))
        template = util.semantic(self.spec.get("template") or {})
        found = [rs for rs in self.all
                 if util.semantic(util.without_hash((rs.get("spec") or {}).get("template") or {})) == template]
        self.new: dict | None = found[0] if found else None  # the oldest, as FindNewReplicaSet
        self.created = False

    @property
    def old(self) -> list[dict]:
        return [rs for rs in self.all if rs is not self.new]

    def run(self) -> None:
        if self.new is not None:
            self._sync_new(self.new)
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
        return max((util.revision(rs) for rs in self.old), default=0) + 1

    def _copy_annotations(self, annotations: dict) -> bool:
        changed = False
        for k, v in self.annotations.items():
            if k not in util.NOT_COPIED and annotations.get(k) != v:
                annotations[k] = v
                changed = True
        return changed

    def _sync_new(self, rs: dict) -> None:
        """An existing new ReplicaSet: the Deployment's annotations, a revision above every old one's (the
        revision it had kept in revision-history: a rollback), minReadySeconds."""
        annotations = dict(rs["metadata"].get("annotations") or {})
        changed = self._copy_annotations(annotations)
        revision = self._new_revision()
        if util.revision(rs) < revision:
            if util.REVISION in annotations:
                history = [r for r in annotations.get(util.REVISION_HISTORY, "").split(",") if r]
                history.append(annotations[util.REVISION])
                while len(",".join(history)) > util.REVISION_HISTORY_CHARS:
                    history.pop(0)
                annotations[util.REVISION_HISTORY] = ",".join(history)
            annotations[util.REVISION] = str(revision)
            changed = True
        min_ready = self.spec.get("minReadySeconds") or 0
        if changed or (rs["spec"].get("minReadySeconds") or 0) != min_ready:
            spec = {**rs["spec"], "minReadySeconds": min_ready} if min_ready else \
                {k: v for k, v in rs["spec"].items() if k != "minReadySeconds"}
            rs = self._update(rs, {**rs, "metadata": {**rs["metadata"], "annotations": annotations}, "spec": spec})
        self.annotations[util.REVISION] = (rs["metadata"].get("annotations") or {})[util.REVISION]

    def _create_new(self, replicas: int) -> None:
        meta = self.deployment["metadata"]
        template = orjson.loads(orjson.dumps(self.spec.get("template") or {}))
        hashed = util.template_hash(template)
        template.setdefault("metadata", {})["labels"] = {**(template["metadata"].get("labels") or {}),
                                                         util.HASH_LABEL: hashed}
        selector = orjson.loads(orjson.dumps(self.spec.get("selector") or {}))
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), util.HASH_LABEL: hashed}
        annotations: dict = {}
        self._copy_annotations(annotations)
        annotations[util.REVISION] = str(self._new_revision())
        annotations.update(self._replica_annotations())
        spec = {"replicas": replicas, "selector": selector, "template": template}
        if self.spec.get("minReadySeconds"):
            spec["minReadySeconds"] = self.spec["minReadySeconds"]
        body: dict = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
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
        self.annotations[util.REVISION] = annotations[util.REVISION]
        if replicas > 0:
            self.controller.recorder.event(self.deployment, "Normal", "ScalingReplicaSet",
                                           f"Scaled up replica set {created['metadata']['name']} from 0 to {replicas}")

    def _new_replicas(self) -> int:
        """deploymentutil.NewRSNewReplicas: how big the new ReplicaSet may be now."""
        current_new = util.replicas(self.new) if self.new is not None else 0
        if (self.spec.get("strategy") or {}).get("type") == "Recreate":
            return self.wanted
        surge, _ = util.fenceposts(self.spec)
        current = sum(util.replicas(rs) for rs in self.all)
        most = self.wanted + surge
        if current >= most:
            return current_new
        return current_new + min(most - current, self.wanted - current_new)

    # --- scaling --------------------------------------------------------------------------------

    def _replica_annotations(self) -> dict:
        surge, _ = util.fenceposts(self.spec)
        return {util.DESIRED: str(self.wanted), util.MAX: str(self.wanted + surge)}

    def _update(self, rs: dict, body: dict) -> dict:
        meta = rs["metadata"]
        updated = self.api.update(self.rs_rt, meta["namespace"], meta["name"], body)
        self.all = [updated if r is rs else r for r in self.all]
        if self.new is rs:
            self.new = updated
        return updated

    def _scale_rs(self, rs: dict, size: int) -> dict:
        """Set a ReplicaSet's size and replica annotations; an Event when the size changes."""
        before = util.replicas(rs)
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
            desired = (rs["metadata"].get("annotations") or {}).get(util.DESIRED)
            if util.replicas(rs) > 0 and desired is not None and desired != str(self.wanted):
                return True
        return False

    def _scale(self) -> None:
        """DeploymentController.scale: a scaling event (or a paused Deployment) resizes what exists."""
        active = [rs for rs in self.all if util.replicas(rs) > 0]
        if len(active) <= 1:
            target = active[0] if active else (self.new or (self.all[-1] if self.all else None))
            if target is not None:
                self._scale_rs(target, self.wanted)
            return
        if self.new is not None and util.replicas(self.new) == self.wanted and \
                util.status(self.new, "availableReplicas") == self.wanted:
            for rs in active:
                if rs is not self.new:
                    self._scale_rs(rs, 0)
            return
        if (self.spec.get("strategy") or {}).get("type") == "Recreate":
            return
        surge, _ = util.fenceposts(self.spec)
        to_add = (self.wanted + surge if self.wanted > 0 else 0) - sum(util.replicas(rs) for rs in active)
        # Each gets its share of the change (by the size it had for the max-replicas it was annotated with),
        # the larger first (on a tie: the newer when growing, the older when shrinking); the rest to the first.
        newer_first = to_add > 0
        order = sorted(active, key=lambda rs: rs["metadata"]["creationTimestamp"], reverse=newer_first)
        order.sort(key=lambda rs: -util.replicas(rs))
        sizes = {}
        added = 0
        for rs in order:
            share = 0
            if to_add and added != to_add:
                allowed = to_add - added
                share = min(self._fraction(rs), allowed) if to_add > 0 else max(self._fraction(rs), allowed)
            sizes[rs["metadata"]["name"]] = util.replicas(rs) + share
            added += share
        if added != to_add:
            name = order[0]["metadata"]["name"]
            sizes[name] = max(sizes[name] + to_add - added, 0)
        for rs in order:
            self._scale_rs(rs, sizes[rs["metadata"]["name"]])

    def _fraction(self, rs: dict) -> int:
        """deploymentutil.getReplicaSetFraction."""
        if self.wanted == 0:
            return -util.replicas(rs)
        surge, _ = util.fenceposts(self.spec)
        try:
            annotated = int((rs["metadata"].get("annotations") or {})[util.MAX])
        except (KeyError, ValueError):
            annotated = (self.deployment.get("status") or {}).get("replicas") or 0
        if annotated <= 0:
            return 0
        exact = util.replicas(rs) * (self.wanted + surge) / annotated
        return math.floor(exact + 0.5) - util.replicas(rs)

    # --- strategies -----------------------------------------------------------------------------

    def _rolling(self) -> None:
        if self.new is None:
            self._create_new(self._new_replicas())
        elif util.replicas(self.new) > self.wanted:
            self._scale_rs(self.new, self.wanted)
            return
        elif util.replicas(self.new) < self.wanted:
            size = self._new_replicas()
            if size != util.replicas(self.new):
                self._scale_rs(self.new, size)
                return
        if self._scale_down_old():
            return
        if self._complete():
            self._clean_up()

    def _scale_down_old(self) -> bool:
        """reconcileOldReplicaSets: shrink the old ones as far as availability allows."""
        if not any(util.replicas(rs) for rs in self.old):
            return False
        _, max_unavailable = util.fenceposts(self.spec)
        min_available = self.wanted - max_unavailable
        new = self.new
        new_unavailable = util.replicas(new) - util.status(new, "availableReplicas") if new is not None else 0
        budget = sum(util.replicas(rs) for rs in self.all) - min_available - new_unavailable
        if budget <= 0:
            return False
        scaled = 0
        for rs in list(self.old):  # first their unhealthy pods, oldest ReplicaSet first
            if scaled >= budget:
                break
            unhealthy = util.replicas(rs) - util.status(rs, "availableReplicas")
            if util.replicas(rs) == 0 or unhealthy <= 0:
                continue
            down = min(budget - scaled, unhealthy)
            self._scale_rs(rs, util.replicas(rs) - down)
            scaled += down
        available = sum(util.status(rs, "availableReplicas") for rs in self.all)
        room = available - min_available
        down_total = 0
        for rs in list(self.old):
            if down_total >= room:
                break
            if util.replicas(rs) == 0:
                continue
            down = min(util.replicas(rs), room - down_total)
            self._scale_rs(rs, util.replicas(rs) - down)
            down_total += down
        return scaled + down_total > 0

    def _recreate(self) -> None:
        scaled = False
        for rs in self.old:
            if util.replicas(rs) != 0:
                self._scale_rs(rs, 0)
                scaled = True
        if scaled or self._old_pods_running():
            return
        if self.new is None:
            self._create_new(self.wanted)
        elif util.replicas(self.new) != self.wanted:
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

    def _clean_up(self) -> None:
        """Delete the oldest empty old ReplicaSets beyond revisionHistoryLimit."""
        limit = self.spec.get("revisionHistoryLimit")
        if limit is None:
            return
        alive = sorted((rs for rs in self.old if not rs["metadata"].get("deletionTimestamp")),
                       key=lambda rs: (util.revision(rs), rs["metadata"]["creationTimestamp"]))
        for rs in alive[:max(len(alive) - limit, 0)]:
            if util.status(rs, "replicas") or util.replicas(rs) or \
                    rs["metadata"].get("generation", 1) > util.status(rs, "observedGeneration"):
                continue
            meta = rs["metadata"]
            self.api.delete(self.rs_rt, meta["namespace"], meta["name"], {"preconditions": {"uid": meta["uid"]}})

    # --- status ---------------------------------------------------------------------------------

    def _complete(self) -> bool:
        return util.complete(self.spec, util.counts(self.all, self.new))

    def write_status(self) -> None:
        found = util.counts(self.all, self.new)
        old = self.deployment.get("status") or {}
        status: dict = {"observedGeneration": self.deployment["metadata"].get("generation", 1)}
        status.update({k: v for k, v in found.items() if v})
        # A pointer in 1.35 (DeploymentReplicaSetTerminatingReplicas, beta): the sum, once every ReplicaSet has one.
        terminating = [(rs.get("status") or {}).get("terminatingReplicas") for rs in self.all]
        if None not in terminating:
            status["terminatingReplicas"] = sum(terminating)
        if old.get("collisionCount"):
            status["collisionCount"] = old["collisionCount"]
        name = self.new["metadata"]["name"] if self.new is not None else \
            f"{self.deployment['metadata']['name']}-{util.template_hash(self.spec.get('template') or {})}"
        status["conditions"], recheck = util.conditions(self.spec, old, found, name, self.created)
        if recheck:
            self.controller.queue.later(obj_key(self.deployment), recheck)
        meta = self.deployment["metadata"]
        if status != old or self.annotations != (meta.get("annotations") or {}):
            current = self.api.store.get(DEPLOYMENTS, (meta["namespace"], meta["name"]))
            if current is None or current["metadata"]["resourceVersion"] != meta["resourceVersion"]:
                return  # changed meanwhile: its event syncs again
            rt = self.api.registry.builtin("apps", "v1", "deployments")
            self.api.system_write(rt, {**self.deployment, "metadata": {**meta, "annotations": self.annotations},
                                       "status": status}, MANAGER, "status")
