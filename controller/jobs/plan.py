"""What one reconcile of a job must do: `plan(kind, job, status, pods, now, ...) -> Plan`.

Pure: no I/O, no clock (`now` and `clock` are passed in). This is the only place decisions are
made: the status, pod deletes and creates, Service and PodGroup upkeep, force deletes of pods stuck
terminating, every Event, and when to look again (`requeue_after`). The reconciler executes a plan:
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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from apimachinery.resource import Resource
from controller.jobs import cause, children, cleanup, edits, restart, waiting
from controller.jobs import status as st
from controller.jobs.actions import (
    CLEANUP,
    DEBUG,
    IMMEDIATE,
    NORMAL,
    PAUSE,
    PODGROUPS,
    RESTART,
    RESUME,
    SCALE_DOWN,
    SERVICES,
    WARNING,
    ChildAction,
    CreatePod,
    DeletePod,
    Event,
    ForceDeletePod,
    deleted_event,
)
from controller.jobs.api import TERMINAL_PHASES, CleanUpPolicy, JobPhase, Verdict
from controller.jobs.backoff import NO_BACKOFF, RestartBackoff, epoch, stamp
from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.naming import replica_name, replica_of
from controller.jobs.restart import Observation, Seen, Slot
from controller.jobs.status import Replica

__all__ = ["CLEANUP", "DEBUG", "IMMEDIATE", "NORMAL", "PAUSE", "RESTART", "RESUME", "SCALE_DOWN", "WARNING",
           "Plan", "WriteFailure", "plan", "plan_invalid"]

# Seconds a pod may stay terminating after its grace period ended before it is force-deleted.
STUCK_TERMINATING_AFTER = 60.0


@dataclass(frozen=True)
class WriteFailure:
    """The first write the server refused in a job's last reconcile, shown in its ReplicaFailure condition."""

    reason: str  # FailedCreate, FailedDelete or FailedUpdate
    message: str


@dataclass(frozen=True)
class Plan:
    status: dict  # the complete new status; equal to the input when nothing changed
    create: list[CreatePod] = field(default_factory=list)
    delete: list[DeletePod] = field(default_factory=list)
    # In order, after the writes; a SuccessfulDelete only if its delete succeeded (events_after).
    events: list[Event] = field(default_factory=list)
    terminal: bool = False  # the job has finished: only its clean-up remains
    podgroup: list[ChildAction] = field(default_factory=list)
    services: list[ChildAction] = field(default_factory=list)
    force_delete: list[ForceDeletePod] = field(default_factory=list)
    dependents: list[ChildAction] = field(default_factory=list)  # the kind's own dependents (a TensorBoard)
    requeue_after: float | None = None  # seconds until something no watch event announces needs a look

    def but(self, **changes) -> Plan:
        """A copy with `changes`: dataclasses.replace, without its per-field checks (it ran three times a plan, ~4 us
        each, a tenth of an up-to-date reconcile). Plan has no __post_init__ and no init=False fields to honour."""
        new = object.__new__(Plan)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def events_after(self, refused_deletes: Iterable[str]) -> list[Event]:
        """The plan's Events once its writes were tried: none reporting a delete the server refused."""
        refused = {deleted_event(name) for name in refused_deletes}
        return [event for event in self.events if event not in refused]


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
        conditions = st.write_failure_condition(core.status.get("conditions") or [], status.get("conditions") or [],
                                                write_failure.reason, write_failure.message, now)
        core = core.but(status={**core.status, "conditions": conditions})
    # A paused job makes nothing new (a job created paused has no Services or PodGroup until resumed);
    # what it already has is kept for the resume.
    making = not core.terminal and not job.spec.run_mode.paused
    podgroup = core.podgroup if podgroups is None else \
        children.podgroup_actions(kind, job, podgroups, terminal=core.terminal, making=making,
                                  clean_up=cleanup.finished_policy(job, core.status))
    upkeep = core.services if services is None else \
        children.service_actions(kind, job, core.status, services, terminal=core.terminal, making=making)
    force, stuck_check = _stuck_pods(pods, clock, stuck_after)
    kept, reported = children.dependent_actions(kind, job, dependents or {}, terminal=core.terminal)
    new_status, events = core.status, core.events
    if reported:
        new_status = {**core.status, **reported}
        events = [*events, *_dependent_events(status, reported)]
    return core.but(status=new_status, events=events, podgroup=podgroup, services=upkeep, force_delete=force,
                   dependents=kept, requeue_after=_soonest(core.requeue_after, stuck_check))


def _dependent_events(old: dict, reported: dict) -> list[Event]:
    """A Warning Event when a dependent's report turns to a Warning (its API missing, say), once."""
    events = []
    for key, value in reported.items():
        before = old.get(key) if isinstance(old.get(key), dict) else {}
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
        legacy = edits.removed(kind, job.name, old, _legacy_slots(kind, old), []) if edits.REMOVED in old else None
        return _with_removed(kind, _settle_finished(kind, job, old, pods, creating), legacy or edits.NONE_REMOVED,
                             kept_from=old)
    slots, strays, scaled_away = _slots(kind, job, old, pods, creating)
    # Pods of ranks or types no longer in the spec belong to no replica: they go, whatever the phase (their
    # outcomes judged first, below).
    delete, events = _scaled_down(strays)

    removed = edits.removed(kind, job.name, old, slots, pods)
    # Every outcome is judged, those of ranks scaled away in the same moment included (after the spec's ranks:
    # a job-wide budget goes to the replicas that stay first).
    everyone = restart.observe_all([*slots, *scaled_away],
                                   sum(slot.record.restart_count for slot in slots) + removed.restarts)
    observations, leaving = everyone[:len(slots)], everyone[len(slots):]
    now_epoch = clock if clock is not None else epoch(now)  # the clock when given: `now` has whole seconds
    run_mode = job.spec.run_mode
    deadline_check = verdict = None
    if not run_mode.paused and old.get("phase") != JobPhase.PAUSED:  # paused time never counts; debug time does
        verdict, deadline_check = _deadline(kind.active_deadline(job), old, now_epoch)
    if verdict is None:  # a deadline passed wins over anything the replicas say (failure wins a tie)
        # Every outcome is judged before an edit takes effect: an end the replicas already decided is the
        # end, even when the job was paused (or debug mode changed) in the same moment, or the controller saw
        # both at once. A debug pod's end is no outcome of the workload.
        verdict = kind.verdict(job, edits.judged(kind, observations, run_mode.debugging, leaving))
    # A job that ends now restarts nothing: a retryable failure of a rank scaled away counts only if it goes on.
    removed = _judged_away(removed, leaving, stamp(now_epoch), now_epoch, backoff, counting=verdict is None)
    if verdict is not None:
        # The job ends, so the scale-down seen with it is an edit of a finished job: the pods of the ranks it
        # removed are left to the clean-up policy (their records are kept, in their type's task), as every other
        # pod of the job.
        # (A rank scaled away by an earlier reconcile, whose pod the controller retired, is no rank of the finished
        # job: its record stays Deleted, and its pod's delete is repeated.)
        policy = _clean_up_policy(job, verdict)
        kept = {o.slot.name: o.slot.pod for o in leaving if o.slot.pod is not None and o.seen != Seen.RETIRED}
        delete, events = _scaled_down(strays, {st.pod_uid(pod) for pod in kept.values()})
        removed, cleaned, said = _settle_leaving(policy, removed, kept)
        finished = _finish(kind, job, old, observations, verdict, now, delete, events, leaving)
        return _with_removed(kind, finished.but(delete=finished.delete + cleaned, events=finished.events + said),
                             removed)
    if run_mode.paused:
        return _with_removed(kind, _pause(kind, job, old, observations, now, delete, events, now_epoch, backoff),
                             removed)
    the_plan = _with_removed(kind, _run(kind, job, old, observations, now, delete, events, now_epoch, backoff), removed)
    if deadline_check is None and the_plan.status.get("startTime") != old.get("startTime"):
        _, deadline_check = _deadline(kind.active_deadline(job), the_plan.status, now_epoch)  # (re)started just now
    if deadline_check is None:
        return the_plan
    return the_plan.but(requeue_after=_soonest(the_plan.requeue_after, deadline_check))


def _scaled_down(strays: list[dict], kept: set[str] = frozenset()) -> tuple[list[DeletePod], list[Event]]:
    """The deletes of pods of ranks or types no longer in the spec (but those of uids `kept`), and their Events."""
    delete = [DeletePod(p["metadata"]["name"], st.pod_uid(p), SCALE_DOWN) for p in strays
              if not st.is_terminating(p) and st.pod_uid(p) not in kept]
    return delete, [deleted_event(d.name) for d in delete]


def _settle_leaving(policy: CleanUpPolicy, removed: edits.Removed,
                    pods: Mapping[str, dict | None]) -> tuple[edits.Removed, list[DeletePod], list[Event]]:
    """The clean-up of ranks scaled away in the moment their job ended, which keep their pods (`pods` by name):
    the scale-down that retired them does not take effect, so their records describe their pods again, and the
    policy settles them as the job's other replicas (a pod it keeps keeps its record's phase)."""
    by_type: dict[str, list[Replica]] = {}
    delete, events = [], []
    for replica_type, records in removed.by_type.items():
        settled_records = by_type.setdefault(replica_type, [])
        for record in records:
            pod = pods.get(record.name)
            if pod is None or st.is_terminating(pod):  # gone or going: the record stays as it was
                settled_records.append(record)
                continue
            settled = cleanup.settle(policy, st.observed(record, pod), pod)
            settled_records.append(settled.record)
            if settled.delete:
                delete.append(DeletePod(record.name, settled.delete, CLEANUP))
            if settled.cleaned:
                events.append(deleted_event(record.name))
    return edits.Removed(by_type, removed.carried), delete, events


def _clean_up_policy(job: ParsedJob, verdict: Verdict) -> CleanUpPolicy:
    policy = job.spec.clean_up_policy
    if verdict.reason == DEADLINE_EXCEEDED and policy == CleanUpPolicy.NONE:
        policy = CleanUpPolicy.UNFINISHED  # past its deadline a job stops: its running pods are deleted
    return policy


def _judged_away(removed: edits.Removed, leaving: list[Observation], now: str, now_epoch: float,
                 backoff: RestartBackoff, counting: bool = True) -> edits.Removed:
    """The records of ranks scaled away (Deleted, in their type's task), with what their pods came to as the
    scale-down was seen: a failure their policy replaces used a restart (counted, never refunded, though the rank
    is not recreated), unless the job ends (`counting` False: as for its other replicas, a failure seen as it ends
    is no restart). A rank whose record was dropped for size keeps that restart in its type's count."""
    if not leaving:
        return removed
    judged = {}
    for o in leaving:
        record = o.record
        if counting and restart.will_count(o):
            record = record.counted(now, backoff.streak(record.restart_streak, o.slot.pod, now_epoch))
        judged[o.slot.name] = (o.slot.type, o.slot.record.restart_count, record.retired().in_phase(st.DELETED))
    by_type = {replica_type: [judged.pop(r.name)[2] if r.name in judged else r for r in records]
               for replica_type, records in removed.by_type.items()}
    carried = dict(removed.carried)
    for replica_type, stored_count, record in judged.values():  # (records not kept: their restarts are carried)
        if record.restart_count > stored_count:
            carried[replica_type] = carried.get(replica_type, 0) + record.restart_count - stored_count
    return edits.Removed(by_type, carried)


DEADLINE_EXCEEDED = "DeadlineExceeded"


def _deadline(seconds: float | None, status: dict, now_epoch: float) -> tuple[Verdict | None, float | None]:
    """The verdict of a job whose active deadline has passed since its startTime, or the seconds until it
    passes (a wake-up: nothing else would announce it). (None, None) without a deadline or a start."""
    start = status.get("startTime")
    if not seconds or not start:
        return None, None
    left = epoch(start) + seconds - now_epoch
    if left > 0:
        return None, left
    return Verdict(JobPhase.FAILED, None, f"The job was active longer than its deadline "
                   f"(runPolicy.activeDeadlineSeconds {seconds:g}).", reason=DEADLINE_EXCEEDED), None


def _soonest(*delays: float | None) -> float | None:
    known = [d for d in delays if d is not None]
    return min(known) if known else None


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
    failed = st.find_condition(conditions, st.FAILED)
    already_finished = old.get("phase") in TERMINAL_PHASES
    removed = {"services": children.remove_all(SERVICES, services or ()),
               "podgroup": children.remove_all(PODGROUPS, podgroups or ())}
    force, requeue_after = _stuck_pods(pods, clock, stuck_after)
    removed.update(force_delete=force, requeue_after=requeue_after)
    if already_finished and not (failed and failed.get("reason") == reason):
        return Plan(old, terminal=True, **removed)
    delete = [DeletePod(p["metadata"]["name"], st.pod_uid(p), CLEANUP) for p in pods
              if st.pod_phase(p) not in st.FINISHED and not st.is_terminating(p)]
    records = _invalid_records(kind, old, pods, {d.uid for d in delete})
    if already_finished:
        return Plan({**old, **records}, delete=delete, terminal=True, **removed)
    conditions = st.set_condition(conditions, st.RUNNING, False, "Failed", "The job has finished.", now)
    conditions = st.finished_conditions(conditions, succeeded=False, reason=reason, message=message, now=now)
    new = {**old, **records, "phase": str(JobPhase.FAILED), "conditions": conditions, "completionTime": now,
           "reason": reason}
    return Plan(new, delete=delete, events=[Event(WARNING, reason, message)], terminal=True, **removed)


def _stuck_pods(pods: list[dict], clock: float | None, stuck_after: float) -> tuple[list[ForceDeletePod], float | None]:
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


def _invalid_records(kind: JobKind, old: dict, pods: list[dict], deleting: set[str]) -> dict:
    """The replica records of a job whose spec is invalid, kept in step with its pods: there is no
    spec to say which replicas exist, so the stored ones are described; those whose pod is being
    deleted, or is gone, are Deleted. Counters never decrease (those of ranks scaled away included: the stored
    backoffCount counts them, those an earlier version stored apart too), and `ready` counts the spec's replicas."""
    def describe(record: Replica, pod: dict | None) -> Replica:
        if pod is None or st.pod_uid(pod) in deleting or st.is_terminating(pod):
            return record.in_phase(st.DELETED)
        return st.observed(record, pod)

    return edits.described_records(kind, old, pods, describe)


# --- the replicas -------------------------------------------------------------------------------


def _slots(kind: JobKind, job: ParsedJob, old: dict, pods: list[dict],
           creating: frozenset[str] = frozenset()) -> tuple[list[Slot], list[dict], list[Slot]]:
    """One slot per replica of the spec, in spec and rank order, with its stored record and pod; the pods
    that belong to no replica of the spec; and a slot for each rank scaled away that still has a pod and a
    record, so that the pod's outcome is judged before the scale-down deletes it."""
    stored = kind.status.stored_records(old)
    removed = edits.removed_records(old)
    if removed:
        stored = {**removed, **stored}
    by_replica: dict[tuple[str, int], list[dict]] = {}
    for pod in pods:
        key = replica_of(kind.api, pod)
        if key is not None:  # a pod without our labels is not one we can reason about: left alone
            by_replica.setdefault(key, []).append(pod)
    slots = []
    debugging = job.spec.run_mode.debugging
    rules = {spec.type: kind.restart_rule(job, spec.type) for spec in job.spec.replica_specs}
    counts = kind.replica_counts(job)
    for spec in job.spec.replica_specs:
        for rank in range(counts[spec.type]):
            name = replica_name(job.name, spec.type, rank)
            record = st.read_record(stored.get(name), name)
            candidates = by_replica.pop((spec.type, rank), None)
            pod = _pick(candidates, record) if candidates else None
            slots.append(Slot(spec.type, rank, name, rules[spec.type], record, pod, name in creating,
                              edits.is_debug(kind, pod, record, debugging)))
    strays = sorted((p for found in by_replica.values() for p in found), key=lambda p: p["metadata"]["name"])
    gone = []
    # A paused job's records are all Deleted, those of its ranks as those scaled away: an edit not yet seen is
    # what can have removed a rank now.
    paused_edit = old.get("phase") == JobPhase.PAUSED and old.get("observedGeneration") not in (None, job.generation)
    for (replica_type, rank), found in sorted(by_replica.items()):
        name = replica_name(job.name, replica_type, rank)
        # Judged: ranks the last reconcile still ran. A record already Deleted is a rank scaled away before:
        # what its pod does now is after the edit took effect, so it decides nothing; but one the pause retired
        # unseen (the cache lagging) is a rank of the job whose pod outlived the pause, judged as a kept rank's
        # would be, when the edit seen now is what removes it. (A type no longer in the spec has no rule.) The pod
        # the pause did retire is its record's own uid: judging it counts nothing (restart.observe knows it).
        if replica_type not in rules or name not in stored:
            continue
        record = st.read_record(stored[name], name)
        pod = _pick(found, record)
        if record.phase != st.DELETED or paused_edit:
            gone.append(Slot(replica_type, rank, name, rules[replica_type], record, pod, False,
                             edits.is_debug(kind, pod, record, debugging)))
    return slots, strays, gone


def _pick(candidates: list[dict], record: Replica) -> dict | None:
    """The pod of a replica. The name is deterministic, so there is at most one unless someone
    made look-alikes by hand: prefer the recorded pod, then any pod not already retired."""
    for pod in candidates:
        if st.pod_uid(pod) == record.uid and record.uid:
            return pod
    for pod in candidates:
        if st.pod_uid(pod) != record.last_restart_uid:
            return pod
    return candidates[0] if candidates else None


def _by_type(job: ParsedJob, slots: list[Slot], records: list[Replica]) -> list[tuple[str, list[Replica]]]:
    grouped: dict[str, list[Replica]] = {spec.type: [] for spec in job.spec.replica_specs}
    for slot, record in zip(slots, records, strict=True):
        grouped[slot.type].append(record)
    return list(grouped.items())


# --- the four situations --------------------------------------------------------------------------


def _run(kind: JobKind, job: ParsedJob, old: dict, observations: list[Observation], now: str,
         delete: list, events: list, now_epoch: float, backoff: RestartBackoff) -> Plan:
    restarted_at = stamp(now_epoch)
    debugging = job.spec.run_mode.debugging
    old_conditions = old.get("conditions") or []
    # Debug pods stay debug pods; a job that was ever paused (it has a Paused condition, True or
    # False) creates its pods, restarts included, with the resume overrides.
    mode = DEBUG if job.spec.run_mode.debugging else RESUME if st.ever_paused(old_conditions) else IMMEDIATE
    switched, steps, records, create, restart_deletes, restarting, waits = [], [], [], [], [], [], []
    for o in observations:  # (one pass over the replicas, where a plan made seven)
        # Debug mode turned on or off: the pods of the other mode go without counting a restart, as for a pause,
        # and their replacements are made in the new mode once they are gone.
        other = edits.other_mode(kind, o, debugging)
        if other:
            s = restart.pause(o)
        elif o.slot.debug:  # a debug pod decides and counts nothing; once debug is off, its successor is made at once
            s = restart.debug_step(o, restarted_at, now_epoch, backoff if debugging else NO_BACKOFF)
        else:
            s = restart.step(o, restarted_at, now_epoch, backoff)
        slot = o.slot
        switched.append(other)
        steps.append(s)
        records.append(s.record)
        if s.create:
            create.append(CreatePod(slot.type, slot.rank, mode))
        if s.delete:
            restart_deletes.append(DeletePod(slot.name, s.delete, RESTART))
        if s.restart_event:
            restarting.append(Event(NORMAL, "Restarting", s.restart_event))
        waits.append((slot.name, slot.record.waiting, s.record.waiting))
    delete = delete + restart_deletes
    events = events + restarting
    events = events + [Event(WARNING, reason, message) for reason, message in waiting.news(waits)]
    templates, changed = edits.template_changes(kind, job, old)
    events += changed
    if any(switched):
        names = [o.slot.name for o, other in zip(observations, switched, strict=True) if other]
        shown = ", ".join(names[:st.NAMES_SHOWN]) + (f" and {len(names) - st.NAMES_SHOWN} more"
                                                      if len(names) > st.NAMES_SHOWN else "")
        events.append(Event(NORMAL, "RunModeChanged", f"Debug mode turned {'on' if debugging else 'off'}: "
                            f"replacing the pods of {shown}"))

    phase = st.next_phase(old.get("phase") or "", paused=False, all_up=st.all_up(records))
    conditions = st.progress_conditions(old_conditions, phase=phase, records=records, now=now)
    conditions = st.unfinished_conditions(conditions, now)
    conditions = st.pause_conditions(conditions, paused=False, pods_left=False, now=now)
    # A running job has started: its first pods are asked for now (a job created paused had not started), or it
    # is found running with no startTime (its status lost), and its deadline's clock runs from now. The clock
    # restarts at resume, as Kubeflow's and batch/v1 Job's: paused time never counts.
    resumed = old.get("phase") == JobPhase.PAUSED and old.get("startTime")
    start = now if resumed else old.get("startTime") or now
    new = st.assemble(old, kind.status, phase=phase, conditions=conditions,
                      records_by_type=_by_type(job, _slots_of(observations), records),
                      start_time=start, completion_time=None)
    new[edits.TEMPLATES] = templates
    return Plan(new, create=create, delete=delete, events=events + _phase_events(old, phase),
                requeue_after=_soonest(*(s.wake for s in steps)))


def _pause(kind: JobKind, job: ParsedJob, old: dict, observations: list[Observation], now: str,
           delete: list, events: list, now_epoch: float, backoff: RestartBackoff) -> Plan:
    # A failure seen with the pause is judged first: a restart it used is counted (restart.pause).
    steps = [restart.pause(o, stamp(now_epoch), now_epoch, backoff) for o in observations]
    records = [s.record for s in steps]
    for o, s in zip(observations, steps, strict=True):
        if s.restart_event:
            events = [*events, Event(NORMAL, "Restarting", s.restart_event)]
        if s.delete:
            delete = [*delete, DeletePod(o.slot.name, s.delete, PAUSE)]
            if o.slot.record.phase != st.DELETED:
                events = [*events, deleted_event(o.slot.name)]
    pods_left = any(o.slot.pod is not None for o in observations)
    old_conditions = old.get("conditions") or []
    conditions = st.progress_conditions(old_conditions, phase=JobPhase.PAUSED, records=records, now=now)
    conditions = st.unfinished_conditions(conditions, now)
    conditions = st.pause_conditions(conditions, paused=True, pods_left=pods_left, now=now)
    new = st.assemble(old, kind.status, phase=JobPhase.PAUSED, conditions=conditions,
                      records_by_type=_by_type(job, _slots_of(observations), records),
                      start_time=old.get("startTime"), completion_time=None)
    return Plan(new, delete=delete, events=events + _phase_events(old, JobPhase.PAUSED))


def _finish(kind: JobKind, job: ParsedJob, old: dict, observations: list[Observation], verdict: Verdict, now: str,
            delete: list, events: list, leaving: list[Observation] = ()) -> Plan:
    """The job has just succeeded or failed: record it, with the clean-up it calls for. `leaving`: the
    observations of ranks scaled away in the same moment (one of them may be the cause)."""
    verdict = cause.explained(verdict, [*observations, *leaving])  # a failure's reason, and its cause
    events = [*events, _phase_event(verdict.phase, verdict.message)]
    slots = _slots_of(observations)
    policy = _clean_up_policy(job, verdict)
    settled = [cleanup.settle(policy, slot.record, slot.pod, slot.create_pending) for slot in slots]
    delete, events = _cleanup_actions(slots, settled, delete, events)
    old_conditions = old.get("conditions") or []
    # Initialized and ReplicaFailure describe the replicas as the job ended, before the clean-up.
    conditions = st.progress_conditions(old_conditions, phase=verdict.phase, records=[o.record for o in observations],
                                        now=now)
    reason = verdict.reason or str(verdict.phase)
    conditions = st.finished_conditions(conditions, succeeded=verdict.phase == JobPhase.SUCCEEDED,
                                        reason=reason, message=verdict.message, now=now)
    new = st.assemble(old, kind.status, phase=verdict.phase, conditions=conditions,
                      records_by_type=_by_type(job, slots, [s.record for s in settled]),
                      start_time=old.get("startTime") or now, completion_time=now, reason=reason)
    new[cleanup.FINISHED_POLICY] = str(policy)  # later edits of the spec are ignored: its clean-up stays this one
    return Plan(new, delete=delete, events=events, terminal=True)


SPEC_IGNORED = "the job has finished; spec changes are ignored"
CLEANUP_POLICY_APPLIED = "CleanUpPolicyApplied"


def _settle_finished(kind: JobKind, job: ParsedJob, old: dict, pods: list[dict], creating: frozenset[str]) -> Plan:
    """Terminal is final: a finished job never changes phase, conditions, times or counters again, never creates
    a pod, and no edit of its spec (scale, template, run mode) changes what it has: its replicas are the ones it
    finished with. Its clean-up follows the current policy: an edit of the policy deletes what the new one
    says (cleanup.py). It only keeps its replica records current and does that clean-up. An edit is said once,
    by a Normal Event of its generation."""
    policy = cleanup.finished_policy(job, old)
    by_replica: dict[str, list[dict]] = {}
    for pod in pods:
        if replica_of(kind.api, pod) is not None:
            by_replica.setdefault(pod["metadata"]["name"], []).append(pod)
    delete: list = []
    events: list = []
    by_type = []
    for replica_type, raws in kind.status.stored_types(old):
        records = []
        for raw in raws:
            record = st.read_record(raw, raw.get("name") or "")
            pod = _pick(by_replica.get(record.name, []), record)
            settled = cleanup.settle(policy, record, pod, record.name in creating)
            if settled.delete:
                delete.append(DeletePod(record.name, settled.delete, CLEANUP))
            if settled.cleaned:
                events.append(deleted_event(record.name))
            records.append(settled.record)
        by_type.append((replica_type, records))
    generation = getattr(job, "generation", None)
    if old.get("observedGeneration") is not None and generation != old.get("observedGeneration"):
        events.append(_finished_edit_event(cleanup.stored_policy(old), policy))
    new = st.assemble(old, kind.status, phase=old["phase"], conditions=old.get("conditions") or [],
                      records_by_type=by_type, start_time=old.get("startTime"),
                      completion_time=old.get("completionTime"))
    new[cleanup.FINISHED_POLICY] = str(policy)  # so the next edit of the policy is told from other edits
    return Plan(new, delete=delete, events=events, terminal=True)


def _finished_edit_event(was: CleanUpPolicy | None, policy: CleanUpPolicy) -> Event:
    """What an edit of a finished job does: a new clean-up policy is applied; anything else is ignored."""
    if was is None or was == policy:
        return Event(NORMAL, "SpecChangeIgnored", SPEC_IGNORED)
    return Event(NORMAL, CLEANUP_POLICY_APPLIED, f"the job has finished; its clean-up now follows cleanUpPolicy "
                 f"{policy} (was {was}); other spec changes are ignored")


# --- helpers ----------------------------------------------------------------------------------------


def _with_removed(kind: JobKind, the_plan: Plan, removed: edits.Removed, kept_from: dict | None = None) -> Plan:
    """The plan's status with the records of ranks scaled away in their types' tasks. `kept_from`: the stored
    status of a finished job, whose counters never change (records settled without the spec keep them)."""
    status = edits.with_removed(kind, the_plan.status, removed)
    if kept_from is not None:
        status = edits.kept_counts(kept_from, status)
    return the_plan if status is the_plan.status else the_plan.but(status=status)


def _legacy_slots(kind: JobKind, old: dict) -> list[Slot]:
    """Stand-ins for the stored records of a finished job, so that only those stored apart count as removed."""
    return [Slot("", 0, name, None, st.blank_record(name), None) for name in kind.status.stored_records(old)]


def _slots_of(observations: list[Observation]) -> list[Slot]:
    return [o.slot for o in observations]


def _cleanup_actions(slots: list[Slot], settled: list[cleanup.Settled], delete: list,
                     events: list) -> tuple[list, list]:
    for slot, s in zip(slots, settled, strict=True):
        if s.delete:
            delete = [*delete, DeletePod(slot.name, s.delete, CLEANUP)]
        if s.cleaned:
            events = [*events, deleted_event(slot.name)]
    return delete, events


_PHASE_MESSAGES = {
    JobPhase.RUNNING: "The job is running.",
    JobPhase.PAUSED: "The job is paused.",
    JobPhase.RESUMING: "The job is resuming.",
    JobPhase.PENDING: "The job is pending.",
}


def _phase_event(phase: str, message: str | None = None) -> Event:
    event_type = WARNING if phase == JobPhase.FAILED else NORMAL
    return Event(event_type, str(phase), message or _PHASE_MESSAGES.get(phase, f"The job is {str(phase).lower()}."))


def _phase_events(old: dict, phase: str) -> list[Event]:
    """One event per phase change; a new job starting out Pending is not news."""
    old_phase = old.get("phase") or ""
    if phase == old_phase or (not old_phase and phase == JobPhase.PENDING):
        return []
    return [_phase_event(phase)]
