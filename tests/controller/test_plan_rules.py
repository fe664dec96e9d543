"""The plan under success and failure rules: the guide's examples, and which rule wins."""

from __future__ import annotations

import pytest

from .plan_support import Pods, at, condition, make_job, restarts, start, step

GUIDE_RULES = {"success": [{"master": [0]}, {"worker": [0, 1, 2]}, {"master": [2], "worker": [0, 1]}],
               "failure": [{"master": [0]}]}


# --- rules ------------------------------------------------------------------------------------------


def guide_job(**kwargs):
    return make_job(("master", 3, "OnFailure", 2), ("worker", 3, "OnFailure", 2),
                    success=GUIDE_RULES["success"], failure=GUIDE_RULES["failure"], **kwargs)


@pytest.mark.parametrize(("finished", "rule"), [
    ([("master", 0)], '{"master": [0]}'),
    ([("worker", 0), ("worker", 1), ("worker", 2)], '{"worker": [0, 1, 2]}'),
    ([("master", 2), ("worker", 0), ("worker", 1)], '{"master": [2], "worker": [0, 1]}'),
])
def test_guide_success_rules(finished, rule):
    job = guide_job()
    pods = Pods()
    status = start(job, pods)
    *before, last = finished
    for replica_type, rank in before:
        pods.set(replica_type, rank, "Succeeded")
    status = step(job, status, pods, at(5)).status
    assert status["phase"] == "Running"
    pods.set(*last, "Succeeded")
    result = step(job, status, pods, at(6))
    assert result.status["phase"] == "Succeeded"
    assert condition(result.status, "Completed")["message"] == f"The job is succeeded with rule: {rule}"


def test_guide_failure_rule_waits_for_restarts_to_be_used_up():
    job = guide_job()
    pods = Pods()
    status = start(job, pods)
    for n in (1, 2):
        pods.set("master", 0, "Failed")
        result = step(job, status, pods, at(10 * n))
        assert result.status["phase"] == "Running" and len(restarts(result)) == 1
        status = step(job, result.status, pods, at(10 * n + 1)).status
        pods.set("master", 0, "Running")
        status = step(job, status, pods, at(10 * n + 2)).status
    pods.set("master", 0, "Failed")
    result = step(job, status, pods, at(40))
    assert result.status["phase"] == "Failed"
    assert condition(result.status, "Failed")["message"] == (
        'The job is failed with rule: {"master": [0]}: replica master-0 failed with exit code 1 after 2 of 2 restarts')


def test_guide_other_failures_do_not_fail_the_job():
    job = make_job(("master", 3, "Never"), ("worker", 3, "Never"), success=GUIDE_RULES["success"],
                   failure=GUIDE_RULES["failure"])
    pods = Pods()
    status = start(job, pods)
    for replica_type, rank in (("master", 1), ("worker", 0), ("worker", 1)):
        pods.set(replica_type, rank, "Failed")
    result = step(job, status, pods, at(5))
    assert result.status["phase"] == "Running" and not result.terminal
    assert condition(result.status, "ReplicaFailure")["status"] == "True"


def test_failure_wins_when_both_rules_are_met_at_once():
    job = make_job(("master", 3, "Never"), ("worker", 3, "Never"), success=GUIDE_RULES["success"],
                   failure=GUIDE_RULES["failure"])
    pods = Pods()
    status = start(job, pods)
    pods.set("master", 0, "Failed")
    for rank in range(3):
        pods.set("worker", rank, "Succeeded")
    result = step(job, status, pods, at(5))
    assert result.status["phase"] == "Failed"
    assert condition(result.status, "Failed")["message"] == (
        'The job is failed with rule: {"master": [0]}: replica master-0 failed with exit code 1 '
        'under restart policy Never')
    assert result.status["reason"] == "ReplicaFailed"


def test_rules_are_evaluated_before_restarts():
    # worker 1 failed with restarts left, while master 0 succeeded: the job is done, nothing restarts.
    job = guide_job()
    pods = Pods()
    status = start(job, pods)
    pods.set("worker", 1, "Failed")
    pods.set("master", 0, "Succeeded")
    result = step(job, status, pods, at(5))
    assert result.status["phase"] == "Succeeded"
    assert result.create == [] and result.delete == [] and restarts(result) == []
    assert result.status["backoffCount"] == 0
