"""The phase of a job that has not finished: Pending, Running, Paused, Resuming (finish.py decides the end)."""

from __future__ import annotations

from collections.abc import Iterable

from controller.jobs.decisions.replica_records import UP, Replica
from controller.jobs.schema.api import JobPhase


def next_phase(old_phase: str, *, paused: bool, all_up: bool) -> JobPhase:
    """The phase of a job that has not finished. Pending until every replica's pod is running or
    finished; Running after that, even while replicas restart; Paused, then Resuming until every
    replica is up again."""
    if paused:
        return JobPhase.PAUSED
    if old_phase in (JobPhase.PAUSED, JobPhase.RESUMING):
        return JobPhase.RUNNING if all_up else JobPhase.RESUMING
    if old_phase == JobPhase.RUNNING or all_up:
        return JobPhase.RUNNING
    return JobPhase.PENDING


def all_up(records: Iterable[Replica]) -> bool:
    return all(r.phase in UP for r in records)
