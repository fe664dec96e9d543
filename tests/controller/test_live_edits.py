"""The rules for live jobs (the spec's "Live jobs"), one example each, planned against a fake pod store:
the model-based test (tests/controller/model/) explores the sequences; these read as the rules."""

from __future__ import annotations

from .plan_support import Pods, at, make_job, plan, record, step


def running(job, pods: Pods) -> dict:
    status = step(job, {}, pods, at(0)).status
    pods.set_all("Running")
    return step(job, status, pods, at(1)).status


def test_a_rank_scaled_away_and_back_keeps_its_restarts():
    job = make_job(("worker", 2, "OnFailure", 1))
    pods = Pods()
    status = running(job, pods)
    pods.set("worker", 1, "Failed")
    status = step(job, status, pods, at(2)).status  # restart 1 of 1
    assert status["backoffCount"] == 1
    status = step(make_job(("worker", 1, "OnFailure", 1)), status, pods, at(3)).status
    assert status["backoffCount"] == 1  # the rank is gone; its restart still counts
    removed = record(status, "worker", 1)  # kept after the spec's ranks, Deleted
    assert (removed["name"], removed["phase"], removed["restartCount"]) == ("job-worker-1", "Deleted", 1)
    status = step(job, status, pods, at(4)).status
    assert record(status, "worker", 1)["restartCount"] == 1 and "removedReplicas" not in status
    pods.set("worker", 1, "Running")
    status = step(job, status, pods, at(5)).status
    pods.set("worker", 1, "Failed")
    result = step(job, status, pods, at(6))
    assert result.status["phase"] == "Failed" and result.status["backoffCount"] == 1  # no fresh limit


def test_a_finished_job_ignores_a_scale_edit_and_says_so():
    job = make_job(("worker", 3), success=[{"worker": [0]}])
    pods = Pods()
    status = running(job, pods)
    pods.set("worker", 0, "Succeeded")
    status = {**step(job, status, pods, at(2)).status, "observedGeneration": 1}
    assert status["phase"] == "Succeeded"
    edited = make_job(("worker", 1), success=[{"worker": [0]}]).model_copy(update={"generation": 2})
    result = plan(edited, status, pods.list(), at(3))  # (the reconciler then writes observedGeneration 2)
    assert result.delete == [] and result.create == []
    assert result.status == status  # the replicas it finished with, and nothing else
    assert result.events == [("Normal", "SpecChangeIgnored", "the job has finished; spec changes are ignored")]


def test_a_failure_seen_with_a_pause_fails_the_job():
    job = make_job(("worker", 2, "Never"))
    pods = Pods()
    status = running(job, pods)
    pods.set("worker", 1, "Failed")
    result = step(make_job(("worker", 2, "Never"), pause=True), status, pods, at(2))
    assert result.status["phase"] == "Failed" and result.terminal
