"""Names that are taken: a child (pod, Service, PodGroup) whose name already belongs to an object the job does
not control (another job's, of any kind, or a stranger's).

Such an object is never adopted, touched or skipped in silence. The reconciler learns of it from the create's
409 and a look at the object that holds the name; it remembers the name here, per job (`TakenNames`), and:
- the job's status says so: a `ChildConflict` condition names the object and its owner (cleared once every
  name it wants is free again; decide.py gives the plan the names the job still waits for, and the condition);
- one Warning Event per attempt, identical each time, so the recorder counts it on one Event object;
- the name is tried again with exponential back-off (BASE_DELAY doubling, up to MAX_DELAY), and not sooner,
  however often the job is reconciled meanwhile: no write storm, no Event each second;
- a job whose PodGroup name is taken creates no pod (they would join the other job's gang).
Decisions only; nothing here does I/O.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from controller.jobs.decisions.job_conditions import is_true, set_condition

CHILD_CONFLICT = "ChildConflict"  # the condition type
BASE_DELAY = 1.0  # seconds before the first retry of a taken name
MAX_DELAY = 60.0  # the back-off's cap
NAMES_SHOWN = 3  # taken names a condition message spells out; the rest are counted


@dataclass(frozen=True)
class Conflict:
    what: str  # the child, as messages say it: "pod a-worker-x-0", "PodGroup a"
    holder: str  # who holds the name: "<Kind> a-worker", or "no controller"

    def event_message(self) -> str:
        return f"Error creating {self.what}: the name is taken by an object controlled by {self.holder}, not by " \
               "this job; it is left alone, and the create is retried with back-off until the name is free"

    def condition_message(self) -> str:
        return f"{self.what} is taken by an object controlled by {self.holder}"


def holder_of(obj: dict) -> str:
    """Who controls `obj`, as a message says it: its controller's kind and name, else "no controller"."""
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return f"{ref.get('kind')} {ref.get('name')}"
    return "no controller"


@dataclass
class _Taken:
    conflict: Conflict
    attempts: int
    retry_at: float  # monotonic seconds


class TakenNames:
    """Per job (by uid): the names found taken, and when each may be tried again."""

    def __init__(self, *, base: float = BASE_DELAY, cap: float = MAX_DELAY, clock=time.monotonic) -> None:
        self.base = base
        self.cap = cap
        self.clock = clock
        self._jobs: dict[str, dict[str, _Taken]] = {}

    def found(self, job_uid: str, conflict: Conflict) -> None:
        """A create of `conflict.what` was refused because the name is taken: wait longer before the next."""
        taken = self._jobs.setdefault(job_uid, {})
        before = taken.get(conflict.what)
        attempts = before.attempts + 1 if before is not None else 1
        delay = min(self.cap, self.base * 2 ** (attempts - 1))
        taken[conflict.what] = _Taken(conflict, attempts, self.clock() + delay)

    def waits(self, job_uid: str, what: str) -> bool:
        """Is `what` taken and its back-off not over yet (so no create is sent now)?"""
        taken = self._jobs.get(job_uid, {}).get(what)
        return taken is not None and self.clock() < taken.retry_at

    def freed(self, job_uid: str, what: str) -> None:
        """`what` was created: its name is free (or was never taken)."""
        taken = self._jobs.get(job_uid)
        if taken is not None and taken.pop(what, None) is not None and not taken:
            del self._jobs[job_uid]

    def keep_only(self, job_uid: str, wanted: Iterable[str]) -> None:
        """Forget the names the job no longer wants to create (scaled away, paused, finished)."""
        taken = self._jobs.get(job_uid)
        if not taken:
            return
        wanted = set(wanted)
        for what in [w for w in taken if w not in wanted]:
            del taken[what]
        if not taken:
            del self._jobs[job_uid]

    def conflicts(self, job_uid: str) -> list[Conflict]:
        return [t.conflict for t in self._jobs.get(job_uid, {}).values()]

    def next_retry(self, job_uid: str) -> float | None:
        """Seconds until the soonest taken name may be tried again (None: none is taken)."""
        taken = self._jobs.get(job_uid)
        if not taken:
            return None
        return max(0.0, min(t.retry_at for t in taken.values()) - self.clock())

    def forget(self, job_uid: str) -> None:
        self._jobs.pop(job_uid, None)


def conflict_condition(conditions: list[dict], conflicts: list[Conflict], now: str) -> list[dict]:
    """`conditions` with ChildConflict True while a name is taken; False once none is (only if it was ever set:
    a job that never met a taken name does not carry the condition)."""
    if conflicts:
        shown = "; ".join(c.condition_message() for c in sorted(conflicts, key=lambda c: c.what)[:NAMES_SHOWN])
        hidden = len(conflicts) - NAMES_SHOWN
        more = f"; and {hidden} more" if hidden > 0 else ""
        return set_condition(conditions, CHILD_CONFLICT, True, "NameTaken",
                             f"{shown}{more}. The job waits until the names are free.", now)
    if is_true(conditions, CHILD_CONFLICT):
        return set_condition(conditions, CHILD_CONFLICT, False, "NamesFree",
                             "No name the job needs is taken.", now)
    return conditions
