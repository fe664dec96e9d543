"""held.py: a running job whose edit is invalid is held (no pod made or deleted, phase kept, records current,
SpecInvalid and one Warning Event per generation, the deadline still applies), and a valid edit releases it."""

from __future__ import annotations

from controller.jobs.decisions import held
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.tensorflow.kind import TENSORFLOW

from .plan_support import JOB, Pods, at, condition, make_job, plan, record, step
from .status_checks import assert_well_formed

PROBLEM = 'spec.failureRules[1]: rank 1 of "worker" is out of range [0, 1)'


def running(job, pods: Pods) -> dict:
    status = step(job, {}, pods, at(0)).status
    status = step(job, status, pods, at(1)).status
    pods.set_all("Running")
    return step(job, status, pods, at(2)).status


def hold(status: dict, pods: Pods, now: str, generation: int = 2, **options):
    result = held.plan_held(GENERICJOB, status, pods.list(), PROBLEM, generation, now, **options)
    assert_well_formed(result.status, status)
    return result


def test_only_a_job_that_already_runs_is_held():
    assert not held.is_edit({}) and not held.is_edit({"phase": ""})
    assert held.is_edit({"phase": "Running"}) and held.is_edit({"phase": "Paused"})
    assert held.is_edit({"phase": "Pending"})
    assert not held.is_edit({"phase": "Failed"}) and not held.is_edit({"phase": "Succeeded"})


def test_a_held_job_makes_and_deletes_nothing_keeps_its_phase_and_says_so_once_per_generation():
    job, pods = make_job(("worker", 3)), Pods()
    status = running(job, pods)
    result = hold(status, pods, at(5))
    assert result.create == [] and result.delete == [] and not result.terminal
    assert result.status["phase"] == "Running"
    said = condition(result.status, held.SPEC_INVALID)
    assert (said["status"], said["reason"]) == ("True", held.HELD)
    assert said["message"] == f"The edit of generation 2 is not applied (the job goes on as it was): {PROBLEM}"
    assert result.events == [("Warning", held.HELD, said["message"])]
    again = hold(result.status, pods, at(6))
    assert again.events == [] and again.status == result.status
    newer = hold(result.status, pods, at(7), generation=3)
    assert [e.reason for e in newer.events] == [held.HELD] and "generation 3" in newer.events[0].message


def test_records_follow_the_pods_and_a_lost_pod_is_left_for_the_release_to_judge():
    job, pods = make_job(("worker", 3)), Pods()
    status = running(job, pods)
    pods.set("worker", 1, "Failed")
    pods.remove("worker", 2)
    result = hold(status, pods, at(5))
    assert record(result.status, "worker", 1)["phase"] == "Failed"
    assert record(result.status, "worker", 2) == record(status, "worker", 2)  # as it was: judged once released
    assert result.status["aggregate"]["failed"] == 1 and result.status.get("backoffCount", 0) == 0
    assert result.create == [] and result.delete == []


def test_the_release_lifts_the_hold_once_and_the_job_goes_on_with_the_valid_spec():
    job, pods = make_job(("worker", 3)), Pods()
    status = hold(running(job, pods), pods, at(5)).status
    smaller = make_job(("worker", 1))
    released = held.release(plan(smaller, status, pods.list(), at(6)), status, 3, at(6))
    said = condition(released.status, held.SPEC_INVALID)
    assert (said["status"], said["reason"]) == ("False", held.RELEASED) and "Generation 3" in said["message"]
    assert released.events[0] == ("Normal", held.RELEASED, said["message"])
    assert sorted(d.name for d in released.delete) == [f"{JOB}-worker-1", f"{JOB}-worker-2"]  # the scale-down
    later = plan(smaller, released.status, pods.list(), at(7))
    assert held.release(later, released.status, 3, at(7)) is later  # nothing more to lift


def test_the_deadline_still_applies_while_held():
    job, pods = make_job(("worker", 1)), Pods()
    status = {**running(job, pods), "startTime": at(0)}
    waiting = held.plan_held(TENSORFLOW, {**status, "tasks": []}, pods.list(), PROBLEM, 2, at(5), deadline=10)
    assert waiting.requeue_after == 5 and waiting.delete == []
    late = held.plan_held(GENERICJOB, status, pods.list(), PROBLEM, 2, at(11), deadline=10)
    assert late.terminal and late.status["phase"] == "Failed" and late.status["reason"] == "DeadlineExceeded"
    assert [d.name for d in late.delete] == [f"{JOB}-worker-0"]
    paused = held.plan_held(GENERICJOB, {**status, "phase": "Paused"}, pods.list(), PROBLEM, 2, at(11), deadline=10)
    assert not paused.terminal and paused.requeue_after is None  # paused time never counts


def test_the_deadline_is_read_from_the_object_as_stored():
    assert held.raw_deadline({"spec": {"runPolicy": {"activeDeadlineSeconds": 30}}}) == 30
    for spec in ({}, {"runPolicy": {}}, {"runPolicy": {"activeDeadlineSeconds": 0}},
                 {"runPolicy": {"activeDeadlineSeconds": "30"}}, {"runPolicy": "x"}):
        assert held.raw_deadline({"spec": spec}) is None
    assert held.raw_deadline({}) is None and held.raw_deadline({"spec": None}) is None


def test_counters_never_go_down_while_held():
    job, pods = make_job(("worker", 2)), Pods()
    status = running(job, pods)
    status = {**status, "backoffCount": 4, "tasks": [{**task, "restartCount": 3} for task in status["tasks"]]}
    result = hold(status, pods, at(5))  # (3 restarts of ranks scaled away: not in these records)
    assert result.status["backoffCount"] == 4 and result.status["tasks"][0]["restartCount"] == 3
