"""A running job's plan (`plan_run`): each replica's restart step (restart.py), the pods created and deleted for
it, the pods of the other run mode replaced when debug mode is turned on or off, the waits and template changes
announced, and the phase, conditions and startTime (its clock restarts at resume: paused time never counts)."""

from __future__ import annotations

from controller.jobs.decisions import edits, group, restart, waiting
from controller.jobs.decisions.actions import (
    DEBUG,
    IMMEDIATE,
    NORMAL,
    RESTART,
    RESUME,
    WARNING,
    CreatePod,
    DeletePod,
    Event,
    Plan,
    phase_events,
    soonest,
)
from controller.jobs.decisions.backoff import NO_BACKOFF, RestartBackoff, stamp
from controller.jobs.decisions.job_conditions import (
    NAMES_SHOWN,
    ever_paused,
    pause_conditions,
    progress_conditions,
    unfinished_conditions,
)
from controller.jobs.decisions.phase_machine import all_up, next_phase
from controller.jobs.decisions.restart import Observation
from controller.jobs.decisions.slots import by_type, slots_of
from controller.jobs.decisions.status_codec import assemble
from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.schema.api import JobPhase

GROUP_RESTART = "groupRestart"  # the status field of the last group restart: {replica, message, time}


def plan_run(kind: JobKind, job: ParsedJob, old: dict, observations: list[Observation], now: str,
             delete: list, events: list, now_epoch: float, backoff: RestartBackoff) -> Plan:
    restarted_at = stamp(now_epoch)
    debugging = job.spec.run_mode.debugging
    old_conditions = old.get("conditions") or []
    # Debug pods stay debug pods; a job that was ever paused (it has a Paused condition, True or
    # False) creates its pods, restarts included, with the resume overrides.
    mode = DEBUG if job.spec.run_mode.debugging else RESUME if ever_paused(old_conditions) else IMMEDIATE
    switched, steps, records, create, restart_deletes, restarting, waits = [], [], [], [], [], [], []
    for o in observations:
        # Debug mode turned on or off: the pods of the other mode go without counting a restart, as for a pause,
        # and their replacements are made in the new mode once they are gone.
        other = edits.other_mode(kind, o, debugging)
        if other:
            s = restart.pause(o)
        elif o.slot.debug:  # a debug pod decides and counts nothing; once debug is off, its successor is made at once
            s = restart.debug_step(o, restarted_at, now_epoch, backoff if debugging else NO_BACKOFF)
        else:
            s = restart.step(o, restarted_at, now_epoch, backoff)
        switched.append(other)
        steps.append(s)
    # Replicas that depend on each other (the kind says which): a group restart, then the start order.
    steps, grouped, group_cause = group.restart_group(kind, job, observations, steps, restarted_at)
    steps, ordered = group.start_order(kind, job, observations, steps)
    for o, s in zip(observations, steps, strict=True):  # (one pass over the replicas, where a plan made seven)
        slot = o.slot
        records.append(s.record)
        if s.create:
            create.append(CreatePod(slot.type, slot.rank, mode))
        if s.delete:
            restart_deletes.append(DeletePod(slot.name, s.delete, RESTART))
        if s.restart_event:
            restarting.append(Event(NORMAL, "Restarting", s.restart_event))
        if not group.held(s.record.waiting):  # (the start order's wait is announced by its own Normal Event)
            waits.append((slot.name, slot.record.waiting, s.record.waiting))
    delete = delete + restart_deletes
    events = events + restarting + grouped + ordered
    events = events + [Event(WARNING, reason, message) for reason, message in waiting.news(waits)]
    templates, changed = edits.template_changes(kind, job, old)
    events += changed
    if any(switched):
        names = [o.slot.name for o, other in zip(observations, switched, strict=True) if other]
        shown = ", ".join(names[:NAMES_SHOWN]) + (f" and {len(names) - NAMES_SHOWN} more"
                                                      if len(names) > NAMES_SHOWN else "")
        events.append(Event(NORMAL, "RunModeChanged", f"Debug mode turned {'on' if debugging else 'off'}: "
                            f"replacing the pods of {shown}"))

    phase = next_phase(old.get("phase") or "", paused=False, all_up=all_up(records))
    conditions = progress_conditions(old_conditions, phase=phase, records=records, now=now)
    conditions = unfinished_conditions(conditions, now)
    conditions = pause_conditions(conditions, paused=False, pods_left=False, now=now)
    # A running job has started: its first pods are asked for now (a job created paused had not started), or it
    # is found running with no startTime (its status lost), and its deadline's clock runs from now. The clock
    # restarts at resume, as Kubeflow's and batch/v1 Job's: paused time never counts.
    start = now if old.get("phase") == JobPhase.PAUSED else old.get("startTime") or now
    new = assemble(old, kind.status, phase=phase, conditions=conditions,
                   records_by_type=by_type(job, slots_of(observations), records),
                   start_time=start, completion_time=None)
    new[edits.TEMPLATES] = templates
    if group_cause is not None:  # the last group restart and its cause, kept until the next one
        new[GROUP_RESTART] = group_cause
    return Plan(new, create=create, delete=delete, events=events + phase_events(old, phase),
                requeue_after=soonest(*(s.wake for s in steps)))
