"""What one reconcile of a GenericJob must do: `plan(job, status, pods, now) -> Plan`.

Pure: no I/O, no clock (`now` is passed in). The reconciler writes `plan.status` (only when it
differs from the status it read; a 409 aborts the reconcile), then deletes, then creates, then
emits the events. The status is written first, so it already records everything a crash between
those steps would otherwise lose: restarts are counted, and pods retired, before the pods are
touched. Replaying a plan with the written status and the old pods repeats only the pod actions.

Order of decisions: a finished job only cleans up; otherwise the success and failure rules are
evaluated first (not in debug mode, not while paused), so once the outcome is decided nothing
restarts; then a paused job deletes its pods, and a running job restarts and creates them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.jobs import cleanup, restart
from controller.jobs import status as st
from controller.jobs.naming import replica_name, replica_of
from controller.jobs.restart import Observation, Slot
from controller.kinds.genericjob import rules
from controller.kinds.genericjob.models import TERMINAL_PHASES, GenericJob, JobPhase

# How `create` entries ask for the pod to be built (the values of pods.PodMode).
IMMEDIATE = "immediate"
DEBUG = "debug"
RESUME = "resume"

# Delete reasons.
RESTART = "restart"
CLEANUP = "cleanup"
PAUSE = "pause"
SCALE_DOWN = "scale-down"

NORMAL = "Normal"
WARNING = "Warning"


@dataclass(frozen=True)
class Plan:
    status: dict  # the complete new status; equal to the input when nothing changed
    create: list[tuple[str, int, str]] = field(default_factory=list)  # (type, rank, mode)
    delete: list[tuple[str, str, str]] = field(default_factory=list)  # (pod name, pod uid, reason)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message), after the write
    terminal: bool = False  # the job has finished: only its clean-up timers need a wake-up


def plan(job: GenericJob, status: dict, pods: list[dict], now: str) -> Plan:
    old = status or {}
    slots, strays = _slots(job, old, pods)
    # Pods of ranks or types no longer in the spec belong to no replica: they go, whatever the phase.
    delete = [(p["metadata"]["name"], st.pod_uid(p), SCALE_DOWN) for p in strays if not st.is_terminating(p)]
    events = [(NORMAL, "SuccessfulDelete", f"Deleted pod: {name}") for name, _, _ in delete]

    if old.get("phase") in TERMINAL_PHASES:
        return _settle_finished(job, old, slots, delete, events)
    observations = [restart.observe(slot) for slot in slots]
    run_mode = job.spec.run_mode
    if not run_mode.paused and not run_mode.debugging:
        verdict = rules.evaluate(job.spec, {(o.slot.type, o.slot.rank): o.outcome for o in observations})
        if verdict is not None:
            return _finish(job, old, observations, verdict, now, delete, events)
    if run_mode.paused:
        return _pause(job, old, observations, now, delete, events)
    return _run(job, old, observations, now, delete, events)


def plan_invalid(status: dict, pods: list[dict], message: str, now: str) -> Plan:
    """For a job whose spec the controller cannot run (validation.invalid_spec_message): Failed with
    reason InvalidSpec, a Warning event, and its unfinished pods deleted (a spec edited into an
    invalid one must not leave pods running). Finished pods are kept for their logs. A job that had
    already finished for another reason keeps its status and its pods."""
    old = status or {}
    conditions = old.get("conditions") or []
    failed = st.find_condition(conditions, st.FAILED)
    already_finished = old.get("phase") in TERMINAL_PHASES
    if already_finished and not (failed and failed.get("reason") == "InvalidSpec"):
        return Plan(old, terminal=True)
    delete = [(p["metadata"]["name"], st.pod_uid(p), CLEANUP) for p in pods
              if st.pod_phase(p) not in st.FINISHED and not st.is_terminating(p)]
    records = _invalid_records(old, pods, {uid for _, uid, _ in delete})
    if already_finished:
        return Plan({**old, **records}, delete=delete, terminal=True)
    conditions = st.set_condition(conditions, st.RUNNING, False, "Failed", "The job has finished.", now)
    conditions = st.finished_conditions(conditions, succeeded=False, reason="InvalidSpec", message=message, now=now)
    new = {**old, **records, "phase": str(JobPhase.FAILED), "conditions": conditions, "completionTime": now}
    return Plan(new, delete=delete, events=[(WARNING, "InvalidSpec", message)], terminal=True)


def _invalid_records(old: dict, pods: list[dict], deleting: set[str]) -> dict:
    """The replica records of a job whose spec is invalid, kept in step with its pods: there is no
    spec to say which replicas exist, so the stored ones are described; those whose pod is being
    deleted, or is gone, are Deleted. Empty when the job never had a status of its replicas."""
    if not old.get("tasks"):
        return {}
    by_name = {p["metadata"]["name"]: p for p in pods}
    by_type = []
    for task in old["tasks"]:
        records = []
        for raw in task.get("replicas") or ():
            record = st.read_record(raw, raw.get("name") or "")
            pod = by_name.get(record["name"])
            if pod is None or st.pod_uid(pod) in deleting or st.is_terminating(pod):
                records.append({**record, "phase": st.DELETED})
            else:
                records.append(st.observed(record, pod))
        by_type.append((task.get("type") or "", records))
    tasks = st.tasks(by_type)
    return {"tasks": tasks, "aggregate": st.aggregate(r for _, records in by_type for r in records),
            "backoffCount": sum(t["restartCount"] for t in tasks)}


# --- the replicas -------------------------------------------------------------------------------


def _slots(job: GenericJob, old: dict, pods: list[dict]) -> tuple[list[Slot], list[dict]]:
    """One slot per replica of the spec, in spec and rank order, with its stored record and pod;
    and the pods that belong to no replica of the spec."""
    stored = st.stored_records(old)
    by_replica: dict[tuple[str, int], list[dict]] = {}
    for pod in pods:
        key = replica_of(pod)
        if key is not None:  # a pod without our labels is not one we can reason about: left alone
            by_replica.setdefault(key, []).append(pod)
    slots = []
    for spec in job.spec.replica_specs:
        for rank in range(spec.replicas):
            name = replica_name(job.name, spec.type, rank)
            record = st.read_record(stored.get(name), name)
            slots.append(Slot(spec.type, rank, name, spec.restart_policy, record,
                              _pick(by_replica.pop((spec.type, rank), []), record)))
    strays = sorted((p for found in by_replica.values() for p in found), key=lambda p: p["metadata"]["name"])
    return slots, strays


def _pick(candidates: list[dict], record: dict) -> dict | None:
    """The pod of a replica. The name is deterministic, so there is at most one unless someone
    made look-alikes by hand: prefer the recorded pod, then any pod not already retired."""
    for pod in candidates:
        if st.pod_uid(pod) == record["uid"] and record["uid"]:
            return pod
    for pod in candidates:
        if st.pod_uid(pod) != record["lastRestartUid"]:
            return pod
    return candidates[0] if candidates else None


def _by_type(job: GenericJob, slots: list[Slot], records: list[dict]) -> list[tuple[str, list[dict]]]:
    grouped: dict[str, list[dict]] = {spec.type: [] for spec in job.spec.replica_specs}
    for slot, record in zip(slots, records, strict=True):
        grouped[slot.type].append(record)
    return list(grouped.items())


# --- the four situations --------------------------------------------------------------------------


def _run(job: GenericJob, old: dict, observations: list[Observation], now: str,
         delete: list, events: list) -> Plan:
    steps = [restart.step(o) for o in observations]
    records = [s.record for s in steps]
    old_conditions = old.get("conditions") or []
    # Debug pods stay debug pods; a job that was ever paused (it has a Paused condition, True or
    # False) creates its pods, restarts included, with the resume overrides.
    mode = DEBUG if job.spec.run_mode.debugging else RESUME if st.ever_paused(old_conditions) else IMMEDIATE
    create = [(o.slot.type, o.slot.rank, mode) for o, s in zip(observations, steps, strict=True) if s.create]
    delete = delete + [(o.slot.name, s.delete, RESTART) for o, s in zip(observations, steps, strict=True)
                       if s.delete]
    events = events + [(NORMAL, "Restarting", s.restart_event) for s in steps if s.restart_event]

    phase = st.next_phase(old.get("phase") or "", paused=False, all_up=st.all_up(records))
    conditions = st.progress_conditions(old_conditions, phase=phase, records=records, now=now)
    conditions = st.unfinished_conditions(conditions, now)
    conditions = st.pause_conditions(conditions, paused=False, pods_left=False, now=now)
    # The job starts when its first pods are asked for (a job created paused has not started).
    start = old.get("startTime") or (now if create else None)
    new = st.assemble(old, phase=phase, conditions=conditions,
                      records_by_type=_by_type(job, _slots_of(observations), records),
                      start_time=start, completion_time=None)
    return Plan(new, create=create, delete=delete, events=events + _phase_events(old, phase))


def _pause(job: GenericJob, old: dict, observations: list[Observation], now: str,
           delete: list, events: list) -> Plan:
    steps = [restart.pause(o) for o in observations]
    records = [s.record for s in steps]
    for o, s in zip(observations, steps, strict=True):
        if s.delete:
            delete = [*delete, (o.slot.name, s.delete, PAUSE)]
            if o.slot.record["phase"] != st.DELETED:
                events = [*events, (NORMAL, "SuccessfulDelete", f"Deleted pod: {o.slot.name}")]
    pods_left = any(o.slot.pod is not None for o in observations)
    old_conditions = old.get("conditions") or []
    conditions = st.progress_conditions(old_conditions, phase=JobPhase.PAUSED, records=records, now=now)
    conditions = st.unfinished_conditions(conditions, now)
    conditions = st.pause_conditions(conditions, paused=True, pods_left=pods_left, now=now)
    new = st.assemble(old, phase=JobPhase.PAUSED, conditions=conditions,
                      records_by_type=_by_type(job, _slots_of(observations), records),
                      start_time=old.get("startTime"), completion_time=None)
    return Plan(new, delete=delete, events=events + _phase_events(old, JobPhase.PAUSED))


def _finish(job: GenericJob, old: dict, observations: list[Observation], verdict: rules.Verdict, now: str,
            delete: list, events: list) -> Plan:
    """The job has just succeeded or failed: record it, with the clean-up it calls for."""
    events = [*events, _phase_event(verdict.phase, verdict.message)]
    slots = _slots_of(observations)
    settled = [cleanup.settle(job.spec.clean_up_policy, slot.record, slot.pod) for slot in slots]
    delete, events = _cleanup_actions(slots, settled, delete, events)
    old_conditions = old.get("conditions") or []
    # Initialized and ReplicaFailure describe the replicas as the job ended, before the clean-up.
    conditions = st.progress_conditions(old_conditions, phase=verdict.phase, records=[o.record for o in observations],
                                        now=now)
    conditions = st.finished_conditions(conditions, succeeded=verdict.phase == JobPhase.SUCCEEDED,
                                        reason=str(verdict.phase), message=verdict.message, now=now)
    new = st.assemble(old, phase=verdict.phase, conditions=conditions,
                      records_by_type=_by_type(job, slots, [s.record for s in settled]),
                      start_time=old.get("startTime") or now, completion_time=now)
    return Plan(new, delete=delete, events=events, terminal=True)


def _settle_finished(job: GenericJob, old: dict, slots: list[Slot], delete: list, events: list) -> Plan:
    """A finished job never changes phase, conditions or times again, and never creates a pod: it
    only keeps its replica records current and finishes its clean-up."""
    settled = [cleanup.settle(job.spec.clean_up_policy, slot.record, slot.pod) for slot in slots]
    delete, events = _cleanup_actions(slots, settled, delete, events)
    new = st.assemble(old, phase=old["phase"], conditions=old.get("conditions") or [],
                      records_by_type=_by_type(job, slots, [s.record for s in settled]),
                      start_time=old.get("startTime"), completion_time=old.get("completionTime"))
    return Plan(new, delete=delete, events=events, terminal=True)


# --- helpers ----------------------------------------------------------------------------------------


def _slots_of(observations: list[Observation]) -> list[Slot]:
    return [o.slot for o in observations]


def _cleanup_actions(slots: list[Slot], settled: list[cleanup.Settled], delete: list,
                     events: list) -> tuple[list, list]:
    for slot, s in zip(slots, settled, strict=True):
        if s.delete:
            delete = [*delete, (slot.name, s.delete, CLEANUP)]
        if s.cleaned:
            events = [*events, (NORMAL, "SuccessfulDelete", f"Deleted pod: {slot.name}")]
    return delete, events


_PHASE_MESSAGES = {
    JobPhase.RUNNING: "The job is running.",
    JobPhase.PAUSED: "The job is paused.",
    JobPhase.RESUMING: "The job is resuming.",
    JobPhase.PENDING: "The job is pending.",
}


def _phase_event(phase: str, message: str | None = None) -> tuple[str, str, str]:
    kind = WARNING if phase == JobPhase.FAILED else NORMAL
    return kind, str(phase), message or _PHASE_MESSAGES.get(phase, f"The job is {str(phase).lower()}.")


def _phase_events(old: dict, phase: str) -> list[tuple[str, str, str]]:
    """One event per phase change; a new job starting out Pending is not news."""
    old_phase = old.get("phase") or ""
    if phase == old_phase or (not old_phase and phase == JobPhase.PENDING):
        return []
    return [_phase_event(phase)]
