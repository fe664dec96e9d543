"""A running job whose edit is invalid is held, not failed (the spec's "Invalid input is refused").

The CRD refuses most invalid edits, and the admission webhook the rest; one that reaches the controller anyway
(webhook off or down, an older CRD) must not end a job that was running well: the edit is not applied.

- `is_edit`: the job already runs a spec (its status has a phase, not a final one). A job created invalid has
  none and ends Failed/InvalidSpec (invalid.plan_invalid); a finished job stays as it was.
- `plan_held`: while held the controller creates and deletes no pod (nothing the invalid spec says can be
  trusted), keeps the phase and the conditions, and keeps the replica records current from the pods, so
  `kubectl get` still tells the truth. A `SpecInvalid` condition and one Warning Event per generation name the
  field and the generation. Pod outcomes seen meanwhile are only recorded: they are judged, with the restarts
  they call for, once the job is released. The active deadline still applies (paused time never counts): past
  it, the job fails DeadlineExceeded and its unfinished pods are deleted, as a job that cannot run.
- `release`: the first plan of a valid generation sets `SpecInvalid` False with one Normal Event; the job goes
  on with that spec from there (what it asks is planned as any edit).
"""

from __future__ import annotations

from controller.jobs.decisions import edits
from controller.jobs.decisions.actions import NORMAL, WARNING, Event, Plan
from controller.jobs.decisions.backoff import epoch
from controller.jobs.decisions.deadline import DEADLINE_EXCEEDED
from controller.jobs.decisions.invalid import plan_invalid
from controller.jobs.decisions.job_conditions import find_condition, is_true, set_condition
from controller.jobs.decisions.pod_state import pod_uid
from controller.jobs.decisions.replica_records import Replica, observed
from controller.jobs.decisions.stuck import STUCK_TERMINATING_AFTER, stuck_pods
from controller.jobs.kind import JobKind
from controller.jobs.schema.api import TERMINAL_PHASES, JobPhase

SPEC_INVALID = "SpecInvalid"
HELD = "InvalidEdit"
RELEASED = "SpecValid"


def is_edit(status: dict | None) -> bool:
    """Did the job already run a valid spec (so its invalid spec is an edit, to hold, not a creation, to fail)?"""
    phase = (status or {}).get("phase")
    return bool(phase) and phase not in TERMINAL_PHASES


def held_message(generation: int | None, problems: str) -> str:
    return f"The edit of generation {generation} is not applied (the job goes on as it was): {problems}"


def plan_held(kind: JobKind, status: dict, pods: list[dict], problems: str, generation: int | None, now: str, *,
              deadline: float | None = None, clock: float | None = None,
              stuck_after: float = STUCK_TERMINATING_AFTER, services: list[dict] | None = None,
              podgroups: list[dict] | None = None) -> Plan:
    """The plan of a running job whose spec (generation `generation`) has `problems`: see the module's doc.
    `deadline`: the job's runPolicy.activeDeadlineSeconds, read from the object as it is (None: none). It counts
    while the job is active: a pause asked for by the held edit is not applied, so only the phase tells."""
    old = status or {}
    now_epoch = clock if clock is not None else epoch(now)
    left = _deadline_left(deadline, old, now_epoch)
    if left is not None and left <= 0:
        message = f"The job was active longer than its deadline (runPolicy.activeDeadlineSeconds {deadline:g})."
        return plan_invalid(kind, old, pods, message, now, reason=DEADLINE_EXCEEDED, services=services,
                            podgroups=podgroups, clock=clock, stuck_after=stuck_after)
    message = held_message(generation, problems)
    conditions = old.get("conditions") or []
    said = find_condition(conditions, SPEC_INVALID) or {}
    # One Warning Event per held generation: the condition already saying this message means it was sent.
    events = [] if said.get("status") == "True" and said.get("message") == message else [Event(WARNING, HELD, message)]
    conditions = set_condition(conditions, SPEC_INVALID, True, HELD, message, now)
    force, stuck_check = stuck_pods(pods, clock, stuck_after)
    new = {**old, **_current_records(kind, old, pods), "conditions": conditions}
    known = [delay for delay in (left, stuck_check) if delay is not None]
    return Plan(new, events=events, force_delete=force, requeue_after=min(known) if known else None)


def release(the_plan: Plan, old: dict | None, generation: int | None, now: str) -> Plan:
    """The plan of a valid spec, with a hold of an earlier generation lifted (unchanged when none was held)."""
    old = old or {}
    if old.get("phase") in TERMINAL_PHASES or not is_true(old.get("conditions") or [], SPEC_INVALID):
        return the_plan
    message = f"Generation {generation} is valid: the job goes on with it."
    conditions = set_condition(the_plan.status.get("conditions") or [], SPEC_INVALID, False, RELEASED,
                               message, now)
    return the_plan.but(status={**the_plan.status, "conditions": conditions},
                        events=[Event(NORMAL, RELEASED, message), *the_plan.events])


def raw_deadline(obj: dict) -> float | None:
    """`spec.runPolicy.activeDeadlineSeconds` as stored (the training kinds' deadline; a kind without one has
    a CRD that prunes the field): read from the object, since an invalid spec has no parsed model."""
    policy = ((obj.get("spec") or {}).get("runPolicy") or {}) if isinstance(obj.get("spec"), dict) else {}
    seconds = policy.get("activeDeadlineSeconds") if isinstance(policy, dict) else None
    return float(seconds) if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0 else None


def _deadline_left(seconds: float | None, old: dict, now_epoch: float) -> float | None:
    """Seconds until the active deadline passes (<= 0: passed); None without one, or while paused."""
    start = old.get("startTime")
    if not seconds or not start or old.get("phase") == JobPhase.PAUSED:
        return None
    return epoch(start) + seconds - now_epoch


def _current_records(kind: JobKind, old: dict, pods: list[dict]) -> dict:
    """The stored records, each describing its pod as it is now. A record whose pod is gone stays as it was:
    the loss is judged (a restart counted or not) once the job is released, as every outcome is. Counters never
    go down: they may count more than these records (the restarts of ranks scaled away)."""
    def describe(record: Replica, pod: dict | None) -> Replica:
        if pod is None or (record.last_restart_uid and pod_uid(pod) == record.last_restart_uid):
            return record  # retired
        return observed(record, pod)

    return edits.described_records(kind, old, pods, describe)
