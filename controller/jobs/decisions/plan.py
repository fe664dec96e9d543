"""What one reconcile of a job must do: `plan(kind, job, status, pods, now, ...) -> Plan`.

Pure: no I/O, no clock (`now` and `clock` are passed in). With the plans of a job that cannot run (invalid.py,
held.py), and what decide.py adds to them (the hold released, the names taken, the status write's confirmation and
coalescing), this is the only place decisions are made: the status, pod deletes and creates, Service and PodGroup
upkeep, force deletes of pods stuck terminating, every Event, and when to look again (`requeue_after`); the
reconciler asks decide.py, the one door, and decides nothing itself. The reconciler executes a plan:
it writes `plan.status` first (when it differs from the status it read, and always when the plan
creates pods, to prove the cached job current; a 409 aborts the reconcile), then the deletes, the
PodGroup, the creates, the Services, the Events and the force deletes. The status is written first,
so it already records everything a crash between those steps would otherwise lose: restarts are
counted, and pods retired, before the pods are touched. Replaying a plan with the written status
and the old pods repeats only the pod actions.

Order of decisions: a finished job only cleans up (terminal is final: its spec is no longer read, only the
records and the clean-up policy it finished with); otherwise the kind's verdict is asked first (over the outcomes of
pods that ran the workload), paused or not, so once the outcome is decided nothing restarts and no pause throws it
away; then a paused job deletes its pods, and a running job restarts and creates them.

Each situation has its module: slots.py gathers the replicas, scale_down.py the ranks scaled away, deadline.py
the active deadline, finish.py a job that finishes or has finished, pause.py a paused job, run.py a running one,
invalid.py one that cannot run, stuck.py the pods stuck terminating; upkeep.py its Services, PodGroup and
dependents. This module puts them in that order.
"""

from __future__ import annotations

from collections.abc import Mapping

from apimachinery.resource import Resource
from controller.jobs.decisions import cleanup, edits, group, restart, upkeep
from controller.jobs.decisions.actions import (
    CLEANUP,
    DEBUG,
    IMMEDIATE,
    NORMAL,
    PAUSE,
    RESTART,
    RESUME,
    SCALE_DOWN,
    WARNING,
    Event,
    Plan,
    WriteFailure,
    soonest,
)
from controller.jobs.decisions.backoff import NO_BACKOFF, RestartBackoff, epoch
from controller.jobs.decisions.deadline import deadline
from controller.jobs.decisions.finish import clean_up_policy, plan_finish, settle_finished
from controller.jobs.decisions.invalid import plan_invalid
from controller.jobs.decisions.job_conditions import write_failure_condition
from controller.jobs.decisions.pause import plan_pause
from controller.jobs.decisions.pod_state import pod_uid
from controller.jobs.decisions.replica_records import blank_record
from controller.jobs.decisions.restart import Seen
from controller.jobs.decisions.run import plan_run
from controller.jobs.decisions.scale_down import judged_away, scaled_down, settle_leaving, with_removed
from controller.jobs.decisions.slots import gather_slots
from controller.jobs.decisions.stuck import STUCK_TERMINATING_AFTER, stuck_pods
from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.schema.api import TERMINAL_PHASES, JobPhase

__all__ = ["CLEANUP", "DEBUG", "IMMEDIATE", "NORMAL", "PAUSE", "RESTART", "RESUME", "SCALE_DOWN",
           "STUCK_TERMINATING_AFTER", "WARNING", "Plan", "WriteFailure", "plan", "plan_invalid"]


def plan(kind: JobKind, job: ParsedJob, status: dict, pods: list[dict], now: str, *,
         services: list[dict] | None = None, podgroups: list[dict] | None = None, clock: float | None = None,
         stuck_after: float = STUCK_TERMINATING_AFTER, write_failure: WriteFailure | None = None,
         restart_backoff: RestartBackoff = NO_BACKOFF, dependents: Mapping[Resource, list[dict] | None] | None = None,
         creating: frozenset[str] = frozenset()) -> Plan:
    """The plan for a job whose spec is valid. `services` and `podgroups` are the job's children as cached
    (None: not watched, left alone); `clock` is the wall-clock time in seconds, for pods stuck terminating
    (None: not checked); `write_failure` the first write refused in the job's last reconcile;
    `restart_backoff` how long replacements wait (backoff.py); `dependents` the job's objects of each of the
    kind's dependent resources (None, or a resource left out: the cluster has no such API); `creating` the
    names of pods whose create was sent but that the cache does not show yet."""
    core = _plan_replicas(kind, job, status, pods, now, restart_backoff, clock, creating)
    if write_failure is not None and not core.terminal:
        # Shown as a ReplicaSet shows its FailedCreate; a finished job's conditions never change.
        conditions = write_failure_condition(core.status.get("conditions") or [], status.get("conditions") or [],
                                             write_failure.reason, write_failure.message, now)
        core = core.but(status={**core.status, "conditions": conditions})
    # A paused job makes nothing new (a job created paused has no Services or PodGroup until resumed);
    # what it already has is kept for the resume.
    making = not core.terminal and not job.spec.run_mode.paused
    podgroup = core.podgroup if podgroups is None else \
        upkeep.podgroup_actions(kind, job, podgroups, terminal=core.terminal, making=making,
                                clean_up=cleanup.finished_policy(job, core.status))
    kept_services = core.services if services is None else \
        upkeep.service_actions(kind, job, core.status, services, terminal=core.terminal, making=making)
    force, stuck_check = stuck_pods(pods, clock, stuck_after)
    kept, reported = upkeep.dependent_actions(kind, job, dependents or {}, terminal=core.terminal, status=core.status)
    new_status, events = core.status, core.events
    if reported:
        new_status = {**core.status, **reported}
        events = [*events, *_dependent_events(status, reported)]
    return core.but(status=new_status, events=events, podgroup=podgroup, services=kept_services, force_delete=force,
                   dependents=kept, requeue_after=soonest(core.requeue_after, stuck_check))


def _dependent_events(old: dict, reported: dict) -> list[Event]:
    """A Warning Event when a dependent's report turns to a Warning (its API missing, say), once."""
    events = []
    for key, value in reported.items():
        previous = old.get(key)
        before = previous if isinstance(previous, dict) else {}
        if isinstance(value, dict) and value.get("type") == WARNING and before.get("reason") != value.get("reason"):
            events.append(Event(WARNING, str(value.get("reason") or key), str(value.get("note") or "")))
    return events


def _plan_replicas(kind: JobKind, job: ParsedJob, status: dict, pods: list[dict], now: str,
                   backoff: RestartBackoff, clock: float | None = None,
                   creating: frozenset[str] = frozenset()) -> Plan:
    old = status or {}
    if old.get("phase") in TERMINAL_PHASES:
        # The ranks scaled away are in the stored tasks (but for an earlier version's, stored apart: moved in),
        # settled with the others by the clean-up policy in force: one scaled away in the moment its job ended
        # kept its pod but for that policy (below), and one the scale-down deleted stays Deleted (cleanup.settle).
        legacy = None
        if edits.REMOVED in old:
            # Only the records an earlier version stored apart are removed: the stored tasks' stand for slots.
            stored = [blank_record(name) for name in kind.status.stored_records(old)]
            legacy = edits.removed(kind, job.name, old, stored, [])
        return with_removed(kind, settle_finished(kind, job, old, pods, creating), legacy or edits.NONE_REMOVED,
                            kept_from=old)
    slots, strays, scaled_away = gather_slots(kind, job, old, pods, creating)
    # Pods of ranks or types no longer in the spec belong to no replica: they go, whatever the phase (their
    # outcomes judged first, below).
    delete, events = scaled_down(strays)

    removed = edits.removed(kind, job.name, old, slots, pods)
    # Every outcome is judged, those of ranks scaled away in the same moment included (after the spec's ranks:
    # a job-wide budget goes to the replicas that stay first).
    together = group.together(kind, job)
    everyone = restart.observe_all([*slots, *scaled_away],
                                   sum(slot.record.restart_count for slot in slots) + removed.restarts, together)
    observations, leaving = everyone[:len(slots)], everyone[len(slots):]
    now_epoch = clock if clock is not None else epoch(now)  # the clock when given: `now` has whole seconds
    run_mode = job.spec.run_mode
    deadline_check = verdict = None
    if not run_mode.paused and old.get("phase") != JobPhase.PAUSED:  # paused time never counts; debug time does
        verdict, deadline_check = deadline(kind.active_deadline(job), old, now_epoch)
    if verdict is None:  # a deadline passed wins over anything the replicas say (failure wins a tie)
        # Every outcome is judged before an edit takes effect: an end the replicas already decided is the
        # end, even when the job was paused (or debug mode changed) in the same moment, or the controller saw
        # both at once. A debug pod's end is no outcome of the workload.
        verdict = kind.verdict(job, edits.judged(observations, leaving))
    # A job that ends now restarts nothing: a retryable failure of a rank scaled away counts only if it goes on.
    removed = judged_away(removed, leaving, now_epoch, backoff, counting=verdict is None,
                          together=together, group_counted=any(
                              o.slot.type in together and restart.will_count(o) for o in observations))
    if verdict is not None:
        # The job ends, so the scale-down seen with it is an edit of a finished job: the pods of the ranks it
        # removed are left to the clean-up policy (their records are kept, in their type's task), as every other
        # pod of the job.
        # (A rank scaled away by an earlier reconcile, whose pod the controller retired, is no rank of the finished
        # job: its record stays Deleted, and its pod's delete is repeated.)
        policy = clean_up_policy(job, verdict)
        kept = {o.slot.name: o.slot.pod for o in leaving if o.slot.pod is not None and o.seen != Seen.RETIRED}
        delete, events = scaled_down(strays, {pod_uid(pod) for pod in kept.values()})
        removed, cleaned, said = settle_leaving(policy, removed, kept)
        finished = plan_finish(kind, job, old, observations, verdict, now, delete, events, leaving)
        return with_removed(kind, finished.but(delete=finished.delete + cleaned, events=finished.events + said),
                            removed)
    if run_mode.paused:
        return with_removed(kind, plan_pause(kind, job, old, observations, now, delete, events, now_epoch, backoff),
                            removed)
    the_plan = with_removed(kind, plan_run(kind, job, old, observations, now, delete, events, now_epoch, backoff),
                            removed)
    if deadline_check is None:
        # Not checked above (resumed just now: the clock restarts, maybe in the second of the stored startTime), or
        # no start until now: the wake-up at the deadline counts from the plan's startTime.
        _, deadline_check = deadline(kind.active_deadline(job), the_plan.status, now_epoch)
    if deadline_check is None:
        return the_plan
    return the_plan.but(requeue_after=soonest(the_plan.requeue_after, deadline_check))
