"""A running job whose edit is invalid is held (controller/jobs/decisions/held.py): the cases
tests/controller/test_held.py does not reach. Written against the mutants that survived the other tests
(tests/mutation, RELIABILITY.md): each test names the behaviour a surviving mutant broke."""

from __future__ import annotations

import pytest

from controller.jobs.decisions import held
from controller.jobs.decisions.backoff import epoch

from .plan_support import Pods, at, condition, make_job, plan, record
from .test_held import hold, running


def test_a_job_without_a_status_is_no_edit():
    assert held.is_edit(None) is False


@pytest.mark.parametrize(("second", "ends"), [(9, False), (10, True), (11, True)])
def test_a_held_job_fails_by_its_deadline_once_the_deadline_is_reached_not_before(second, ends):
    job, pods = make_job(("worker", 1)), Pods()
    status = {**running(job, pods), "startTime": at(0)}
    result = hold(status, pods, at(second), deadline=10)
    assert result.terminal is ends
    if not ends:
        assert result.requeue_after == 10 - second and result.status["phase"] == "Running"
    result = hold(status, pods, at(0), deadline=10, clock=epoch(at(9)) + 0.5)  # within a second of it
    assert not result.terminal and result.requeue_after == 0.5


def test_a_held_jobs_deadline_is_timed_by_the_clock_when_one_is_given():
    job, pods = make_job(("worker", 1)), Pods()
    status = {**running(job, pods), "startTime": at(0)}
    late = hold(status, pods, at(5), deadline=10, clock=epoch(at(12)))
    assert late.terminal and late.status["reason"] == "DeadlineExceeded"


def test_a_held_job_without_a_start_time_has_no_deadline_running_yet():
    job, pods = make_job(("worker", 1)), Pods()
    status = {key: value for key, value in running(job, pods).items() if key != "startTime"}
    result = hold(status, pods, at(59), deadline=10)
    assert not result.terminal and result.requeue_after is None


def test_a_held_status_without_conditions_gets_its_spec_invalid_condition():
    job, pods = make_job(("worker", 1)), Pods()
    status = {key: value for key, value in running(job, pods).items() if key != "conditions"}
    result = hold(status, pods, at(5))
    assert condition(result.status, held.SPEC_INVALID)["status"] == "True" and len(result.events) == 1


def test_a_retired_pod_still_seen_while_held_does_not_describe_its_replica_again_and_a_new_one_does():
    # worker-0's pod was retired for a restart (counted; its record waits for the next pod) and is still seen,
    # terminating: the record stays as it was. worker-1's record is of a new pod after an old one it retired:
    # the new pod is its replica's and describes it.
    job, pods = make_job(("worker", 2)), Pods()
    status = running(job, pods)
    tasks = status["tasks"]
    [task] = tasks
    first, second = task["replicas"]
    waiting = {**first, "uid": "", "phase": "Creating", "containers": [], "lastRestartUid": pods.uid("worker", 0),
               "restartCount": 1}
    renewed = {**second, "lastRestartUid": "an-old-pod", "restartCount": 1}
    status = {**status, "tasks": [{**task, "replicas": [waiting, renewed], "restartCount": 2}], "backoffCount": 2}
    pods.set("worker", 0, "Failed")
    pods.set("worker", 1, "Failed")
    result = hold(status, pods, at(5))
    assert record(result.status, "worker", 0)["phase"] == "Creating"
    assert record(result.status, "worker", 1)["phase"] == "Failed"


def test_no_release_without_a_stored_status_or_for_a_finished_job():
    job, pods = make_job(("worker", 1)), Pods()
    status = hold(running(job, pods), pods, at(5)).status  # SpecInvalid True
    the_plan = plan(job, {}, pods.list(), at(6))
    assert held.release(the_plan, None, 3, at(6)) is the_plan
    # A held job failed by its deadline keeps SpecInvalid True: terminal is final, no release follows.
    failed = {**status, "phase": "Failed"}
    assert held.release(the_plan, failed, 3, at(6)) is the_plan


def test_the_release_keeps_the_plans_other_conditions():
    job, pods = make_job(("worker", 1)), Pods()
    status = hold(running(job, pods), pods, at(5)).status
    the_plan = plan(job, status, pods.list(), at(6))
    released = held.release(the_plan, status, 3, at(6))
    before = {c["type"]: c for c in the_plan.status["conditions"] if c["type"] != held.SPEC_INVALID}
    after = {c["type"]: c for c in released.status["conditions"] if c["type"] != held.SPEC_INVALID}
    assert before and after == before


@pytest.mark.parametrize(("obj", "seconds"), [
    ({"spec": "not an object"}, None), ({"spec": []}, None),
    ({"spec": {"runPolicy": {"activeDeadlineSeconds": True}}}, None),  # a bool is no number of seconds
    ({"spec": {"runPolicy": {"activeDeadlineSeconds": 1}}}, 1.0),
    ({"spec": {"runPolicy": {"activeDeadlineSeconds": -5}}}, None),
])
def test_the_deadline_read_from_the_object_is_a_positive_whole_number_of_seconds(obj, seconds):
    assert held.raw_deadline(obj) == seconds

