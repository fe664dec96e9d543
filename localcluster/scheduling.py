"""Which scheduler takes an unbound pod, and when: the default scheduler, T9k Scheduler's gangs, or none.

A pod names its scheduler in `spec.schedulerName` (admission defaults it to `default-scheduler`).
On a real cluster every scheduler watches only the pods that name it, so a pod naming a scheduler the
cluster does not run is never bound: it stays Pending with no PodScheduled condition and no Event
(`kubectl describe pod` shows `Events: <none>`). localcluster runs two schedulers:

- `default-scheduler`: binds every pod that names it at once (runner.py and process_runner.py then run it);
- `t9k-scheduler` (only while the PodGroup CRD, podgroups.scheduler.tensorstack.dev, is installed): a gang
  scheduler. A pod names its PodGroup in the annotation `scheduler.tensorstack.dev/group-name`; the group's
  pods are bound all together once the group has at least `spec.minMember` live pods (not deleting, not
  Failed; a Succeeded or running member counts, as Volcano's gang plugin counts ready tasks), none before.
  A pod whose PodGroup does not exist waits for it. Waiting pods are left as they are (no condition, no
  Event): a gang scheduler's words for a waiting gang are its own, and the controller must not take a gang
  forming pod by pod for a replica that cannot be scheduled.

Every other scheduler name leaves the pod Pending, as above. Pods created already bound (`spec.nodeName`)
never meet a scheduler.
"""

from __future__ import annotations

from .store import ADDED, DELETED, MODIFIED, Event, obj_key

PODS = ("", "pods")
CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
DEFAULT_SCHEDULER = "default-scheduler"
GANG_SCHEDULER = "t9k-scheduler"
PODGROUP_GROUP = "scheduler.tensorstack.dev"
PODGROUPS = (PODGROUP_GROUP, "podgroups")
PODGROUP_CRD = f"podgroups.{PODGROUP_GROUP}"
GROUP_NAME = f"{PODGROUP_GROUP}/group-name"


class Schedulers:
    """Told every store event; answers the unbound pods a scheduler binds now (each pod once)."""

    def __init__(self, store) -> None:
        self.store = store
        self._bound: set[str] = set()  # uids of pods already handed out for binding

    def on_event(self, ev: Event) -> list[dict]:
        if ev.key == PODS:
            if ev.type == DELETED:
                self._bound.discard(ev.obj["metadata"]["uid"])
                return []
            if ev.type != ADDED or ev.obj["spec"].get("nodeName"):
                return []
            name = ev.obj["spec"].get("schedulerName") or DEFAULT_SCHEDULER
            if name == DEFAULT_SCHEDULER:
                return self._take([ev.obj])
            if name == GANG_SCHEDULER and self._gangs_served():
                return self._gang(ev.obj["metadata"].get("namespace") or "", _group_of(ev.obj))
            return []
        if ev.key == PODGROUPS and ev.type in (ADDED, MODIFIED) and self._gangs_served():
            namespace, name = obj_key(ev.obj)
            return self._gang(namespace, name)
        if ev.key == CRDS and ev.type == ADDED and ev.obj["metadata"]["name"] == PODGROUP_CRD:
            groups = {(obj_key(p)[0], _group_of(p)) for p in self.store.objects(PODS) if _waits_for_gang(p)}
            return [pod for namespace, group in sorted(groups) for pod in self._gang(namespace, group)]
        return []

    def _gangs_served(self) -> bool:
        return self.store.get(CRDS, ("", PODGROUP_CRD)) is not None

    def _gang(self, namespace: str, group: str | None) -> list[dict]:
        """The group's unbound pods, if the group now has the live pods its minMember asks for; else none."""
        podgroup = self.store.get(PODGROUPS, (namespace, group)) if group else None
        if podgroup is None:
            return []
        members = [p for p in self.store.objects(PODS, namespace)
                   if _group_of(p) == group and (p["spec"].get("schedulerName") == GANG_SCHEDULER)
                   and not p["metadata"].get("deletionTimestamp")
                   and (p.get("status") or {}).get("phase") != "Failed"]
        min_member = int((podgroup.get("spec") or {}).get("minMember") or 0)
        if len(members) < min_member:
            return []
        return self._take([p for p in members if _waits_for_gang(p)])

    def _take(self, pods: list[dict]) -> list[dict]:
        fresh = [p for p in pods if p["metadata"]["uid"] not in self._bound]
        self._bound.update(p["metadata"]["uid"] for p in fresh)
        return fresh


def _group_of(pod: dict) -> str | None:
    return (pod["metadata"].get("annotations") or {}).get(GROUP_NAME)


def _waits_for_gang(pod: dict) -> bool:
    return (pod["spec"].get("schedulerName") == GANG_SCHEDULER and not pod["spec"].get("nodeName")
            and _group_of(pod) is not None and not pod["metadata"].get("deletionTimestamp"))
