"""A job's status, for every kind: per-replica records, conditions, aggregate counts and phase.

The status is the controller's durable memory: everything a later reconcile must know (restart
counts, which pod uid was already retired) lives in the per-replica records, which each kind keeps
where its API says (its `StatusCodec`; most use `TasksStatus`, the per-type codec at the end of this
module). Every function here is pure and deterministic: given the same inputs it returns an equal dict,
so a reconcile that observes nothing new writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from controller.jobs.decisions import waiting as waits
from controller.jobs.kind import StatusCodec
from controller.jobs.schema.api import JobPhase

# Replica phases besides the pod phases (Pending, Running, Succeeded, Failed, Unknown).
CREATING = "Creating"  # the pod is to be created, or was created but not seen yet
DELETED = "Deleted"  # the controller deleted the pod (pause, clean-up), or it is gone after the job ended
FINISHED = frozenset({"Succeeded", "Failed"})
UP = frozenset({"Running", "Succeeded", "Failed"})  # what "every replica is running or finished" counts
AGGREGATE_KEYS = ("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted")

# Condition types, in the order they are listed in the status.
INITIALIZED = "Initialized"
RUNNING = "Running"
REPLICA_FAILURE = "ReplicaFailure"
COMPLETED = "Completed"
FAILED = "Failed"
PAUSED = "Paused"

NAMES_SHOWN = 5  # replicas named in a condition message, so the status stays small with many replicas


# --- pods -------------------------------------------------------------------------------------


def pod_uid(pod: dict) -> str:
    return pod["metadata"].get("uid") or ""


def pod_phase(pod: dict) -> str:
    # A pod the kubelet has not reported on yet has no phase: it is pending.
    return (pod.get("status") or {}).get("phase") or "Pending"


def is_terminating(pod: dict) -> bool:
    """A delete is already under way: asking again would only repeat it."""
    return bool(pod["metadata"].get("deletionTimestamp"))


def pod_ready(pod: dict) -> bool:
    """The pod is Running and Ready (its Ready condition True), or Running with no readiness reported at
    all (a kubelet that writes no conditions): what a replica must be to count in READY, as a
    Deployment's READY counts its pods."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    ready = find_condition(status.get("conditions") or (), "Ready")
    return ready is None or ready.get("status") == "True"


def container_states(pod: dict) -> list[dict]:
    """`{name, state, exitCode}` per container, from the pod's containerStatuses."""
    states = []
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        state = status.get("state") or {}
        entry = {"name": status.get("name") or ""}
        if state.get("terminated") is not None:
            entry["state"] = "terminated"
            entry["exitCode"] = state["terminated"].get("exitCode")
        elif state.get("running") is not None:
            entry["state"] = "running"
        else:
            entry["state"] = "waiting"
        states.append(entry)
    return states


# --- replica records --------------------------------------------------------------------------


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


# --- counts ------------------------------------------------------------------------------------


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


# --- conditions -------------------------------------------------------------------------------


def find_condition(conditions: Iterable[dict], condition_type: str) -> dict | None:
    for condition in conditions:  # a loop, not next() over a generator: a plan asks some fifteen times
        if condition.get("type") == condition_type:
            return condition
    return None


def set_condition(conditions: list[dict], condition_type: str, status: bool, reason: str, message: str,
                  now: str) -> list[dict]:
    """A copy of `conditions` with one condition set. lastTransitionTime moves only when the status
    flips, so `kubectl wait` and users see when things changed, not when they were last looked at."""
    value = "True" if status else "False"
    old = find_condition(conditions, condition_type)
    since = old.get("lastTransitionTime") if old and old.get("status") == value else None
    new = {"type": condition_type, "status": value, "reason": reason, "message": message,
           "lastTransitionTime": since or now}
    if old is None:
        return [*conditions, new]
    return [new if c is old else c for c in conditions]


def is_true(conditions: Iterable[dict], condition_type: str) -> bool:
    condition = find_condition(conditions, condition_type)
    return bool(condition and condition.get("status") == "True")


def _names(records: list[Replica]) -> str:
    names = ", ".join(r.name for r in records[:NAMES_SHOWN])
    hidden = len(records) - NAMES_SHOWN
    return f"{names} and {hidden} more" if hidden > 0 else names


def progress_conditions(conditions: list[dict], *, phase: str, records: list[Replica], now: str) -> list[dict]:
    """Initialized, Running and ReplicaFailure, from the replica records and the new phase."""
    if is_true(conditions, INITIALIZED) or all(r.uid for r in records):
        # Sticky: once every replica has had a pod, restarts and pauses do not un-initialize the job.
        conditions = set_condition(conditions, INITIALIZED, True, "PodsCreated",
                                   "The job has been initialized successfully.", now)
    else:
        conditions = set_condition(conditions, INITIALIZED, False, "CreatingPods",
                                   "The job's pods are being created.", now)
    if phase == JobPhase.RUNNING:
        conditions = set_condition(conditions, RUNNING, True, "Running", "The job is running.", now)
    else:
        conditions = set_condition(conditions, RUNNING, False, str(phase), _not_running[phase], now)
    failed = [r for r in records if r.phase == "Failed"]
    if failed:
        conditions = set_condition(conditions, REPLICA_FAILURE, True, "ReplicaFailed",
                                   f"Replicas with a failed pod: {_names(failed)}.", now)
    else:
        conditions = set_condition(conditions, REPLICA_FAILURE, False, "NoFailure", "No replica has failed.", now)
    waiting = waits.condition(records)
    if waiting is not None:
        conditions = set_condition(conditions, waits.WAITING, True, *waiting, now)
    elif find_condition(conditions, waits.WAITING) is not None:
        conditions = set_condition(conditions, waits.WAITING, False, "NoneWaiting", "No replica is waiting.", now)
    return conditions


def write_failure_condition(conditions: list[dict], old_conditions: list[dict], reason: str, message: str,
                            now: str) -> list[dict]:
    """`conditions` with ReplicaFailure True for a write the API server keeps refusing (FailedCreate,
    FailedDelete, ...). Its lastTransitionTime is kept from `old_conditions` (the stored status)
    while it stays True, whatever the plan computed from the replicas alone."""
    wanted = find_condition(set_condition(old_conditions, REPLICA_FAILURE, True, reason, message, now),
                            REPLICA_FAILURE)
    assert wanted is not None  # just set
    if find_condition(conditions, REPLICA_FAILURE) is None:
        return [*conditions, wanted]
    return [wanted if c.get("type") == REPLICA_FAILURE else c for c in conditions]


_not_running: dict[str, str] = {  # (by JobPhase, a str: asked by any phase string)
    JobPhase.PENDING: "The job's pods are not all running yet.",
    JobPhase.PAUSED: "The job is paused.",
    JobPhase.RESUMING: "The job is resuming: its pods are being recreated.",
    JobPhase.SUCCEEDED: "The job has finished.",
    JobPhase.FAILED: "The job has finished.",
    JobPhase.UNKNOWN: "The job's state is unknown.",
}


def unfinished_conditions(conditions: list[dict], now: str) -> list[dict]:
    """Completed and Failed while the job runs: present from the start, so users can wait on them."""
    conditions = set_condition(conditions, COMPLETED, False, "NotCompleted", "The job has not completed.", now)
    return set_condition(conditions, FAILED, False, "NotFailed", "The job has not failed.", now)


def finished_conditions(conditions: list[dict], *, succeeded: bool, reason: str, message: str,
                        now: str) -> list[dict]:
    """A succeeded job: Completed=True, Failed=False. A failed one: Completed=False and Failed=True,
    both with the reason and the message naming the rule."""
    if succeeded:
        conditions = set_condition(conditions, COMPLETED, True, reason, message, now)
        return set_condition(conditions, FAILED, False, "NotFailed", "The job has not failed.", now)
    conditions = set_condition(conditions, COMPLETED, False, reason, message, now)
    return set_condition(conditions, FAILED, True, reason, message, now)


def pause_conditions(conditions: list[dict], *, paused: bool, pods_left: bool, now: str) -> list[dict]:
    """Paused appears the first time the job is paused and stays afterwards (False once resumed):
    its presence is how a later reconcile knows the job was ever paused."""
    if paused:
        message = "The job is paused: its pods are being deleted." if pods_left else \
            "The job is paused: all its pods are deleted."
        return set_condition(conditions, PAUSED, True, "Paused", message, now)
    if find_condition(conditions, PAUSED) is not None:
        return set_condition(conditions, PAUSED, False, "Resumed", "The job was resumed.", now)
    return conditions


def ever_paused(conditions: Iterable[dict]) -> bool:
    return find_condition(conditions, PAUSED) is not None


# --- phase ------------------------------------------------------------------------------------


def next_phase(old_phase: str, *, paused: bool, all_up: bool) -> JobPhase:
    """The phase of a job that has not finished. Pending until every replica's pod is running or
    finished; Running after that, even while replicas restart; Paused, then Resuming until every
    replica is up again."""
    if paused:
        return JobPhase.PAUSED
    if old_phase in (JobPhase.PAUSED, JobPhase.RESUMING):
        return JobPhase.RUNNING if all_up else JobPhase.RESUMING
    if old_phase == JobPhase.RUNNING or all_up:
        return JobPhase.RUNNING
    return JobPhase.PENDING


def all_up(records: Iterable[Replica]) -> bool:
    return all(r.phase in UP for r in records)


# --- the whole status ---------------------------------------------------------------------------


def assemble(old: dict, codec: StatusCodec, *, phase: str, conditions: list[dict],
             records_by_type: list[tuple[str, list[Replica]]], start_time: str | None,
             completion_time: str | None, reason: str | None = None) -> dict:
    """The complete new status: the kind's replica fields (its codec says where they go) and the fields
    every kind has. Fields the controller's planning does not own (observedGeneration, written by the
    reconciler) are carried over from `old`, and so are those set once (`reason`, when the job finished)."""
    status = {**old, "phase": str(phase), "conditions": conditions, **codec.replica_fields(records_by_type)}
    for key, value in (("startTime", start_time), ("completionTime", completion_time), ("reason", reason)):
        if value is not None:
            status[key] = value
    return status


# --- the per-type codec ------------------------------------------------------------------------
# A kind's `StatusCodec`, with the name of the key that holds each type's records as the kind's API spells
# it (`replicas`, `replicaStatus`):
#
#     status.tasks[]: {type, restartCount, <records>: [{name, uid, phase, containers, restartCount,
#                      lastRestartUid, ready}]}
#     status.aggregate: replicas by phase;  status.readyReplicas, status.ready ("3/4"): replicas Running and Ready
#     status.backoffCount: restarts of every replica
#
# A rank scaled away keeps its record (the spec's "Removed ranks"): Deleted, marked `removed`, after the spec's
# ranks of its type, in a task of its own when its type left the spec altogether. It counts in `aggregate`
# (deleted) and in the restart counters, never in `ready`, which counts the spec's replicas.


class TasksStatus:
    def __init__(self, records: str) -> None:
        self.records = records  # the key of a task's replica records

    def tasks(self, records_by_type: Iterable[tuple[str, list[Replica]]]) -> list[dict]:
        return [{"type": replica_type, "restartCount": sum(r.restart_count for r in records),
                 self.records: [r.to_json() for r in records]} for replica_type, records in records_by_type]

    def stored_records(self, status: Mapping) -> dict[str, dict]:
        """The stored replica records by pod name (a name says type and rank, and survives scaling)."""
        return {raw["name"]: raw for task in status.get("tasks") or () for raw in task.get(self.records) or ()
                if raw and raw.get("name")}

    def stored_types(self, status: Mapping) -> list[tuple[str, list[dict]]]:
        return [(task.get("type") or "", list(task.get(self.records) or ())) for task in status.get("tasks") or ()]

    def replica_fields(self, records_by_type: Iterable[tuple[str, list[Replica]]]) -> dict:
        records_by_type = list(records_by_type)
        task_list = self.tasks(records_by_type)
        return {"tasks": task_list, **replica_counts([r for _, records in records_by_type for r in records]),
                "backoffCount": sum(t["restartCount"] for t in task_list)}

    def with_removed(self, status: dict, removed: Mapping[str, list[Replica]], carried: Mapping[str, int]) -> dict:
        """`status` (made of the spec's replicas) with the records of ranks scaled away after their type's, and
        with the restarts of records dropped for size (`carried`): both in restartCount and backoffCount;
        the removed records in `aggregate` too."""
        tasks = [dict(task) for task in status.get("tasks") or ()]
        by_type = {task["type"]: task for task in tasks}
        for replica_type in [*removed, *carried]:
            if replica_type not in by_type:  # a type no longer in the spec: a task of its own, after the spec's
                by_type[replica_type] = {"type": replica_type, "restartCount": 0, self.records: []}
                tasks.append(by_type[replica_type])
        for replica_type, records in removed.items():
            task = by_type[replica_type]
            task[self.records] = [*(task.get(self.records) or ()),
                                  *({**r.to_json(), "removed": True} for r in records)]
            task["restartCount"] += sum(r.restart_count for r in records)
        for replica_type, count in carried.items():
            by_type[replica_type]["restartCount"] += count
        counts = dict(status.get("aggregate") or {})
        for key, value in aggregate(r for records in removed.values() for r in records).items():
            counts[key] = counts.get(key, 0) + value
        return {**status, "tasks": tasks, "aggregate": counts,
                "backoffCount": sum(task["restartCount"] for task in tasks)}
