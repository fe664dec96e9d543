"""The plan of a finishing job: its clean-up policy, scale-down, and a spec turned invalid."""

from __future__ import annotations

import pytest

from .plan_support import JOB, Pods, at, condition, finish_with, make_job, make_pod, plan, plan_invalid, start, step

# --- clean-up and finished jobs ---------------------------------------------------------------------


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
