"""Start coalescing: may a plan's status write wait a moment for the pods starting with it?

A status change that only says pods went on from Pending to Running waits (at most `START_COALESCE` after the
first such change: the status writer keeps that window) for its siblings, so that one write reports a job's pods
starting together instead of one write each. Such a write guards nothing: no pod is created or deleted after it,
no restart is counted in it (a record keeps its uid, restart count and last restarted pod), and no Event waits for
it; a crash in the window loses nothing the next reconcile does not rebuild from the pods. Anything else in the
plan (an action, an Event, a phase or condition change, a uid first recorded, a pod finished, a write refused last
time) is written at once.
"""

from __future__ import annotations

from controller.jobs.decisions.actions import Plan
from controller.jobs.kind import JobKind

# How long such a write waits for its siblings (the pods of one job start within milliseconds of each other).
# Well under the 100 ms the status latency is held to.
START_COALESCE = 0.05
# Top-level status fields a pod's start may change: the replica records and the counts made from them.
PROGRESS_FIELDS = frozenset({"tasks", "aggregate", "ready", "readyReplicas"})


def may_wait(kind: JobKind, status: dict, the_plan: Plan, *, failed_last: bool) -> bool:
    """May `the_plan`'s status write wait for the pods starting with it? Only when the plan does nothing but report
    pods going on from Pending to Running (`failed_last`: a write was refused in the job's last reconcile, so its
    ReplicaFailure condition is to be cleared at once)."""
    if the_plan.confirm or the_plan.create or the_plan.delete or the_plan.force_delete or the_plan.events or \
            the_plan.podgroup or the_plan.services or the_plan.dependents or the_plan.requeue_after is not None \
            or failed_last:
        return False
    return starts_only(kind, status, the_plan.status)


def starts_only(kind: JobKind, old: dict, new: dict) -> bool:
    """Does `new` differ from `old` only in records of known pods now Running (and the counts)?"""
    if any(old.get(key) != new.get(key) for key in old.keys() | new.keys() if key not in PROGRESS_FIELDS):
        return False
    before, after = kind.status.stored_records(old), kind.status.stored_records(new)
    if before.keys() != after.keys() or before == after:
        return False
    for name, record in after.items():
        was = before[name]
        if record == was:
            continue
        if not record.get("uid") or record.get("phase") != "Running" or was.get("phase") not in ("Pending",
                                                                                              "Running"):
            return False
        if any(record.get(key) != was.get(key) for key in record.keys() | was.keys()
               if key not in ("phase", "containers", "ready", "waiting")):
            return False
    return True
