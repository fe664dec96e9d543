"""A job that finishes, and a job that has finished.

`plan_finish`: the verdict is recorded (phase, conditions, completionTime, the failure's cause) with the clean-up
its policy calls for. `settle_finished`: terminal is final — a finished job only keeps its replica records
current and follows its clean-up policy (an edit of the policy deletes what the new one says); any other edit
is ignored, said once by a Normal Event of its generation."""

from __future__ import annotations

from collections.abc import Sequence

from controller.jobs.decisions import cause, cleanup
from controller.jobs.decisions.actions import CLEANUP, NORMAL, DeletePod, Event, Plan, deleted_event, phase_event
from controller.jobs.decisions.deadline import DEADLINE_EXCEEDED
from controller.jobs.decisions.job_conditions import finished_conditions, progress_conditions
from controller.jobs.decisions.replica_records import read_record
from controller.jobs.decisions.restart import Observation, Slot
from controller.jobs.decisions.slots import by_type, pick, slots_of
from controller.jobs.decisions.status_codec import assemble
from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.schema.api import CleanUpPolicy, JobPhase, Verdict
from controller.jobs.schema.naming import replica_of


def clean_up_policy(job: ParsedJob, verdict: Verdict) -> CleanUpPolicy:
    policy = job.spec.clean_up_policy
    if verdict.reason == DEADLINE_EXCEEDED and policy == CleanUpPolicy.NONE:
        policy = CleanUpPolicy.UNFINISHED  # past its deadline a job stops: its running pods are deleted
    return policy


def plan_finish(kind: JobKind, job: ParsedJob, old: dict, observations: list[Observation], verdict: Verdict, now: str,
                delete: list, events: list, leaving: Sequence[Observation] = ()) -> Plan:
    """The job has just succeeded or failed: record it, with the clean-up it calls for. `leaving`: the
    observations of ranks scaled away in the same moment (one of them may be the cause)."""
    verdict = cause.explained(verdict, [*observations, *leaving])  # a failure's reason, and its cause
    events = [*events, phase_event(verdict.phase, verdict.message)]
    slots = slots_of(observations)
    policy = clean_up_policy(job, verdict)
    settled = [cleanup.settle(policy, slot.record, slot.pod, slot.create_pending) for slot in slots]
    delete, events = _cleanup_actions(slots, settled, delete, events)
    old_conditions = old.get("conditions") or []
    # Initialized and ReplicaFailure describe the replicas as the job ended, before the clean-up.
    conditions = progress_conditions(old_conditions, phase=verdict.phase, records=[o.record for o in observations],
                                     now=now)
    reason = verdict.reason or str(verdict.phase)
    conditions = finished_conditions(conditions, succeeded=verdict.phase == JobPhase.SUCCEEDED,
                                     reason=reason, message=verdict.message, now=now)
    new = assemble(old, kind.status, phase=verdict.phase, conditions=conditions,
                   records_by_type=by_type(job, slots, [s.record for s in settled]),
                   start_time=old.get("startTime") or now, completion_time=now, reason=reason)
    new[cleanup.FINISHED_POLICY] = str(policy)  # later edits of the spec are ignored: its clean-up stays this one
    return Plan(new, delete=delete, events=events, terminal=True)


SPEC_IGNORED = "the job has finished; spec changes are ignored"


CLEANUP_POLICY_APPLIED = "CleanUpPolicyApplied"


def settle_finished(kind: JobKind, job: ParsedJob, old: dict, pods: list[dict], creating: frozenset[str]) -> Plan:
    """Terminal is final: a finished job never changes phase, conditions, times or counters again, never creates
    a pod, and no edit of its spec (scale, template, run mode) changes what it has: its replicas are the ones it
    finished with. Its clean-up follows the current policy: an edit of the policy deletes what the new one
    says (cleanup.py). It only keeps its replica records current and does that clean-up. An edit is said once,
    by a Normal Event of its generation."""
    policy = cleanup.finished_policy(job, old)
    by_replica: dict[str, list[dict]] = {}
    for p in pods:
        if replica_of(kind.api, p) is not None:
            by_replica.setdefault(p["metadata"]["name"], []).append(p)
    delete: list = []
    events: list = []
    by_type = []
    for replica_type, raws in kind.status.stored_types(old):
        records = []
        for raw in raws:
            record = read_record(raw, raw.get("name") or "")
            pod = pick(by_replica.get(record.name, []), record)
            settled = cleanup.settle(policy, record, pod, record.name in creating)
            if settled.delete:
                delete.append(DeletePod(record.name, settled.delete, CLEANUP))
            if settled.cleaned:
                events.append(deleted_event(record.name))
            records.append(settled.record)
        by_type.append((replica_type, records))
    if old.get("observedGeneration") is not None and job.generation != old.get("observedGeneration"):
        events.append(_finished_edit_event(cleanup.stored_policy(old), policy))
    new = assemble(old, kind.status, phase=old["phase"], conditions=old.get("conditions") or [],
                   records_by_type=by_type, start_time=None, completion_time=None)  # (both kept, from `old`)
    new[cleanup.FINISHED_POLICY] = str(policy)  # so the next edit of the policy is told from other edits
    return Plan(new, delete=delete, events=events, terminal=True)


def _finished_edit_event(was: CleanUpPolicy | None, policy: CleanUpPolicy) -> Event:
    """What an edit of a finished job does: a new clean-up policy is applied; anything else is ignored."""
    if was is None or was == policy:
        return Event(NORMAL, "SpecChangeIgnored", SPEC_IGNORED)
    return Event(NORMAL, CLEANUP_POLICY_APPLIED, f"the job has finished; its clean-up now follows cleanUpPolicy "
                 f"{policy} (was {was}); other spec changes are ignored")


def _cleanup_actions(slots: list[Slot], settled: list[cleanup.Settled], delete: list,
                     events: list) -> tuple[list, list]:
    for slot, s in zip(slots, settled, strict=True):
        if s.delete:
            delete = [*delete, DeletePod(slot.name, s.delete, CLEANUP)]
        if s.cleaned:
            events = [*events, deleted_event(slot.name)]
    return delete, events
