"""The plan under the run modes: debug pods, pause and resume."""

from __future__ import annotations

from .plan_support import Pods, at, condition, make_job, plan, record, start, step

# --- run modes --------------------------------------------------------------------------------------


def test_debug_creates_debug_pods_and_never_finishes():
    job = make_job(("worker", 2), debug=True)
    pods = Pods()
    result = step(job, {}, pods, at(0))
    assert {mode for _, _, mode in result.create} == {"debug"}
    status = step(job, result.status, pods, at(1)).status
    pods.set_all("Running")
    status = step(job, status, pods, at(2)).status
    assert status["phase"] == "Running"
    pods.set_all("Succeeded")
    result = step(job, status, pods, at(3))
    assert not result.terminal and result.status["phase"] == "Running"


def test_debug_pods_that_end_are_replaced_and_count_nothing():
    # Debug pods decide nothing and count nothing (issue 33): each end is replaced as it was, past any limit.
    job = make_job(("worker", 1, "OnFailure", 1), debug=True)
    pods = Pods()
    status = start(job, pods)
    for second in (5, 8):
        pods.set("worker", 0, "Failed")
        status = step(job, status, pods, at(second)).status
        result = step(job, status, pods, at(second + 1))
        assert result.create == [("worker", 0, "debug")]
        status = result.status
        assert status["phase"] == "Running" and status["backoffCount"] == 0
        assert record(status, "worker", 0)["restartCount"] == 0


def test_pause_then_resume():
    job = make_job(("worker", 2, "OnFailure", 3))
    paused_job = make_job(("worker", 2, "OnFailure", 3), pause=True)
    resumed_job = make_job(("worker", 2, "OnFailure", 3), pause=False)
    pods = Pods()
    status = start(job, pods)
    # A restart before the pause: its count survives.
    pods.set("worker", 1, "Failed")
    status = step(job, status, pods, at(3)).status
    status = step(job, status, pods, at(4)).status
    pods.set("worker", 1, "Running")
    status = step(job, status, pods, at(5)).status
    uids = [pods.uid("worker", r) for r in range(2)]

    result = step(paused_job, status, pods, at(10), graceful=True)
    assert result.delete == [(f"job-worker-{r}", uids[r], "pause") for r in range(2)]
    assert result.create == [] and result.status["phase"] == "Paused"
    assert result.events == [("Normal", "SuccessfulDelete", "Deleted pod: job-worker-0"),
                             ("Normal", "SuccessfulDelete", "Deleted pod: job-worker-1"),
                             ("Normal", "Paused", "The job is paused.")]
    assert condition(result.status, "Paused")["status"] == "True"
    assert condition(result.status, "Running")["status"] == "False"
    assert result.status["aggregate"]["deleted"] == 2 and result.status["backoffCount"] == 1

    # The pods fail as they terminate: not failures, not restarts.
    for rank in range(2):
        pods.set("worker", rank, "Failed", exit_code=143, terminating=True)
    status = step(paused_job, result.status, pods, at(11)).status
    assert status == result.status
    pods.by_name.clear()
    status = step(paused_job, status, pods, at(12)).status
    assert condition(status, "Paused")["message"] == "The job is paused: all its pods are deleted."
    assert condition(status, "Paused")["lastTransitionTime"] == at(10)

    result = step(resumed_job, status, pods, at(20))
    assert result.create == [("worker", 0, "resume"), ("worker", 1, "resume")]
    assert result.status["phase"] == "Resuming"
    assert result.events == [("Normal", "Resuming", "The job is resuming.")]
    assert condition(result.status, "Paused")["status"] == "False"
    assert result.status["backoffCount"] == 1
    status = step(resumed_job, result.status, pods, at(21)).status
    assert status["phase"] == "Resuming"
    pods.set_all("Running")
    result = step(resumed_job, status, pods, at(22))
    assert result.status["phase"] == "Running" and result.events == [("Normal", "Running", "The job is running.")]

    # Restarts after a resume use the resume overrides too.
    pods.set("worker", 0, "Failed")
    status = step(resumed_job, result.status, pods, at(23)).status
    assert step(resumed_job, status, pods, at(24)).create == [("worker", 0, "resume")]
    assert status["backoffCount"] == 2


def test_a_job_created_paused_creates_nothing_until_resumed():
    job = make_job(("worker", 2), pause=True)
    result = step(job, {}, Pods(), at(0))
    assert result.create == [] and result.delete == [] and result.status["phase"] == "Paused"
    assert result.events == [("Normal", "Paused", "The job is paused.")]
    assert "startTime" not in result.status
    assert condition(result.status, "Initialized")["status"] == "False"
    assert condition(result.status, "Paused")["message"] == "The job is paused: all its pods are deleted."
    assert step(job, result.status, Pods(), at(1)).status == result.status

    resumed = make_job(("worker", 2), pause=False)
    pods = Pods()
    after = step(resumed, result.status, pods, at(5))
    assert after.create == [("worker", 0, "resume"), ("worker", 1, "resume")]
    assert after.status["phase"] == "Resuming" and after.status["startTime"] == at(5)


def test_pausing_a_job_whose_pods_are_still_being_created():
    job = make_job(("worker", 1))
    pods = Pods()
    status = step(job, {}, pods, at(0)).status  # created, not seen yet
    paused = make_job(("worker", 1), pause=True)
    status = plan(paused, status, [], at(1)).status
    # The pod shows up after the pause: it is deleted for the pause, and retired.
    uid = pods.uid("worker", 0)
    result = step(paused, status, pods, at(2))
    assert result.delete == [("job-worker-0", uid, "pause")]
    assert record(result.status, "worker", 0)["lastRestartUid"] == uid
    assert result.status["backoffCount"] == 0
    resumed = step(make_job(("worker", 1), pause=False), result.status, pods, at(3))
    assert resumed.create == [("worker", 0, "resume")] and resumed.status["backoffCount"] == 0
