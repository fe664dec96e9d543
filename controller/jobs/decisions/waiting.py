"""A replica that waits for something it cannot get, said on the job: its image cannot be pulled
(ErrImagePull, ImagePullBackOff, InvalidImageName, ErrImageNeverPull), its container cannot be made
(CreateContainerConfigError: a missing Secret, ConfigMap or key; CreateContainerError, RunContainerError: the
runtime could not make or start it, e.g. CRI-O for a command not found, said as start_errors.py condenses it), or
no node takes its pod (the scheduler's PodScheduled=False, reason Unschedulable).

Only a Pending pod is looked at. The cause is kept in the replica's record (`waiting: {reason, message}`,
so the status remembers it across reconciles and controller restarts) and shown by the job's
`ReplicasWaiting` condition (True while a replica waits, False once none does; absent for a job none of
whose replicas ever waited, as Paused is for a job never paused) and by one Warning Event per cause per
replica: the kubelet turns ErrImagePull into ImagePullBackOff and back while it retries, and that is one
cause, announced once, the record keeping what was first seen. Kubeflow and JobSet leave this on the pod;
a batch/v1 Job too; a user of the job reads it on the job here, as a Deployment's ReplicaFailure says why
its pods cannot be made.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.jobs.decisions.start_errors import START_WAITS, condensed

WAITING = "ReplicasWaiting"  # the condition type

# The kubelet's waiting reasons that mean "this will not start by itself", by the cause they belong to.
CAUSES = {
    "ErrImagePull": "image",
    "ImagePullBackOff": "image",
    "InvalidImageName": "InvalidImageName",
    "ErrImageNeverPull": "ErrImageNeverPull",
    "CreateContainerConfigError": "CreateContainerConfigError",
    "CreateContainerError": "CreateContainerError",
    "RunContainerError": "RunContainerError",
    "Unschedulable": "Unschedulable",
}
MESSAGE_MAX = 300  # characters of the kubelet's or scheduler's message kept in the status


def cause(pod: Mapping) -> dict | None:
    """`{reason, message}` of a Pending pod that waits for something it cannot get; None otherwise."""
    status = pod.get("status") or {}
    if (status.get("phase") or "Pending") != "Pending":
        return None
    for condition in status.get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False" \
                and condition.get("reason") == "Unschedulable":
            return _cause("Unschedulable", str(condition.get("message") or ""))
    for key in ("initContainerStatuses", "containerStatuses"):
        for container in status.get(key) or ():
            waiting = (container.get("state") or {}).get("waiting") or {}
            reason = waiting.get("reason")
            if reason in CAUSES:
                message = str(waiting.get("message") or "")
                message = condensed(message) if reason in START_WAITS else message
                return _cause(reason, f'container "{container.get("name")}": {message}' if message else
                              f'container "{container.get("name")}"')
    return None


def _cause(reason: str, message: str) -> dict:
    return {"reason": reason, "message": message[:MESSAGE_MAX]}


def same(a: Mapping | None, b: Mapping | None) -> bool:
    """Two causes are one when their reasons belong together (ErrImagePull and ImagePullBackOff)."""
    if not a or not b:
        return not a and not b
    return CAUSES.get(a.get("reason", "")) == CAUSES.get(b.get("reason", ""))


def kept(old: dict | None, seen: dict | None) -> dict | None:
    """The cause to record: the one recorded while it is the same cause (no write while the kubelet flips
    between its reasons), else the one seen."""
    return old if same(old, seen) else seen


def event_message(name: str, waiting: Mapping) -> str:
    return f"Replica {name} is waiting: {waiting['reason']}: {waiting['message']}".rstrip(": ")


def news(changes: Iterable[tuple[str, dict | None, dict | None]]) -> list[tuple[str, str]]:
    """(reason, message) of a Warning Event for each replica (name, recorded cause, new cause) that has begun
    to wait for a new cause."""
    return [(new["reason"], event_message(name, new)) for name, old, new in changes if new and not same(old, new)]


def condition(records: Iterable) -> tuple[str, str] | None:
    """(reason, message) of the ReplicasWaiting condition, from replica records with a `waiting` cause; None
    when no replica waits."""
    waiting = [record for record in records if record.waiting]
    if not waiting:
        return None
    first = waiting[0]
    message = event_message(first.name, first.waiting)
    if len(waiting) > 1:
        more = len(waiting) - 1
        message += f"; and {more} more replica{'s' if more > 1 else ''} waiting"
    return str(first.waiting["reason"]), message
