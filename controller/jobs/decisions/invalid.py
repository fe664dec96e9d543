"""A job the controller cannot run (`plan_invalid`): its spec is invalid (InvalidSpec) or its status does not fit
in the API server (StatusTooLarge, oversize.py). It ends Failed with a Warning Event, its unfinished pods, Services
and PodGroup removed; finished pods are kept for their logs, and a job already finished keeps its status."""

from __future__ import annotations

import functools

from controller.jobs.decisions import edits, upkeep
from controller.jobs.decisions.actions import CLEANUP, PODGROUPS, SERVICES, WARNING, DeletePod, Event, Plan
from controller.jobs.decisions.job_conditions import FAILED, RUNNING, find_condition, finished_conditions, set_condition
from controller.jobs.decisions.pod_state import is_terminating, pod_phase, pod_uid
from controller.jobs.decisions.replica_records import DELETED, FINISHED, Replica, observed
from controller.jobs.decisions.stuck import STUCK_TERMINATING_AFTER, stuck_pods
from controller.jobs.kind import JobKind
from controller.jobs.schema.api import TERMINAL_PHASES, JobPhase


def plan_invalid(kind: JobKind, status: dict, pods: list[dict], message: str, now: str, *,
                 reason: str = "InvalidSpec", services: list[dict] | None = None, podgroups: list[dict] | None = None,
                 clock: float | None = None, stuck_after: float = STUCK_TERMINATING_AFTER) -> Plan:
    """For a job the controller cannot run (its kind's parse found problems: reason InvalidSpec; or its status
    does not fit in the API server: StatusTooLarge, oversize.py): Failed with `reason`, a Warning event, its
    unfinished pods deleted (a spec edited into an invalid one must not leave pods running), and its Services
    and PodGroup removed. Finished pods are kept for their logs. A job that had already finished for another
    reason keeps its status and its pods."""
    old = status or {}
    conditions = old.get("conditions") or []
    failed = find_condition(conditions, FAILED)
    already_finished = old.get("phase") in TERMINAL_PHASES
    force, requeue_after = stuck_pods(pods, clock, stuck_after)
    # Every plan here removes the children and force-deletes the stuck pods.
    removing = functools.partial(Plan, services=upkeep.remove_all(SERVICES, services or ()),
                                 podgroup=upkeep.remove_all(PODGROUPS, podgroups or ()), force_delete=force,
                                 requeue_after=requeue_after)
    if already_finished and not (failed and failed.get("reason") == reason):
        return removing(old, terminal=True)
    delete = [DeletePod(p["metadata"]["name"], pod_uid(p), CLEANUP) for p in pods
              if pod_phase(p) not in FINISHED and not is_terminating(p)]
    records = _invalid_records(kind, old, pods, {d.uid for d in delete})
    if already_finished:
        return removing({**old, **records}, delete=delete, terminal=True)
    conditions = set_condition(conditions, RUNNING, False, "Failed", "The job has finished.", now)
    conditions = finished_conditions(conditions, succeeded=False, reason=reason, message=message, now=now)
    new = {**old, **records, "phase": str(JobPhase.FAILED), "conditions": conditions, "completionTime": now,
           "reason": reason}
    return removing(new, delete=delete, events=[Event(WARNING, reason, message)], terminal=True)


def _invalid_records(kind: JobKind, old: dict, pods: list[dict], deleting: set[str]) -> dict:
    """The replica records of a job whose spec is invalid, kept in step with its pods: there is no
    spec to say which replicas exist, so the stored ones are described; those whose pod is being
    deleted, or is gone, are Deleted. Counters never decrease (those of ranks scaled away included: the stored
    backoffCount counts them, those an earlier version stored apart too), and `ready` counts the spec's replicas."""
    def describe(record: Replica, pod: dict | None) -> Replica:
        if pod is None or pod_uid(pod) in deleting or is_terminating(pod):
            return record.in_phase(DELETED)
        return observed(record, pod)

    return edits.described_records(kind, old, pods, describe)
