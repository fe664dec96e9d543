"""Writes the server refused, as the reconciler's writers handle them: a Warning Event and a retry with back-off
(any code), or, for a create refused as AlreadyExists by an object the job does not control, a name taken: never
adopted nor skipped in silence, but remembered (conflicts.TakenNames), said in a Warning Event and retried with
back-off; the plan then shows it in the job's ChildConflict condition (decide.py).

One `Refusals` is shared by the pod writes and the child writes (pod_writes.py, child_writes.py) of a reconciler.
"""

from __future__ import annotations

import structlog

from controller.jobs.decisions.actions import WARNING
from controller.jobs.decisions.conflicts import Conflict, TakenNames, holder_of
from controller.runtime.events import EventRecorder

log = structlog.get_logger("controller.reconciler")

# A create refused as AlreadyExists whose holder could not be found (gone meanwhile, or our own child not yet
# cached): no event of ours may announce it, so look again. (A holder found not ours: conflicts.py's back-off.)
NAME_TAKEN_RETRY = 1.0
FAILURE_CLEARED_RECHECK = 0.05  # seconds; see Reconciler.reconcile


class Refusals:
    """A refused write's Event and retry; the names taken by other owners."""

    def __init__(self, recorder: EventRecorder, taken: TakenNames) -> None:
        self.recorder = recorder
        self.taken = taken  # names of children held by objects the job does not control

    def refused(self, obj: dict, failed: list[tuple[str, str]], reason: str, message: str) -> None:
        """A write the server refused: a Warning Event now, a retry with backoff at the end of the reconcile."""
        log.info("write refused", job=job_key(obj), reason=reason, message=message)
        self.recorder.record(obj, WARNING, reason, message)
        failed.append((reason, message))

    def name_taken(self, obj: dict, what: str, holder: dict) -> None:
        """A create refused because `holder`, not the job's, has the name: said, and retried with back-off."""
        conflict = Conflict(what, holder_of(holder))
        log.info("name taken", job=job_key(obj), child=what, holder=conflict.holder)
        self.taken.found(obj["metadata"]["uid"], conflict)
        self.recorder.record(obj, WARNING, "FailedCreate", conflict.event_message())

    def wake_ups(self, uid: str, shown: tuple[Conflict, ...]) -> list[float]:
        """When to look again: at the next retry of a taken name; and at once when the status just written no
        longer says which names are taken (one was found, or freed: `shown` is what it says), so the condition
        follows."""
        wake_ups = []
        retry = self.taken.next_retry(uid)
        if retry is not None:
            wake_ups.append(retry)
        if set(self.taken.conflicts(uid)) != set(shown):
            wake_ups.append(FAILURE_CLEARED_RECHECK)
        return wake_ups


def job_key(obj: dict) -> str:
    """The job's key in the caches and the work queue: namespace/name."""
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
