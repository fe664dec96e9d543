"""Ranks scaled away (the spec's "Removed ranks"): each keeps its record, Deleted, under its type's task after the
spec's ranks, with its restart count; restart counters never decrease; `ready` counts the spec's replicas; an
earlier version's `status.removedReplicas` is moved into the tasks; and the status stays bounded."""

from __future__ import annotations

from controller.jobs.decisions import edits, upkeep
from controller.jobs.decisions.actions import SERVICES, DeleteChild
from controller.kinds.genericjob.kind import GENERICJOB

from .plan_support import Pods, at, make_job, plan, plan_invalid, step


def running(job, pods: Pods) -> dict:
    status = step(job, {}, pods, at(0)).status
    pods.set_all("Running")
    return step(job, status, pods, at(1)).status


def task(status: dict, replica_type: str) -> dict:
    return next(t for t in status["tasks"] if t["type"] == replica_type)


def names(status: dict, replica_type: str) -> list[tuple[str, str, int]]:
    return [(r["name"], r["phase"], r["restartCount"]) for r in task(status, replica_type)["replicas"]]


def test_a_rank_scaled_away_keeps_a_deleted_record_after_the_specs_ranks_and_ready_counts_the_spec():
    job = make_job(("worker", 3, "OnFailure", 2))
    pods = Pods()
    status = running(job, pods)
    pods.set("worker", 2, "Failed")
    status = step(job, status, pods, at(2)).status  # worker-2 restarted once
    status = step(make_job(("worker", 1, "OnFailure", 2)), status, pods, at(3)).status
    assert names(status, "worker") == [("job-worker-0", "Running", 0), ("job-worker-1", "Deleted", 0),
                                       ("job-worker-2", "Deleted", 1)]
    assert status["aggregate"]["deleted"] == 2 and status["aggregate"]["running"] == 1
    assert status["ready"] == "1/1" and status["readyReplicas"] == 1
    assert task(status, "worker")["restartCount"] == 1 and status["backoffCount"] == 1
    assert "removedReplicas" not in status


def test_a_rank_scaled_away_and_back_is_a_rank_of_the_spec_again_its_record_no_longer_marked_removed():
    # Issue 45 (slots.py, `x_gather_slots__mutmut_45`, `_46`): the record comes back with its count and its retired
    # pod, but not its mark: a rank of the spec marked `removed` tells the status's readers it is scaled away, and,
    # were the job paused and an edit then to remove it unseen, its pod's outcome would go unjudged (gather_slots).
    two = make_job(("worker", 2, "OnFailure", 2))
    pods = Pods()
    status = running(two, pods)
    retired = pods.uid("worker", 1)
    status = step(make_job(("worker", 1, "OnFailure", 2)), status, pods, at(2)).status
    assert task(status, "worker")["replicas"][1] == {
        "name": "job-worker-1", "uid": retired, "phase": "Deleted", "restartCount": 0, "lastRestartUid": retired,
        "containers": [{"name": "main", "state": "deleted"}], "removed": True}
    back = step(two, status, pods, at(3))
    assert back.create == [("worker", 1, "immediate")]
    assert task(back.status, "worker")["replicas"][1] == {
        "name": "job-worker-1", "uid": "", "phase": "Creating", "containers": [], "restartCount": 0,
        "lastRestartUid": retired}
    status = step(two, back.status, pods, at(4)).status
    assert task(status, "worker")["replicas"][1] == {
        "name": "job-worker-1", "uid": pods.uid("worker", 1), "phase": "Pending", "containers": [], "restartCount": 0,
        "lastRestartUid": retired}
    assert status["aggregate"]["deleted"] == 0 and status["aggregate"]["pending"] == 1 and status["ready"] == "1/2"


def test_restart_counts_never_decrease_and_add_up():
    # Defect 10: tasks[].restartCount went down after a scale-down.
    job = make_job(("worker", 2, "OnFailure", 3), ("ps", 1, "OnFailure", 3))
    pods = Pods()
    status = running(job, pods)
    for second in (2, 5):
        pods.set("worker", 1, "Failed")
        status = step(job, status, pods, at(second)).status  # counted; the pod deleted
        status = step(job, status, pods, at(second + 1)).status  # its replacement created
        pods.set("worker", 1, "Running")
        status = step(job, status, pods, at(second + 2)).status
    assert task(status, "worker")["restartCount"] == 2
    status = step(make_job(("worker", 1, "OnFailure", 3), ("ps", 1, "OnFailure", 3)), status, pods, at(9)).status
    assert task(status, "worker")["restartCount"] == 2
    assert status["backoffCount"] == sum(t["restartCount"] for t in status["tasks"]) == 2


def test_a_type_removed_altogether_keeps_a_task_of_its_own():
    job = make_job(("worker", 1, "OnFailure", 1), ("ps", 1, "OnFailure", 1))
    pods = Pods()
    status = running(job, pods)
    pods.set("ps", 0, "Failed")
    status = step(job, status, pods, at(2)).status
    status = step(make_job(("worker", 1, "OnFailure", 1)), status, pods, at(3)).status
    assert [t["type"] for t in status["tasks"]] == ["worker", "ps"]
    assert names(status, "ps") == [("job-ps-0", "Deleted", 1)] and task(status, "ps")["restartCount"] == 1
    assert status["ready"] == "1/1" and status["backoffCount"] == 1


def test_an_earlier_versions_removed_replicas_are_moved_into_the_tasks():
    job = make_job(("worker", 1, "OnFailure", 1))
    pods = Pods()
    status = running(job, pods)
    legacy = {"name": "job-worker-1", "uid": "old", "phase": "Deleted", "containers": [], "restartCount": 1,
              "lastRestartUid": "old"}
    status = {**status, "removedReplicas": [legacy], "backoffCount": 1}
    status = step(job, status, pods, at(2)).status
    assert "removedReplicas" not in status
    assert names(status, "worker") == [("job-worker-0", "Running", 0), ("job-worker-1", "Deleted", 1)]
    assert status["backoffCount"] == 1 and task(status, "worker")["restartCount"] == 1
    # Scaled back: it keeps its count against its limit of 1, so its first failure is final.
    status = step(make_job(("worker", 2, "OnFailure", 1)), status, pods, at(3)).status
    pods.set("worker", 1, "Failed")
    result = plan(make_job(("worker", 2, "OnFailure", 1)), status, pods.list(), at(4))
    assert result.status["phase"] == "Failed" and result.status["backoffCount"] == 1


def test_a_finished_job_keeps_its_counters_and_its_ready_total():
    job = make_job(("worker", 3, "OnFailure", 1), success=[{"worker": [0]}])
    pods = Pods()
    status = running(job, pods)
    pods.set("worker", 2, "Failed")
    status = step(job, status, pods, at(2)).status
    small = make_job(("worker", 1, "OnFailure", 1), success=[{"worker": [0]}])
    status = step(small, status, pods, at(3)).status
    pods.set("worker", 0, "Succeeded")
    finished = step(small, status, pods, at(4)).status
    assert finished["phase"] == "Succeeded" and finished["ready"] == "0/1" and finished["backoffCount"] == 1
    again = step(small, finished, pods, at(5)).status
    assert again == finished


def test_records_are_bounded_and_dropped_restarts_stay_counted(monkeypatch):
    # A status keeps at most MAX_RECORDS records: past it, records of ranks scaled away are dropped (never-restarted
    # ones first); the restarts of a dropped one stay in its type's restartCount and in backoffCount.
    monkeypatch.setattr(edits, "MAX_RECORDS", 3)
    job = make_job(("worker", 3, "OnFailure", 1), ("ps", 1, "OnFailure", 1))
    pods = Pods()
    status = running(job, pods)
    pods.set("worker", 2, "Failed")
    status = step(job, status, pods, at(2)).status
    status = step(make_job(("worker", 0, "OnFailure", 1), ("ps", 3, "OnFailure", 1)), status, pods, at(3)).status
    assert sum(len(t["replicas"]) for t in status["tasks"]) == 3
    assert task(status, "worker")["replicas"] == [] and task(status, "worker")["restartCount"] == 1
    assert status["backoffCount"] == 1 and status["ready"] == "1/3"
    status = step(make_job(("worker", 0, "OnFailure", 1), ("ps", 2, "OnFailure", 1)), status, pods, at(4)).status
    assert task(status, "worker")["restartCount"] == 1 and status["backoffCount"] == 1
    assert names(status, "ps")[-1] == ("job-ps-2", "Deleted", 0)


def test_a_job_scaled_from_many_to_one_keeps_no_more_records_than_it_had():
    job = make_job(("worker", 50))
    pods = Pods()
    status = running(job, pods)
    status = step(make_job(("worker", 1)), status, pods, at(2)).status
    assert len(task(status, "worker")["replicas"]) == 50 and status["aggregate"]["deleted"] == 49
    status = step(make_job(("worker", 1)), status, pods, at(3)).status
    assert len(task(status, "worker")["replicas"]) == 50 and status["ready"] == "1/1"


def test_a_job_found_invalid_keeps_its_counters_and_its_ready_total():
    job = make_job(("worker", 3, "OnFailure", 1))
    pods = Pods()
    status = running(job, pods)
    pods.set("worker", 2, "Failed")
    status = step(job, status, pods, at(2)).status
    status = step(make_job(("worker", 1, "OnFailure", 1)), status, pods, at(3)).status
    failed = plan_invalid(status, pods.list(), "bad", at(4)).status
    assert failed["backoffCount"] == 1 and failed["tasks"][0]["restartCount"] == 1 and failed["ready"] == "0/1"
    legacy = {**running(make_job(("worker", 1)), Pods()), "backoffCount": 2,
              "removedReplicas": [{"name": "job-worker-1", "phase": "Deleted", "restartCount": 2}]}
    assert plan_invalid(legacy, [], "bad", at(5)).status["backoffCount"] == 2  # counted once


def test_a_status_never_holds_more_records_than_a_capped_job_has():
    # 1000 workers scaled to 1 keep 1000 records; the ps then scaled up to 999 take the room of worker ranks that
    # never restarted, so the status stays the size of a capped job's (tests/controller/test_job_size.py).
    status = plan(make_job(("worker", edits.MAX_RECORDS), ("ps", 0)), {}, [], at(0)).status
    status = plan(make_job(("worker", 1), ("ps", 0)), status, [], at(1)).status
    assert len(task(status, "worker")["replicas"]) == edits.MAX_RECORDS
    status = plan(make_job(("worker", 1), ("ps", edits.MAX_RECORDS - 1)), status, [], at(2)).status
    assert sum(len(t["replicas"]) for t in status["tasks"]) == edits.MAX_RECORDS
    assert [r["name"] for r in task(status, "worker")["replicas"]] == ["job-worker-0"]


def test_a_job_finished_under_clean_up_policy_none_keeps_no_service_for_a_rank_scaled_away():
    # Its record is kept (Deleted, its pod retired by the scale-down), but no pod is left for a Service to reach.
    job = make_job(("worker", 3, "Never"))
    pods = Pods()
    status = running(job, pods)
    small = make_job(("worker", 2, "Never"))
    status = step(small, status, pods, at(2)).status
    pods.set("worker", 0, "Succeeded")
    pods.set("worker", 1, "Succeeded")
    finished = step(small, status, pods, at(3)).status
    assert finished["phase"] == "Succeeded" and names(finished, "worker")[2] == ("job-worker-2", "Deleted", 0)
    existing = [{"metadata": {"name": f"job-worker-{rank}", "uid": f"svc-{rank}"}} for rank in range(3)]
    assert upkeep.service_actions(GENERICJOB, small, finished, existing, terminal=True, making=False) == \
        [DeleteChild(SERVICES, "job-worker-2", "svc-2")]
