"""The plan as the reconciler sees it: a job's life, restarts, lost pods, conditions and readiness.

Every `step` also checks that planning again from the written status with the same pods changes
nothing (a crash between the status write and the pod actions, or a cache that lags).
"""

from __future__ import annotations

from .plan_support import Pods, at, condition, make_job, plan, plan_invalid, record, restarts, start, step

# --- a job's life -----------------------------------------------------------------------------


def test_a_new_job_creates_every_replica_and_is_pending():
    job = make_job(("master", 1), ("worker", 2))
    pods = Pods()
    result = step(job, {}, pods, at(0))
    assert result.create == [("master", 0, "immediate"), ("worker", 0, "immediate"), ("worker", 1, "immediate")]
    assert result.delete == [] and result.events == [] and not result.terminal
    status = result.status
    assert status["phase"] == "Pending" and status["startTime"] == at(0) and "completionTime" not in status
    assert [c["type"] for c in status["conditions"]] == ["Initialized", "Running", "ReplicaFailure", "Completed",
                                                       "Failed"]
    assert all(c["status"] == "False" for c in status["conditions"])
    assert status["tasks"] == [
        {"type": "master", "restartCount": 0, "replicas": [
            {"name": "job-master-0", "uid": "", "phase": "Creating", "containers": [], "restartCount": 0}]},
        {"type": "worker", "restartCount": 0, "replicas": [
            {"name": f"job-worker-{r}", "uid": "", "phase": "Creating", "containers": [], "restartCount": 0}
            for r in range(2)]},
    ]
    assert status["aggregate"] == {"creating": 3, "pending": 0, "running": 0, "succeeded": 0, "failed": 0,
                                   "unknown": 0, "deleted": 0}
    assert status["backoffCount"] == 0


def test_pods_seen_then_running_then_succeeded():
    job = make_job(("master", 1), ("worker", 2))
    pods = Pods()
    status = start(job, pods, until_running=False)
    assert status["phase"] == "Pending" and status["aggregate"]["pending"] == 3
    assert condition(status, "Initialized")["status"] == "True"
    assert record(status, "worker", 1)["uid"] == pods.uid("worker", 1)

    pods.set_all("Running")
    result = step(job, status, pods, at(2))
    assert result.status["phase"] == "Running"
    assert result.events == [("Normal", "Running", "The job is running.")]
    assert condition(result.status, "Running") == {"type": "Running", "status": "True", "reason": "Running",
                                                   "message": "The job is running.", "lastTransitionTime": at(2)}

    pods.set_all("Succeeded")
    done = step(job, result.status, pods, at(3))
    assert done.terminal and done.status["phase"] == "Succeeded" and done.status["completionTime"] == at(3)
    message = 'The job is succeeded with rule: {"master": [0], "worker": [0, 1]}'
    assert done.events == [("Normal", "Succeeded", message)]
    completed = condition(done.status, "Completed")
    assert (completed["status"], completed["reason"], completed["message"]) == ("True", "Succeeded", message)
    assert condition(done.status, "Failed")["status"] == "False"
    assert condition(done.status, "Running")["status"] == "False"
    assert done.status["aggregate"]["succeeded"] == 3


def test_observed_generation_is_left_to_the_reconciler():
    job = make_job(("worker", 1))
    result = plan(job, {"observedGeneration": 7}, [], at(0))
    assert result.status["observedGeneration"] == 7


def test_an_unchanged_world_gives_an_unchanged_status():
    job = make_job(("worker", 2))
    pods = Pods()
    status = start(job, pods)
    again = plan(job, status, pods.list(), at(50))
    assert again.status == status and again.create == [] and again.delete == [] and again.events == []


def test_zero_replicas_succeed_at_once():
    job = make_job(("worker", 0))
    result = step(job, {}, Pods(), at(0))
    assert result.terminal and result.status["phase"] == "Succeeded" and result.create == []
    assert result.status["startTime"] == at(0) == result.status["completionTime"]
    assert result.status["tasks"] == [{"type": "worker", "restartCount": 0, "replicas": []}]


# --- restarts ---------------------------------------------------------------------------------


def test_on_failure_with_limit_restarts_then_fails_for_good():
    job = make_job(("worker", 2, "OnFailure", 2))
    pods = Pods()
    status = start(job, pods)
    for n in (1, 2):
        old_uid = pods.uid("worker", 1)
        pods.set("worker", 1, "Failed", exit_code=7)
        result = step(job, status, pods, at(10 * n))
        assert restarts(result) == [f"Restarting replica job-worker-1 (restart {n} of 2): pod exited with code 7"]
        assert result.delete == [("job-worker-1", old_uid, "restart")] and result.create == []
        assert record(result.status, "worker", 1)["lastRestartUid"] == old_uid
        assert result.status["phase"] == "Running"  # stays Running while a replica restarts
        assert condition(result.status, "ReplicaFailure")["status"] == "True"
        # The old pod is gone now: the replacement is created, under the same name.
        result = step(job, result.status, pods, at(10 * n + 1))
        assert result.create == [("worker", 1, "immediate")] and restarts(result) == []
        assert record(result.status, "worker", 1)["phase"] == "Creating"
        pods.set("worker", 1, "Running")
        status = step(job, result.status, pods, at(10 * n + 2)).status
        assert record(status, "worker", 1)["restartCount"] == n
        assert status["tasks"][0]["restartCount"] == n and status["backoffCount"] == n
        assert condition(status, "ReplicaFailure")["status"] == "False"

    pods.set("worker", 1, "Failed", exit_code=137, container_reason="OOMKilled")
    result = step(job, status, pods, at(40))
    assert result.terminal and result.status["phase"] == "Failed" and result.create == [] and restarts(result) == []
    # The seed's message, then why: the replica, its exit code and reason, and the limit that ran out.
    message = ('The job is failed with rule: {"worker": [1]}: replica worker-1 failed with exit code 137 (OOMKilled) '
               'after 2 of 2 restarts')
    assert result.events == [("Warning", "Failed", message)]
    assert condition(result.status, "Failed")["message"] == message
    assert condition(result.status, "Completed")["reason"] == "BackoffLimitExceeded"
    assert result.status["reason"] == condition(result.status, "Failed")["reason"] == "BackoffLimitExceeded"
    assert result.status["backoffCount"] == 2


def test_limit_zero_means_no_restart():
    job = make_job(("worker", 1, "OnFailure"))
    pods = Pods()
    status = start(job, pods)
    pods.set("worker", 0, "Failed")
    result = step(job, status, pods, at(5))
    assert result.status["phase"] == "Failed" and result.create == [] and result.status["backoffCount"] == 0


def test_always_restarts_succeeded_pods_until_the_limit():
    job = make_job(("worker", 1, "Always", 1))
    pods = Pods()
    status = start(job, pods)
    pods.set("worker", 0, "Succeeded")
    result = step(job, status, pods, at(5))
    assert not result.terminal and len(result.delete) == 1
    assert restarts(result) == ["Restarting replica job-worker-0 (restart 1 of 1): pod exited with code 0"]
    status = step(job, result.status, pods, at(6)).status
    pods.set("worker", 0, "Succeeded")
    done = step(job, status, pods, at(7))
    assert done.terminal and done.status["phase"] == "Succeeded" and done.status["backoffCount"] == 1


def test_never_fails_the_job_on_the_first_failure():
    job = make_job(("worker", 2, "Never", 5))
    pods = Pods()
    status = start(job, pods)
    pods.set("worker", 0, "Failed")
    result = step(job, status, pods, at(5))
    assert result.status["phase"] == "Failed" and result.delete == [] and result.create == []


def test_crash_between_status_write_and_delete():
    job = make_job(("worker", 1, "OnFailure", 3))
    pods = Pods()
    status = start(job, pods)
    pods.set("worker", 0, "Failed")
    first = plan(job, status, pods.list(), at(5))  # status written, then the controller died
    replay = plan(job, first.status, pods.list(), at(6))
    assert replay.status == first.status and replay.delete == first.delete and restarts(replay) == []
    assert record(replay.status, "worker", 0)["restartCount"] == 1


def test_a_retired_pod_still_terminating_delays_the_replacement():
    job = make_job(("worker", 1, "OnFailure", 3))
    pods = Pods()
    status = start(job, pods)
    pods.set("worker", 0, "Failed")
    result = step(job, status, pods, at(5), graceful=True)
    waiting = step(job, result.status, pods, at(6))
    assert waiting.create == [] and waiting.delete == [] and waiting.status == result.status


def test_stale_cache_after_the_replacement_was_recorded():
    job = make_job(("worker", 1, "OnFailure", 3))
    pods = Pods()
    status = start(job, pods)
    old = pods.set("worker", 0, "Failed")
    status = step(job, status, pods, at(5)).status
    status = step(job, status, pods, at(6)).status
    pods.set("worker", 0, "Running")
    status = step(job, status, pods, at(7)).status
    new_uid = pods.uid("worker", 0)
    assert record(status, "worker", 0)["uid"] == new_uid
    # Another reconcile whose pod cache still shows the old, failed pod.
    stale = plan(job, status, [old], at(8))
    assert stale.status == status
    assert stale.delete == [("job-worker-0", old["metadata"]["uid"], "restart")]
    assert stale.create == [] and restarts(stale) == []


# --- pods deleted behind the controller's back ----------------------------------------------------


def test_lost_pod_is_recreated_and_counted_under_on_failure():
    job = make_job(("worker", 2, "OnFailure", 1))
    pods = Pods()
    status = start(job, pods)
    pods.remove("worker", 0)
    result = step(job, status, pods, at(5))
    assert result.create == [("worker", 0, "immediate")]
    assert restarts(result) == ["Restarting replica job-worker-0 (restart 1 of 1): pod was deleted"]
    assert result.status["backoffCount"] == 1 and result.status["phase"] == "Running"
    pods.set("worker", 0, "Running")
    status = step(job, result.status, pods, at(6)).status
    # Lost again with the limit used up: the replica has failed for good, so has the job.
    pods.remove("worker", 0)
    result = step(job, status, pods, at(7))
    assert result.terminal and result.status["phase"] == "Failed" and result.create == []
    assert condition(result.status, "Failed")["message"] == (
        'The job is failed with rule: {"worker": [0]}: replica worker-0 failed without an exit code '
        '(its pod was lost: deleted, or its node gone) after 1 of 1 restarts')
    assert result.status["reason"] == "BackoffLimitExceeded"


def test_lost_pod_is_recreated_without_counting_under_never():
    job = make_job(("worker", 1, "Never"))
    pods = Pods()
    status = start(job, pods)
    pods.remove("worker", 0)
    result = step(job, status, pods, at(5))
    assert result.create == [("worker", 0, "immediate")] and result.status["backoffCount"] == 0
    assert not result.terminal


def test_a_completed_pod_that_disappears_is_not_run_again():
    job = make_job(("a", 1, "OnFailure", 3), ("b", 1))
    pods = Pods()
    status = start(job, pods)
    pods.set("a", 0, "Succeeded")
    status = step(job, status, pods, at(5)).status
    pods.remove("a", 0)
    result = step(job, status, pods, at(6))
    assert result.create == [] and record(result.status, "a", 0)["phase"] == "Succeeded"


# --- conditions -------------------------------------------------------------------------------------


def test_condition_times_change_only_on_flips():
    job = make_job(("worker", 2, "OnFailure", 1))
    pods = Pods()
    status = start(job, pods)  # Running at(2)
    times = {c["type"]: c["lastTransitionTime"] for c in status["conditions"]}
    assert times == {"Initialized": at(1), "Running": at(2), "ReplicaFailure": at(0), "Completed": at(0),
                     "Failed": at(0)}
    pods.set("worker", 0, "Failed")
    status = step(job, status, pods, at(30)).status  # counted, the failed pod deleted
    assert condition(status, "ReplicaFailure")["lastTransitionTime"] == at(30)
    status = step(job, status, pods, at(31)).status  # the replacement asked for: no failed pod any more
    assert condition(status, "ReplicaFailure")["lastTransitionTime"] == at(31)
    status = step(job, status, pods, at(32)).status  # the replacement seen Pending
    assert condition(status, "ReplicaFailure")["lastTransitionTime"] == at(31)
    assert condition(status, "ReplicaFailure")["reason"] == "NoFailure"
    assert condition(status, "Running")["lastTransitionTime"] == at(2)
    assert condition(status, "Initialized")["lastTransitionTime"] == at(1)
    assert condition(status, "Completed")["lastTransitionTime"] == at(0)


# --- readiness and the outcome's reason -------------------------------------------------------------


def test_ready_is_counted_from_the_pods():
    job = make_job(("worker", 2, "OnFailure", 3))
    pods = Pods()
    status = start(job, pods)  # both pods Running (no readiness reported: ready)
    assert (status["readyReplicas"], status["ready"]) == (2, "2/2")
    assert record(status, "worker", 0)["ready"] is True
    pods.get("worker", 1)["status"]["conditions"] = [{"type": "Ready", "status": "False"}]  # probe failing
    result = step(job, status, pods, at(5))  # step checks that planning again changes nothing
    assert (result.status["readyReplicas"], result.status["ready"]) == (1, "1/2")
    assert "ready" not in record(result.status, "worker", 1)
    # (test_stale_cache_after_the_replacement_was_recorded: a record whose pod the cache does not show yet keeps
    # the readiness it was last seen with.)


def test_a_finished_job_says_why_in_its_reason():
    job = make_job(("worker", 1, "Never", 0))
    pods = Pods()
    status = start(job, pods)
    assert "reason" not in status
    pods.set("worker", 0, "Failed")
    failed = step(job, status, pods, at(5)).status
    assert failed["phase"] == "Failed" and failed["reason"] == condition(failed, "Failed")["reason"] == "ReplicaFailed"
    invalid = plan_invalid({}, [], "spec.successRules[0]: no such type", at(1)).status
    assert invalid["reason"] == "InvalidSpec"
