"""Upkeep of a job's Services and PodGroup: which to create, patch and delete (decisions only; the
plan calls these, the reconciler executes what they return, in order).

Services: one per replica while the job runs (when its kind wants Services); after it ends, only for
replicas that clean-up left (none under clean-up policy All); their ports follow edits of the spec.
PodGroup: one while the job runs under T9k Scheduler; its gang size, queue and priority follow the
spec; gone once the job has finished with a clean-up policy other than None. A paused job makes
nothing new (`making` False) and keeps what it has.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apimachinery.resource import Resource
from controller.jobs.children import podgroup, services
from controller.jobs.decisions import cleanup
from controller.jobs.decisions.actions import PODGROUPS, SERVICES, ChildAction, CreateChild, DeleteChild, PatchChild
from controller.jobs.decisions.replica_records import DELETED
from controller.jobs.kind import NO_STATUS, JobKind, ParsedJob
from controller.jobs.schema.api import CleanUpPolicy
from controller.jobs.schema.naming import replica_name


def service_actions(kind: JobKind, job: ParsedJob, status: dict, existing: list[dict], *, terminal: bool,
                    making: bool) -> list[ChildAction]:
    """Deletes first, then patches and creates in replica order. `status` is the plan's new status
    (which replicas clean-up has deleted)."""
    current = {s["metadata"]["name"]: s for s in existing}
    if terminal:
        # Terminal is final: nothing is made or patched any more, only the clean-up's deletes remain.
        kept = _kept_services(kind, job, status)
        if kept and kind.subdomain_ports(job) is not None:  # the job's own Service, while a replica's pod stays
            kept.add(job.name)
        return [DeleteChild(SERVICES, name, svc["metadata"]["uid"])
                for name, svc in current.items() if name not in kept]
    ports = {spec.type: kind.service_ports(job, spec.type) for spec in job.spec.replica_specs}
    counts = kind.replica_counts(job)
    wanted = {replica_name(job.name, spec.type, rank): (spec.type, rank)
              for spec in job.spec.replica_specs if ports[spec.type] is not None for rank in range(counts[spec.type])}
    subdomain = kind.subdomain_ports(job)
    if subdomain is not None:  # the job's own Service (a subdomain for its pods' host names)
        wanted[job.name] = ("", -1)
        ports[""] = subdomain
    actions: list[ChildAction] = [DeleteChild(SERVICES, name, svc["metadata"]["uid"])
                                  for name, svc in current.items() if name not in wanted]
    for name, (replica_type, rank) in wanted.items():
        svc, type_ports = current.get(name), ports[replica_type]
        if svc is not None:
            if services.stored_ports(svc) != type_ports:
                # The ports were edited: a merge patch replaces the port list whole.
                actions.append(PatchChild(SERVICES, name, {"spec": {"ports": type_ports}}))
        elif making:
            desired = services.desired_service(kind, job, replica_type, rank) if rank >= 0 else \
                services.subdomain_service(kind, job)
            assert desired is not None  # a Service is wanted only of a type with ports
            actions.append(CreateChild(SERVICES, name, desired))
    return actions


def _kept_services(kind: JobKind, job: ParsedJob, status: dict) -> set[str]:
    """The Services a finished job keeps: those of the replicas it finished with, whatever the spec now says,
    that the clean-up policy in force leaves a pod to reach."""
    policy = cleanup.finished_policy(job, status)
    if policy == CleanUpPolicy.ALL:
        return set()
    return {name for name, r in kind.status.stored_records(status).items()
            if r.get("phase") != DELETED or (policy == CleanUpPolicy.NONE and not _retired(r))}


def _retired(record: Mapping) -> bool:
    """A record whose pod the controller retired or never made (a rank scaled away keeps such a Deleted record):
    no pod of the replica's is left to reach, so it needs no Service, whatever the clean-up policy."""
    uid = record.get("uid") or ""
    return not uid or uid == record.get("lastRestartUid")


def podgroup_actions(kind: JobKind, job: ParsedJob, existing: list[dict], *, terminal: bool,
                     making: bool, clean_up: CleanUpPolicy | None = None) -> list[ChildAction]:
    """`clean_up`: the policy a finished job finished with (the spec's when None)."""
    desired = podgroup.desired_podgroup(kind, job)
    policy = job.spec.clean_up_policy if clean_up is None else clean_up
    if desired is None or (terminal and policy != CleanUpPolicy.NONE):
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


def dependent_actions(kind: JobKind, job: ParsedJob, observed: Mapping[Resource, list[dict] | None], *,
                      terminal: bool, status: Mapping[str, Any] = NO_STATUS) -> tuple[list[ChildAction], dict]:
    """The kind's dependents (a TensorBoard, a ConfigMap): created while the job has not finished, the fields
    each `Dependent.follows` kept in step (a merge patch of each; none of a Secret made once), never deleted
    (they go with the job); and the status fields reporting them. `status`: the plan's new status."""
    actions: list[ChildAction] = []
    done: dict[Resource, str] = {}
    follows = {d.resource: d.follows for d in kind.dependent_resources}
    for resource, body in kind.dependents(job, status).items():
        current_objects = observed.get(resource)
        if current_objects is None:
            continue  # the cluster has no such API: the kind's status says so
        name = body["metadata"]["name"]
        current = next((o for o in current_objects if o["metadata"]["name"] == name), None)
        if current is None:
            if not terminal:
                actions.append(CreateChild(resource.plural, name, body))
                done[resource] = "Create"
        elif not terminal:
            patch = {key: merge_patch(current.get(key) or {}, body.get(key) or {})
                     for key in follows.get(resource, ("spec",)) if (current.get(key) or {}) != (body.get(key) or {})}
            if patch:
                actions.append(PatchChild(resource.plural, name, patch))
                done[resource] = "Update"
    reported = kind.dependent_status(job, {d.resource: observed.get(d.resource) for d in kind.dependent_resources},
                                     done)
    return actions, reported


def merge_patch(old: dict, new: dict) -> dict:
    """The JSON merge patch (RFC 7386) that turns `old` into `new`: removed keys become null."""
    patch: dict = {key: None for key in old if key not in new}
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(old.get(key), dict):
            nested = merge_patch(old[key], value)
            if nested:
                patch[key] = nested
        elif old.get(key, object()) != value:
            patch[key] = value
    return patch


def remove_all(resource: str, existing: Iterable[dict]) -> list[ChildAction]:
    """Deletes of every child given (`resource`: SERVICES or PODGROUPS), each with its uid as precondition."""
    return [DeleteChild(resource, obj["metadata"]["name"], obj["metadata"]["uid"]) for obj in existing]
