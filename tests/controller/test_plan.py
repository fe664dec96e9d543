"""The plan as the reconciler sees it: whole reconciles of a job against a fake pod store.

Every `step` also checks that planning again from the written status with the same pods changes
nothing (a crash between the status write and the pod actions, or a cache that lags).
"""

from __future__ import annotations

import pytest

from .plan_support import JOB, Pods, at, condition, make_job, make_pod, plan, plan_invalid, record, step

GUIDE_RULES = {"success": [{"master": [0]}, {"worker": [0, 1, 2]}, {"master": [2], "worker": [0, 1]}],
               "failure": [{"master": [0]}]}


def start(job, pods: Pods, *, until_running: bool = True) -> dict:
    """Create the job's pods and, unless told otherwise, run them all: returns the status."""
    status = step(job, {}, pods, at(0)).status
    status = step(job, status, pods, at(1)).status  # pods seen Pending
    if until_running:
        pods.set_all("Running")
        status = step(job, status, pods, at(2)).status
    return status


def restarts(result) -> list[str]:
    return [message for _, reason, message in result.events if reason == "Restarting"]


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


# --- clean-up and finished jobs ---------------------------------------------------------------------


def finish_with(cleanup: str):
    """A job of three workers, one succeeded (the success rule), one failed, one still running."""
    job = make_job(("worker", 3, "Never"), success=[{"worker": [0]}], failure=[{"worker": [0]}], cleanup=cleanup)
    pods = Pods()
    status = start(job, pods)
    pods.set("worker", 1, "Failed")
    status = step(job, status, pods, at(5)).status
    pods.set("worker", 0, "Succeeded")
    return job, pods, status


def test_cleanup_none_leaves_every_pod():
    job, pods, status = finish_with("None")
    result = step(job, status, pods, at(6))
    assert result.terminal and result.delete == []
    assert [r["phase"] for r in result.status["tasks"][0]["replicas"]] == ["Succeeded", "Failed", "Running"]


def test_cleanup_unfinished_deletes_only_unfinished_pods():
    job, pods, status = finish_with("Unfinished")
    running_uid = pods.uid("worker", 2)
    result = step(job, status, pods, at(6))
    assert result.delete == [("job-worker-2", running_uid, "cleanup")]
    assert ("Normal", "SuccessfulDelete", "Deleted pod: job-worker-2") in result.events
    assert [r["phase"] for r in result.status["tasks"][0]["replicas"]] == ["Succeeded", "Failed", "Deleted"]
    assert result.status["aggregate"]["deleted"] == 1


def test_cleanup_all_deletes_every_pod():
    job, pods, status = finish_with("All")
    result = step(job, status, pods, at(6))
    assert [d[0] for d in result.delete] == ["job-worker-0", "job-worker-1", "job-worker-2"]
    assert {d[2] for d in result.delete} == {"cleanup"}
    assert [e[1] for e in result.events] == ["Succeeded"] + ["SuccessfulDelete"] * 3
    assert result.status["aggregate"]["deleted"] == 3
    # ReplicaFailure describes the replicas as the job ended, not after the clean-up.
    assert condition(result.status, "ReplicaFailure")["status"] == "True"


@pytest.mark.parametrize("cleanup", ["None", "Unfinished", "All"])
def test_a_finished_job_settles_into_a_no_op(cleanup):
    job, pods, status = finish_with(cleanup)
    result = step(job, status, pods, at(6), graceful=True)  # pods linger, terminating
    status = result.status
    lingering = step(job, status, pods, at(7))
    assert lingering.delete == [] and lingering.events == [] and lingering.status == status
    for name in [p["metadata"]["name"] for p in pods.list() if p["metadata"].get("deletionTimestamp")]:
        del pods.by_name[name]
    settled = step(job, status, pods, at(8))
    assert settled.terminal and settled.create == [] and settled.delete == [] and settled.events == []
    final = plan(job, settled.status, pods.list(), at(9))
    assert final.status == settled.status and final.delete == [] and final.create == []


def test_a_finished_job_never_changes_phase_or_creates_pods():
    job, pods, status = finish_with("None")
    status = step(job, status, pods, at(6)).status
    conditions = status["conditions"]
    # Everything changes under it: a pod vanishes, another fails, a third succeeds.
    pods.remove("worker", 0)
    pods.set("worker", 1, "Succeeded")
    pods.set("worker", 2, "Failed")
    result = step(job, status, pods, at(7))
    assert result.terminal and result.create == [] and result.delete == [] and result.events == []
    assert result.status["phase"] == "Succeeded" and result.status["conditions"] == conditions
    assert result.status["completionTime"] == status["completionTime"]
    assert [r["phase"] for r in result.status["tasks"][0]["replicas"]] == ["Deleted", "Succeeded", "Failed"]
    # Even pause and debug do not touch it.
    paused = make_job(("worker", 3, "Never"), success=[{"worker": [0]}], pause=True)
    assert plan(paused, result.status, pods.list(), at(8)).status == result.status


def test_scaled_down_ranks_are_deleted():
    job = make_job(("worker", 3))
    pods = Pods()
    status = start(job, pods)
    smaller = make_job(("worker", 1))
    uids = [pods.uid("worker", r) for r in range(3)]
    result = step(smaller, status, pods, at(5))
    assert result.delete == [("job-worker-1", uids[1], "scale-down"), ("job-worker-2", uids[2], "scale-down")]
    # Their records stay, Deleted (the spec's "Removed ranks"), and READY counts the spec's replicas.
    assert [(r["name"], r["phase"]) for r in result.status["tasks"][0]["replicas"]] == [
        ("job-worker-0", "Running"), ("job-worker-1", "Deleted"), ("job-worker-2", "Deleted")]
    assert result.status["ready"] == "1/1" and result.status["aggregate"]["deleted"] == 2
    assert result.create == [] and result.status["phase"] == "Running"


def test_pods_of_unknown_types_are_deleted_and_foreign_looking_pods_ignored():
    job = make_job(("worker", 1))
    stray = make_pod("ghost", 0, "g1")
    unlabelled = {"metadata": {"name": "x", "uid": "x1", "labels": {}}, "status": {"phase": "Running"}}
    result = plan(job, {}, [stray, unlabelled], at(0))
    assert result.delete == [("job-ghost-0", "g1", "scale-down")]
    assert ("Normal", "SuccessfulDelete", "Deleted pod: job-ghost-0") in result.events


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


# --- invalid spec -----------------------------------------------------------------------------------


def test_plan_invalid_fails_the_job_once():
    running = make_pod("worker", 0, "u1", "Running")
    done = make_pod("worker", 1, "u2", "Succeeded")
    result = plan_invalid({}, [running, done], "spec.successRules[0]: unknown replica type 'ghost'", at(0))
    assert result.terminal and result.status["phase"] == "Failed"
    assert result.delete == [(f"{JOB}-worker-0", "u1", "cleanup")]
    assert result.events == [("Warning", "InvalidSpec", "spec.successRules[0]: unknown replica type 'ghost'")]
    failed = condition(result.status, "Failed")
    assert (failed["status"], failed["reason"]) == ("True", "InvalidSpec")
    assert condition(result.status, "Completed")["status"] == "False"
    again = plan_invalid(result.status, [], "spec.successRules[0]: unknown replica type 'ghost'", at(5))
    assert again.status == result.status and again.events == [] and again.delete == []


def test_plan_invalid_leaves_a_job_that_finished_before_alone():
    job, pods, status = finish_with("None")
    status = step(job, status, pods, at(6)).status
    result = plan_invalid(status, pods.list(), "bad", at(7))
    assert result.status == status and result.delete == [] and result.events == []


def test_plan_invalid_keeps_the_replica_records_in_step_with_the_pods():
    """A running job whose spec is edited into an invalid one: its replica records follow its pods."""
    job = make_job(("worker", 3))
    pods = Pods()
    status = start(job, pods)
    pods.set("worker", 2, "Succeeded")
    live = pods.list()
    result = plan_invalid(status, live, "bad", at(10))
    phases = {r["name"]: r["phase"] for t in result.status["tasks"] for r in t["replicas"]}
    assert phases == {f"{JOB}-worker-0": "Deleted", f"{JOB}-worker-1": "Deleted", f"{JOB}-worker-2": "Succeeded"}
    assert result.status["aggregate"]["deleted"] == 2 and result.status["aggregate"]["succeeded"] == 1
    # The deleted pods terminating, then gone: nothing changes any more.
    again = plan_invalid(result.status, [p for p in live if p["status"]["phase"] == "Succeeded"], "bad", at(11))
    assert again.status == result.status and again.delete == [] and again.events == []


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
