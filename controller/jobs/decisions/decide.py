"""The plan of one reconcile, whatever the job's state: `decide(...) -> Plan`, the one door of the decisions.

Pure, as every decision: the reconciler reads the caches and its own memory (the write refused last time, the
names found taken, the creates in flight), calls this, and carries out what it returns, deciding nothing itself:
- a job whose spec is invalid: held if it already runs (held.py), else failed (invalid.py); a job that failed
  because its status was too large stays so (oversize.py); any other job is planned by `plan` (plan.py), and a hold
  of an earlier generation is lifted (`held.release`);
- the names taken by other owners the job still wants are kept, the others forgotten, and the ChildConflict
  condition says which (conflicts.py);
- whether the status is written even unchanged, to prove the cached job current before pods are created
  (`Plan.confirm`), and whether the write may wait for the pods starting with it (`Plan.may_wait`, coalesce.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from apimachinery.resource import Resource
from controller.jobs.decisions import coalesce, held, oversize
from controller.jobs.decisions.actions import CreateChild, Plan, WriteFailure, child_kinds, child_what
from controller.jobs.decisions.backoff import NO_BACKOFF, RestartBackoff
from controller.jobs.decisions.conflicts import Conflict, conflict_condition
from controller.jobs.decisions.invalid import plan_invalid
from controller.jobs.decisions.plan import plan
from controller.jobs.decisions.stuck import STUCK_TERMINATING_AFTER
from controller.jobs.kind import JobKind, ParsedJob, SpecProblem
from controller.jobs.schema.api import TERMINAL_PHASES
from controller.jobs.schema.naming import replica_name


def plans_replicas(job: ParsedJob | list[SpecProblem], status: dict) -> bool:
    """Is the job planned from its replicas (by `plan`)? Not when its spec is invalid (a list of problems), nor
    once it failed for a status too large (its records are gone for good: never rebuilt)."""
    return not isinstance(job, list) and not oversize.failed_too_large(status)


def decide(kind: JobKind, obj: dict, job: ParsedJob | list[SpecProblem], pods: list[dict], now: str, *,
           services: list[dict] | None = None, podgroups: list[dict] | None = None, clock: float | None = None,
           stuck_after: float = STUCK_TERMINATING_AFTER, write_failure: WriteFailure | None = None,
           restart_backoff: RestartBackoff = NO_BACKOFF, dependents: Mapping[Resource, list[dict] | None] | None = None,
           creating: frozenset[str] = frozenset(), taken: Sequence[Conflict] = ()) -> Plan:
    """The plan of a reconcile of `obj` (the cached job), `job` its spec as the kind parsed it (or its problems).
    `write_failure`: the first write refused in the job's last reconcile; `creating`: the pods whose create was sent
    but that the cache does not show yet; `taken`: the names of its children found held by other owners (a create
    refused with 409). The others as `plan`'s."""
    status = obj.get("status") or {}
    generation = obj["metadata"].get("generation")
    children: dict[str, Any] = {"services": services, "podgroups": podgroups, "clock": clock,
                                "stuck_after": stuck_after}
    if isinstance(job, list) and held.is_edit(status):
        # An invalid edit of a running job is not applied: the job is held until a valid one (held.py).
        the_plan = held.plan_held(kind, status, pods, kind.invalid_spec_message(job), generation, now,
                                  deadline=held.raw_deadline(obj), **children)
    elif isinstance(job, list):
        the_plan = plan_invalid(kind, status, pods, kind.invalid_spec_message(job), now, **children)
    elif oversize.failed_too_large(status):
        the_plan = plan_invalid(kind, status, pods, "", now, reason=oversize.STATUS_TOO_LARGE, **children)
    else:
        the_plan = plan(kind, job, status, pods, now, write_failure=write_failure, restart_backoff=restart_backoff,
                        dependents=dependents, creating=creating, **children)
        the_plan = held.release(the_plan, status, generation, now)
        the_plan = the_plan.but(confirm=any(replica_name(job.name, replica_type, rank) not in creating
                                            for replica_type, rank, _mode in the_plan.create))
    the_plan = _with_conflicts(kind, job, status, the_plan, taken, now)
    if coalesce.may_wait(kind, status, the_plan, failed_last=write_failure is not None):
        return the_plan.but(may_wait=True)
    return the_plan


def _with_conflicts(kind: JobKind, job: ParsedJob | list[SpecProblem], status: dict, the_plan: Plan,
                    taken: Sequence[Conflict], now: str) -> Plan:
    """The plan with the names taken that the job still waits for (those of children it still creates), and its
    ChildConflict condition saying so. A job that finishes, or cannot run, waits for no name (and a finished job's
    conditions never change)."""
    if the_plan.terminal or isinstance(job, list):
        still: tuple[Conflict, ...] = ()
    elif taken:  # (most jobs never meet a taken name: nothing to work out)
        wanted = _wanted(kind, job, the_plan)
        still = tuple(conflict for conflict in taken if conflict.what in wanted)
    else:
        still = ()
    if status.get("phase") in TERMINAL_PHASES:
        return the_plan.but(taken=still)
    conditions = the_plan.status.get("conditions") or []
    shown = conflict_condition(conditions, list(still), now)
    if shown is conditions:
        return the_plan.but(taken=still)
    return the_plan.but(status={**the_plan.status, "conditions": shown}, taken=still)


def _wanted(kind: JobKind, job: ParsedJob, the_plan: Plan) -> set[str]:
    """The children the plan creates, as taken names say them."""
    kinds = child_kinds({d.resource.plural: d.kind for d in kind.dependent_resources})
    wanted = {f"pod {replica_name(job.name, replica_type, rank)}" for replica_type, rank, _ in the_plan.create}
    wanted.update(child_what(kinds, a) for a in (*the_plan.podgroup, *the_plan.services, *the_plan.dependents)
                  if isinstance(a, CreateChild))
    return wanted
