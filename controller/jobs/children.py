"""Upkeep of a job's Services and PodGroup: which to create, patch and delete (decisions only; the
plan calls these, the reconciler executes what they return, in order).

Services: one per replica while the job runs (when its kind wants Services); after it ends, only for
replicas that clean-up left (none under clean-up policy All); their ports follow edits of the spec.
PodGroup: one while the job runs under T9k Scheduler; its gang size, queue and priority follow the
spec; gone once the job has finished with a clean-up policy other than None. A paused job makes
nothing new (`making` False) and keeps what it has.
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.jobs import podgroup, services
from controller.jobs.actions import PODGROUPS, SERVICES, ChildAction, CreateChild, DeleteChild, PatchChild
from controller.jobs.api import CleanUpPolicy
from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.naming import replica_name
from controller.jobs.status import DELETED


def service_actions(kind: JobKind, job: ParsedJob, status: dict, existing: list[dict], *, terminal: bool,
                    making: bool) -> list[ChildAction]:
    """Deletes first, then patches and creates in replica order. `status` is the plan's new status
    (which replicas clean-up has deleted)."""
    ports = kind.service_ports(job)
    current = {s["metadata"]["name"]: s for s in existing}
    wanted = {} if ports is None else _wanted_services(kind, job, status, terminal)
    actions: list[ChildAction] = [DeleteChild(SERVICES, name, svc["metadata"]["uid"])
                                  for name, svc in current.items() if name not in wanted]
    for name, (replica_type, rank) in wanted.items():
        svc = current.get(name)
        if svc is not None:
            if not terminal and services.stored_ports(svc) != ports:
                # The ports were edited: a merge patch replaces the port list whole.
                actions.append(PatchChild(SERVICES, name, {"spec": {"ports": ports}}))
        elif making:
            actions.append(CreateChild(SERVICES, name, services.desired_service(kind, job, replica_type, rank)))
    return actions


def _wanted_services(kind: JobKind, job: ParsedJob, status: dict, terminal: bool) -> dict[str, tuple[str, int]]:
    wanted = {replica_name(job.name, spec.type, rank): (spec.type, rank)
              for spec in job.spec.replica_specs for rank in range(spec.replicas)}
    if terminal and job.spec.clean_up_policy != CleanUpPolicy.NONE:
        if job.spec.clean_up_policy == CleanUpPolicy.ALL:
            return {}
        deleted = {name for name, r in kind.status.stored_records(status).items() if r.get("phase") == DELETED}
        wanted = {name: replica for name, replica in wanted.items() if name not in deleted}
    return wanted


def podgroup_actions(kind: JobKind, job: ParsedJob, existing: list[dict], *, terminal: bool,
                     making: bool) -> list[ChildAction]:
    desired = podgroup.desired_podgroup(kind, job)
    if desired is None or (terminal and job.spec.clean_up_policy != CleanUpPolicy.NONE):
        return remove_all(PODGROUPS, existing)
    if not existing:
        return [CreateChild(PODGROUPS, desired["metadata"]["name"], desired)] if making else []
    actions: list[ChildAction] = []
    for pg in existing:
        spec = pg.get("spec") or {}
        changes = {k: v for k, v in desired["spec"].items() if spec.get(k) != v}
        if changes and not terminal:  # scale edits change the gang size; queue and priority follow the spec too
            actions.append(PatchChild(PODGROUPS, pg["metadata"]["name"], {"spec": changes}))
    return actions


def remove_all(resource: str, existing: Iterable[dict]) -> list[ChildAction]:
    """Deletes of every child given (`resource`: SERVICES or PODGROUPS), each with its uid as precondition."""
    return [DeleteChild(resource, obj["metadata"]["name"], obj["metadata"]["uid"]) for obj in existing]
