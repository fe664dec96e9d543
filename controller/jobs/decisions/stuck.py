"""Pods stuck terminating: force-deleted once their grace period ended `STUCK_TERMINATING_AFTER` seconds ago.

Such a pod is on a node that is gone or not answering, and it blocks its replica: the replacement has the same
name. Every plan asks (plan.py, invalid.py, held.py), whatever the job's phase."""

from __future__ import annotations

from controller.jobs.decisions.actions import ForceDeletePod
from controller.jobs.decisions.backoff import epoch

# Seconds a pod may stay terminating after its grace period ended before it is force-deleted.
STUCK_TERMINATING_AFTER = 60.0


def stuck_pods(pods: list[dict], clock: float | None, stuck_after: float) -> tuple[list[ForceDeletePod], float | None]:
    """Force-deletes of pods still terminating `stuck_after` seconds past the end of their grace period,
    and the seconds until the next one becomes overdue (a wake-up: its kubelet may never send another
    event). None for both when `clock` is None (not checked).

    Such a pod is on a node that is gone or not answering, and it blocks its replica: the replacement
    has the same name, so it cannot be made while the old pod exists."""
    force: list[ForceDeletePod] = []
    next_check = None
    if clock is None:
        return force, next_check
    for pod in pods:
        meta = pod["metadata"]
        deadline = meta.get("deletionTimestamp")
        if not deadline:
            continue
        overdue = clock - (epoch(deadline) + stuck_after)
        if overdue < 0:
            next_check = -overdue if next_check is None else min(next_check, -overdue)
        else:
            force.append(ForceDeletePod(meta["name"], meta["uid"], overdue + stuck_after))
    return force, next_check
