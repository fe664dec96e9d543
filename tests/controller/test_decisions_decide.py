"""decide.py, the decisions' one door: what it adds to a job's plan (the names taken it still waits for and its
ChildConflict condition, the hold released, whether the status write confirms the cache or may wait for the pods
starting with it), decided from plan()'s inputs alone, with no reconciler."""

from __future__ import annotations

from dataclasses import dataclass

from controller.jobs.decisions.actions import WriteFailure
from controller.jobs.decisions.coalesce import starts_only
from controller.jobs.decisions.conflicts import CHILD_CONFLICT, Conflict
from controller.jobs.decisions.decide import decide, plans_replicas
from controller.jobs.decisions.held import RELEASED, SPEC_INVALID
from controller.jobs.decisions.job_conditions import find_condition
from controller.jobs.decisions.oversize import STATUS_TOO_LARGE
from controller.jobs.schema.naming import replica_name
from controller.kinds.genericjob.kind import GENERICJOB
from tests.builders import JobBuilder

from .plan_support import JOB, JOB_UID, at, make_pod

NOW = at(10)
TAKEN = Conflict(f"pod {replica_name(JOB, 'worker', 0)}", "GenericJob other")
GONE = Conflict(f"pod {replica_name(JOB, 'worker', 9)}", "no controller")


@dataclass(frozen=True)
class Problem:  # a kind's SpecProblem
    field: str
    message: str


def job_obj(workers: int = 2, status: dict | None = None) -> dict:
    obj = JobBuilder(JOB, namespace="ns", uid=JOB_UID, generation=1).spec(replicaSpecs=[
        {"type": "worker", "replicas": workers,
         "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}]).obj()
    return {**obj, "status": status or {}}


def decided(obj: dict, pods: list[dict] | None = None, **inputs):
    return decide(GENERICJOB, obj, GENERICJOB.parse(obj), pods or [], NOW, **inputs)


def test_a_taken_name_the_plan_still_creates_is_kept_and_shown_and_one_it_no_longer_creates_forgotten():
    the_plan = decided(job_obj(), taken=[TAKEN, GONE])
    assert the_plan.taken == (TAKEN,)
    condition = find_condition(the_plan.status["conditions"], CHILD_CONFLICT)
    assert condition is not None and condition["status"] == "True" and condition["reason"] == "NameTaken"
    assert TAKEN.what in condition["message"] and GONE.what not in condition["message"]


def test_once_no_name_is_taken_the_condition_says_so_and_a_job_that_never_met_one_has_none():
    shown = decided(job_obj(), taken=[TAKEN]).status
    freed = decided(job_obj(status=shown))
    condition = find_condition(freed.status["conditions"], CHILD_CONFLICT)
    assert condition is not None and condition["status"] == "False" and freed.taken == ()
    assert find_condition(decided(job_obj()).status["conditions"], CHILD_CONFLICT) is None


def test_a_job_that_cannot_run_waits_for_no_name():
    obj = job_obj()
    problems = [Problem("spec.replicaSpecs", "no")]
    the_plan = decide(GENERICJOB, obj, problems, [], NOW, taken=[TAKEN])
    assert the_plan.taken == () and the_plan.terminal
    assert find_condition(the_plan.status["conditions"], CHILD_CONFLICT) is None


def test_a_finished_jobs_conditions_are_not_touched_for_a_taken_name():
    status = {"phase": "Failed", "conditions": []}
    assert find_condition(decided(job_obj(status=status), taken=[TAKEN]).status["conditions"] or [],
                          CHILD_CONFLICT) is None


def test_the_status_confirms_the_cache_when_the_plan_sends_creates_and_not_for_creates_in_flight():
    obj = job_obj()
    assert decided(obj).confirm
    in_flight = frozenset(replica_name(JOB, "worker", rank) for rank in range(2))
    the_plan = decided(obj, creating=in_flight)
    assert the_plan.create and not the_plan.confirm


def test_a_hold_of_an_earlier_generation_is_released_with_one_event():
    held = {"phase": "Running", "conditions": [{"type": SPEC_INVALID, "status": "True", "reason": "InvalidEdit",
                                                 "message": "m", "lastTransitionTime": at(0)}]}
    the_plan = decided(job_obj(status=held))
    condition = find_condition(the_plan.status["conditions"], SPEC_INVALID)
    assert condition is not None and condition["status"] == "False" and condition["reason"] == RELEASED
    assert [e.reason for e in the_plan.events].count(RELEASED) == 1


def statuses_of_pods_starting() -> tuple[dict, list[dict]]:
    """A job's status recording both pods Pending, and its pods with the first one now Running."""
    created = decided(job_obj()).status
    pending = [make_pod("worker", rank, f"uid-{rank}", "Pending") for rank in range(2)]
    recorded = decided(job_obj(status=created), pending).status
    return recorded, [make_pod("worker", 0, "uid-0", "Running"), pending[1]]


def test_a_plan_that_only_reports_pods_starting_may_wait_and_not_after_a_refused_write():
    recorded, pods = statuses_of_pods_starting()
    the_plan = decided(job_obj(status=recorded), pods)
    assert the_plan.may_wait and starts_only(GENERICJOB, recorded, the_plan.status)
    refused = decided(job_obj(status=recorded), pods, write_failure=WriteFailure("FailedCreate", "no"))
    assert not refused.may_wait


def test_a_plan_that_records_a_pod_first_seen_or_creates_pods_is_written_at_once():
    created = decided(job_obj())
    assert not created.may_wait  # it creates pods
    pending = [make_pod("worker", rank, f"uid-{rank}", "Pending") for rank in range(2)]
    first_seen = decided(job_obj(status=created.status), pending)
    assert not first_seen.may_wait and not starts_only(GENERICJOB, created.status, first_seen.status)


def test_only_a_valid_job_not_failed_too_large_is_planned_from_its_replicas():
    job = GENERICJOB.parse(job_obj())
    assert plans_replicas(job, {})
    assert not plans_replicas([Problem("spec", "no")], {})
    too_large = {"phase": "Failed", "reason": STATUS_TOO_LARGE,
                 "conditions": [{"type": "Failed", "status": "True", "reason": STATUS_TOO_LARGE}]}
    assert not plans_replicas(job, too_large)
