"""A job's conditions: Initialized, Running, ReplicaFailure (and Waiting) while it runs, Completed and Failed,
Paused once ever paused. Each function returns a new list; a condition's lastTransitionTime moves only when its
status flips.
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.jobs.decisions import waiting as waits
from controller.jobs.decisions.replica_records import Replica
from controller.jobs.schema.api import JobPhase

# Condition types, in the order they are listed in the status.
INITIALIZED = "Initialized"
RUNNING = "Running"
REPLICA_FAILURE = "ReplicaFailure"
COMPLETED = "Completed"
FAILED = "Failed"
PAUSED = "Paused"

NAMES_SHOWN = 5  # replicas named in a condition message, so the status stays small with many replicas


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
