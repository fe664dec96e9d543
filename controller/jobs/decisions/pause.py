"""A paused job's plan (`plan_pause`): its pods are deleted without counting a restart (a failure seen with the
pause is judged first), its records kept for the resume, and its phase and Paused condition set."""

from __future__ import annotations

from controller.jobs.decisions import group, restart
from controller.jobs.decisions.actions import NORMAL, PAUSE, DeletePod, Event, Plan, deleted_event, phase_events
from controller.jobs.decisions.backoff import RestartBackoff
from controller.jobs.decisions.job_conditions import pause_conditions, progress_conditions, unfinished_conditions
from controller.jobs.decisions.replica_records import DELETED
from controller.jobs.decisions.restart import Observation
from controller.jobs.decisions.slots import by_type, slots_of
from controller.jobs.decisions.status_codec import assemble
from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.schema.api import JobPhase


def plan_pause(kind: JobKind, job: ParsedJob, old: dict, observations: list[Observation], now: str,
               delete: list, events: list, now_epoch: float, backoff: RestartBackoff) -> Plan:
    # A failure seen with the pause is judged first: a restart it used is counted (restart.pause).
    # A group's restarts seen together count one (group.py), as when the job runs.
    steps, _ = group.count_once(kind, job, observations, [restart.pause(o, now_epoch, backoff) for o in observations])
    records = [s.record for s in steps]
    for o, s in zip(observations, steps, strict=True):
        if s.restart_event:
            events = [*events, Event(NORMAL, "Restarting", s.restart_event)]
        if s.delete:
            delete = [*delete, DeletePod(o.slot.name, s.delete, PAUSE)]
            if o.slot.record.phase != DELETED:
                events = [*events, deleted_event(o.slot.name)]
    pods_left = any(o.slot.pod is not None for o in observations)
    old_conditions = old.get("conditions") or []
    conditions = progress_conditions(old_conditions, phase=JobPhase.PAUSED, records=records, now=now)
    conditions = unfinished_conditions(conditions, now)
    conditions = pause_conditions(conditions, paused=True, pods_left=pods_left, now=now)
    new = assemble(old, kind.status, phase=JobPhase.PAUSED, conditions=conditions,
                   records_by_type=by_type(job, slots_of(observations), records),
                   start_time=None, completion_time=None)  # (the start kept as it was, from `old`)
    return Plan(new, delete=delete, events=events + phase_events(old, JobPhase.PAUSED))
