"""Writes the server refused, as the reconciler handles them: a Warning Event and a retry with back-off (any
code), or, for a create refused as AlreadyExists by an object the job does not control, a name taken: never adopted
nor skipped in silence, but shown in the job's ChildConflict condition and retried with back-off (conflicts.py).

A mixin of the Reconciler (reconciler.py), whose state it reads: the taken names, the client, the recorder."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from apimachinery.errors import ApiStatusError
from controller.jobs.decisions.actions import WARNING, ChildAction, CreateChild, Plan
from controller.jobs.decisions.conflicts import Conflict, TakenNames, conflict_condition, holder_of
from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.schema.api import TERMINAL_PHASES
from controller.jobs.schema.naming import replica_name
from controller.runtime.client import KubeClient
from controller.runtime.events import EventRecorder

log = structlog.get_logger("controller.reconciler")

# A create refused as AlreadyExists whose holder could not be found (gone meanwhile, or our own child not yet
# cached): no event of ours may announce it, so look again. (A holder found not ours: conflicts.py's back-off.)
NAME_TAKEN_RETRY = 1.0
FAILURE_CLEARED_RECHECK = 0.05  # seconds; see Reconciler.reconcile


class Refusals:
    """A refused write's Event and retry; the names taken by other owners."""

    kind: JobKind
    client: KubeClient
    recorder: EventRecorder
    taken: TakenNames
    child_kinds: dict[str, str]
    now: Callable[[], str]

    def _refused(self, obj: dict, failed: list[tuple[str, str]], reason: str, message: str) -> None:
        """A write the server refused: a Warning Event now, a retry with backoff at the end of the reconcile."""
        log.info("write refused", job=job_key(obj), reason=reason, message=message)
        self.recorder.record(obj, WARNING, reason, message)
        failed.append((reason, message))

    def _with_conflicts(self, uid: str, job: ParsedJob | list, status: dict, the_plan: Plan) -> Plan:
        """The plan with the job's ChildConflict condition: the taken names it still wants to create. A job
        that finishes waits for no name (and a finished job's conditions never change)."""
        if the_plan.terminal or isinstance(job, list):
            self.taken.forget(uid)
        elif self.taken.conflicts(uid):  # (most jobs never meet a taken name: nothing to work out)
            self.taken.keep_only(uid, self._wanted(job, the_plan))
        if status.get("phase") in TERMINAL_PHASES:
            return the_plan
        conditions = the_plan.status.get("conditions") or []
        shown = conflict_condition(conditions, self.taken.conflicts(uid), self.now())
        return the_plan if shown is conditions else the_plan.but(status={**the_plan.status, "conditions": shown})

    def _wanted(self, job: ParsedJob, the_plan: Plan) -> set[str]:
        """The children the plan creates, as conflicts name them."""
        wanted = {f"pod {replica_name(job.name, replica_type, rank)}" for replica_type, rank, _ in the_plan.create}
        wanted.update(self._what(a) for a in (*the_plan.podgroup, *the_plan.services, *the_plan.dependents)
                      if isinstance(a, CreateChild))
        return wanted

    def _what(self, action: ChildAction) -> str:
        return f"{self.child_kinds.get(action.resource, action.resource)} {action.name}"

    def _conflict_wake_ups(self, uid: str, shown: list[Conflict]) -> list[float]:
        """When to look again: at the next retry of a taken name; and at once when the status just written no
        longer says which names are taken (one was found, or freed), so the condition follows."""
        wake_ups = []
        retry = self.taken.next_retry(uid)
        if retry is not None:
            wake_ups.append(retry)
        if set(self.taken.conflicts(uid)) != set(shown):
            wake_ups.append(FAILURE_CLEARED_RECHECK)
        return wake_ups

    def _name_taken(self, obj: dict, what: str, holder: dict) -> None:
        """A create refused because `holder`, not the job's, has the name: said, and retried with back-off."""
        conflict = Conflict(what, holder_of(holder))
        log.info("name taken", job=job_key(obj), child=what, holder=conflict.holder)
        self.taken.found(obj["metadata"]["uid"], conflict)
        self.recorder.record(obj, WARNING, "FailedCreate", conflict.event_message())

    async def _holder(self, resource: str, namespace: str, name: str) -> dict | None:
        """The object that has a name a create was refused for (None: gone since)."""
        try:
            return await self.client.get(resource, namespace, name)
        except ApiStatusError as err:
            if err.code == 404:
                return None
            raise


def job_key(obj: dict) -> str:
    """The job's key in the caches and the work queue: namespace/name."""
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
