"""A replica's record, the controller's durable memory of it (restart counts, which pod uid was already retired),
kept in the job's status where the kind's `StatusCodec` says (status_codec.py), and the counts made from records.

A record is never changed in place: its transitions return new ones, and a record read from a stored status has
every field whatever wrote it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from controller.jobs.decisions import waiting as waits
from controller.jobs.decisions.pod_state import container_states, pod_ready

# Replica phases besides the pod phases (Pending, Running, Succeeded, Failed, Unknown).
CREATING = "Creating"  # the pod is to be created, or was created but not seen yet
DELETED = "Deleted"  # the controller deleted the pod (pause, clean-up), or it is gone after the job ended
FINISHED = frozenset({"Succeeded", "Failed"})
UP = frozenset({"Running", "Succeeded", "Failed"})  # what "every replica is running or finished" counts
AGGREGATE_KEYS = ("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted")


@dataclass(slots=True)
class Replica:
    """One replica's record: what a later reconcile must know of it, kept in the job's status (where,
    the kind's StatusCodec says, e.g. status.tasks[].replicas[], with the JSON names of `to_json`).

    `uid` is the replica's current pod ("" while none is known); `last_restart_uid` the last pod the
    controller retired (restarted, or deleted for pause): restart.py says why both make restarts safe.
    A record is never changed in place: the transitions below return new ones. (It is not a frozen
    dataclass because a frozen one takes twice as long to make, and a reconcile makes several per replica.)"""

    name: str
    uid: str = ""
    phase: str = CREATING
    containers: tuple[dict, ...] = ()  # {name, state, exitCode} per container of the current pod
    restart_count: int = 0
    last_restart_uid: str = ""
    # Restart back-off (backoff.py): when the last restart was counted, and how many quick ones in a row.
    last_restart_time: str = ""
    restart_streak: int = 0
    # The current pod was Running and Ready when last observed (pod_ready); it counts only while the record's
    # phase is Running (`is_ready`), and is stored as `ready: true` only then.
    ready: bool = False
    # What the current pod waits for and cannot get ({reason, message}: waiting.py), as first seen; None: nothing.
    waiting: dict | None = None
    # The current pod is a debug pod (restart.Slot.debug): should it vanish, its loss counts nothing.
    debug: bool = False
    # A rank scaled away (the spec's "Removed ranks"): kept Deleted after its type's ranks, and told apart from a rank
    # the pause retired, Deleted too, whose pod's outcome may still be judged (slots.gather_slots).
    removed: bool = False

    @property
    def is_ready(self) -> bool:
        return self.ready and self.phase == "Running"

    def to_json(self) -> dict:
        out = {"name": self.name, "uid": self.uid, "phase": self.phase, "containers": list(self.containers),
               "restartCount": self.restart_count}
        if self.last_restart_uid:  # only once a pod was retired: "" would say nothing
            out["lastRestartUid"] = self.last_restart_uid
        if self.last_restart_time:  # only once restarted: a record of a replica never restarted stays as it was
            out["lastRestartTime"] = self.last_restart_time
        if self.last_restart_time or self.restart_streak:
            # Apart from the time too: a pause retires the pod (no back-off owed by its next one) and keeps the
            # workload's streak of quick failures for the next restart; a debug session's is forgotten (restart.pause).
            out["restartStreak"] = self.restart_streak
        if self.is_ready:
            out["ready"] = True
        if self.waiting:
            out["waiting"] = self.waiting
        if self.debug:  # only for a debug pod: a record of the workload's stays as it was
            out["debug"] = True
        if self.removed:
            out["removed"] = True
        return out

    def _with(self, uid: str, phase: str, containers: tuple[dict, ...], last_restart_uid: str,
              ready: bool = False, waiting: dict | None = None) -> Replica:
        return Replica(self.name, uid, phase, containers, self.restart_count, last_restart_uid,
                       self.last_restart_time, self.restart_streak, ready, waiting, self.debug and uid == self.uid,
                       self.removed)

    def in_phase(self, phase: str) -> Replica:
        containers = self.containers
        if phase == DELETED:  # its pod is deleted: a container last seen running or waiting is neither any more
            containers = tuple(c if c.get("state") == "terminated" else {**c, "state": "deleted"} for c in containers)
        return self._with(self.uid, phase, containers, self.last_restart_uid, self.ready, self.waiting)

    def counted(self, now: str = "", *, streak: int) -> Replica:
        """A restart counted at `now` (the `streak`-th quick one in a row; "": a pause's, whose pod is retired at
        once), and the current pod retired with it: not ready any more, whatever it was."""
        return Replica(self.name, self.uid, self.phase, self.containers, self.restart_count + 1, self.uid,
                       now, streak, removed=self.removed)

    def retired(self) -> Replica:
        """The current pod retired without counting a restart (policy Never's lost pod, pause): its
        replacement owes nothing to the back-off. A retired pod is not ready, whatever it was."""
        return Replica(self.name, self.uid, self.phase, self.containers, self.restart_count,
                       self.uid or self.last_restart_uid, "", self.restart_streak, removed=self.removed)

    def awaiting(self) -> Replica:
        """A new pod is to be created for the replica."""
        return self._with("", CREATING, (), self.last_restart_uid)


def blank_record(name: str) -> Replica:
    """A replica with no pod yet."""
    return Replica(name)


def read_record(raw: dict | None, name: str) -> Replica:
    """A record from a stored status, with every field present whatever wrote it."""
    raw = raw or {}
    return Replica(name, raw.get("uid") or "", raw.get("phase") or CREATING, tuple(raw.get("containers") or ()),
                   int(raw.get("restartCount") or 0), raw.get("lastRestartUid") or "", raw.get("lastRestartTime") or "",
                   int(raw.get("restartStreak") or 0), raw.get("ready") is True,
                   raw.get("waiting") if isinstance(raw.get("waiting"), dict) else None, raw.get("debug") is True,
                   raw.get("removed") is True)


def observed(record: Replica, pod: dict) -> Replica:
    """The record describing `pod` as the replica's current pod."""
    # pod_uid, pod_phase, container_states and pod_ready, reading the pod once: a plan observes every replica.
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    containers = tuple(container_states(pod)) if status.get("containerStatuses") else ()
    ready = phase == "Running" and pod_ready(pod)
    waiting = record.waiting
    seen = waits.cause(pod) if phase == "Pending" else None  # (cause() looks at Pending pods only)
    if waiting or seen:
        waiting = waits.kept(waiting, seen)
    return Replica(record.name, pod["metadata"].get("uid") or "", phase, containers, record.restart_count,
                   record.last_restart_uid, record.last_restart_time, record.restart_streak, ready, waiting,
                   removed=record.removed)


def aggregate(records: Iterable[Replica]) -> dict:
    counts = dict.fromkeys(AGGREGATE_KEYS, 0)
    for record in records:
        key = record.phase.lower()
        counts[key if key in counts else "unknown"] += 1
    return counts


def replica_counts(records: list[Replica]) -> dict:
    """The counts every kind reports: `aggregate` (replicas by phase), `readyReplicas` (replicas whose pod is
    Running and Ready: pod_ready) and `ready`, the same as "ready/total" for kubectl's READY column, as a
    Deployment shows it (a printer column is one JSONPath, so the pair must be one field)."""
    ready = sum(1 for record in records if record.is_ready)
    return {"aggregate": aggregate(records), "readyReplicas": ready, "ready": f"{ready}/{len(records)}"}
