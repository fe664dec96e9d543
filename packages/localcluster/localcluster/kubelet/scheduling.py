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

from collections import defaultdict

from ..storage.store import ADDED, DELETED, MODIFIED, Event, obj_key

PODS = ("", "pods")
CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
DEFAULT_SCHEDULER = "default-scheduler"
GANG_SCHEDULER = "t9k-scheduler"
PODGROUP_GROUP = "scheduler.tensorstack.dev"
PODGROUPS = (PODGROUP_GROUP, "podgroups")
PODGROUP_CRD = f"podgroups.{PODGROUP_GROUP}"
GROUP_NAME = f"{PODGROUP_GROUP}/group-name"


class Schedulers:
    """Told every store event; answers the unbound pods a scheduler binds now (each pod once).

    The gangs are indexed as the events come (live members and waiting ones by (namespace, group)), so a
    group of thousands of pods is never rescanned for each of its pods."""

    def __init__(self, store) -> None:
        self.store = store
        self._bound: set[str] = set()  # uids of pods already handed out for binding
        self._live: dict[tuple[str, str], set[str]] = defaultdict(set)  # a gang's members not deleting, not Failed
        self._waiting: dict[tuple[str, str], dict[str, tuple[str, str]]] = defaultdict(dict)  # unbound: uid -> key
        self._gang_of: dict[str, tuple[str, str]] = {}  # member uid -> its gang

    def on_event(self, ev: Event) -> list[dict]:
        if ev.key == PODS:
            gang = self._track(ev)
            if ev.type != ADDED or ev.obj["spec"].get("nodeName"):
                return []
            name = ev.obj["spec"].get("schedulerName") or DEFAULT_SCHEDULER
            if name == DEFAULT_SCHEDULER:
                return self._take([ev.obj])
            if gang is not None and self._gangs_served():
                return self._gang(gang)
            return []
        if ev.key == PODGROUPS and ev.type in (ADDED, MODIFIED) and self._gangs_served():
            return self._gang(obj_key(ev.obj))
        if ev.key == CRDS and ev.type == ADDED and ev.obj["metadata"]["name"] == PODGROUP_CRD:
            return [pod for gang in sorted(self._waiting) for pod in self._gang(gang)]
        return []

    def _track(self, ev: Event) -> tuple[str, str] | None:
        """Keep the gang index up to date with a pod's event; the pod's gang, if it is a live member of one."""
        pod, uid = ev.obj, ev.obj["metadata"]["uid"]
        old = self._gang_of.pop(uid, None)
        if old is not None:
            self._live[old].discard(uid)
            self._waiting[old].pop(uid, None)
            for index in (self._live, self._waiting):
                if not index[old]:
                    del index[old]
        if ev.type == DELETED:
            self._bound.discard(uid)
            return None
        group = _group_of(pod)
        if pod["spec"].get("schedulerName") != GANG_SCHEDULER or group is None \
                or pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("phase") == "Failed":
            return None
        gang = self._gang_of[uid] = (pod["metadata"].get("namespace") or "", group)
        self._live[gang].add(uid)
        if not pod["spec"].get("nodeName") and uid not in self._bound:
            self._waiting[gang][uid] = obj_key(pod)
        return gang

    def _gangs_served(self) -> bool:
        return self.store.get(CRDS, ("", PODGROUP_CRD)) is not None

    def _gang(self, gang: tuple[str, str]) -> list[dict]:
        """The gang's unbound pods, if it now has the live pods its PodGroup's minMember asks for; else none."""
        podgroup = self.store.get(PODGROUPS, gang)
        waiting = self._waiting.get(gang)
        if podgroup is None or not waiting:
            return []
        if len(self._live.get(gang, ())) < int((podgroup.get("spec") or {}).get("minMember") or 0):
            return []
        pods = [pod for uid, key in waiting.items()
                if (pod := self.store.get(PODS, key)) is not None and pod["metadata"]["uid"] == uid]
        del self._waiting[gang]
        return self._take(pods)

    def _take(self, pods: list[dict]) -> list[dict]:
        fresh = [p for p in pods if p["metadata"]["uid"] not in self._bound]
        self._bound.update(p["metadata"]["uid"] for p in fresh)
        return fresh


def _group_of(pod: dict) -> str | None:
    return (pod["metadata"].get("annotations") or {}).get(GROUP_NAME)
