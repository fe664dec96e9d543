"""Start coalescing: a status change that only says pods went on from Pending to Running waits a moment
(`START_COALESCE`) for its siblings, so that one write reports a job's pods starting together instead of one write
each. A mixin of the Reconciler (reconciler.py): `_coalesces` says how long to hold a reconcile's status write."""

from __future__ import annotations

from collections.abc import Callable

from controller.jobs.decisions.actions import Plan
from controller.jobs.kind import JobKind

# A status change that only says pods went on from Pending to Running waits this long for its siblings
# (the pods of one job start within milliseconds of each other), so one write reports them all: see
# `_coalesces`. Well under the 100 ms the status latency is held to.
START_COALESCE = 0.05
# Top-level status fields a pod's start may change: the replica records and the counts made from them.
PROGRESS_FIELDS = frozenset({"tasks", "aggregate", "ready", "readyReplicas"})


class StartCoalescing:
    """When a reconcile's status write may wait for the pods starting with it."""

    kind: JobKind
    monotonic: Callable[[], float]
    _starting: dict[str, float]
    _failures: dict

    def _coalesces(self, uid: str, status: dict, the_plan: Plan, confirm: bool) -> float | None:
        """Seconds to hold this reconcile's status write back (None: write now).

        Only a plan that does nothing but report pods going on from Pending to Running is held back, for
        at most START_COALESCE after the first such change: a job's pods start together, and one write
        then reports them all instead of one write each. Such a write guards nothing: no pod is created
        or deleted after it, no restart is counted in it (a record keeps its uid, restart count and
        last restarted pod), and no Event waits for it; a crash in the window loses nothing the next
        reconcile does not rebuild from the pods. Anything else in the plan (an action, an Event, a
        phase or condition change, a uid first recorded, a pod finished) is written at once."""
        if confirm or the_plan.create or the_plan.delete or the_plan.force_delete or the_plan.events or \
                the_plan.podgroup or the_plan.services or the_plan.dependents or the_plan.requeue_after is not None \
                or uid in self._failures or not self._starts_only(status, the_plan.status):
            self._starting.pop(uid, None)
            return None
        now = self.monotonic()
        due = self._starting.setdefault(uid, now + START_COALESCE)
        if now >= due:
            del self._starting[uid]
            return None
        return due - now

    def _starts_only(self, old: dict, new: dict) -> bool:
        """Does `new` differ from `old` only in records of known pods now Running (and the counts)?"""
        if any(old.get(key) != new.get(key) for key in old.keys() | new.keys() if key not in PROGRESS_FIELDS):
            return False
        before, after = self.kind.status.stored_records(old), self.kind.status.stored_records(new)
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
