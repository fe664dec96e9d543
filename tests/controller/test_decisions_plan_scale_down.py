"""One reconcile's plan of a job scaled down: the outcomes of ranks scaled away are judged (mutant-driven)."""

from __future__ import annotations

from controller.jobs.decisions import plan as engine
from controller.kinds.genericjob.kind import GENERICJOB

from .decisions_plan_support import at
from .plan_support import Pods, make_job, record, restarts, step


def _started(job, pods):
    status = step(job, {}, pods, at(0)).status
    status = step(job, status, pods, at(1)).status
    pods.set_all("Running")
    return step(job, status, pods, at(2)).status


def _worker_2_restarted_once(monkeypatch):
    """Three OnFailure workers with room for three records in all; worker-2 has failed and restarted once."""
    from controller.jobs.decisions import edits

    monkeypatch.setattr(edits, "MAX_RECORDS", 3)
    pods = Pods()
    job = make_job(("worker", 3, "OnFailure", 3))
    status = _started(job, pods)
    pods.set("worker", 2, "Failed")
    status = step(job, status, pods, at(3)).status  # its first restart
    return pods, step(job, status, pods, at(4)).status


def test_a_pod_of_a_rank_scaled_away_already_terminating_is_not_deleted_again():
    pods = Pods()
    status = _started(make_job(("worker", 3)), pods)
    pods.set("worker", 2, "Running", terminating=True)
    result = step(make_job(("worker", 2)), status, pods, at(5))
    assert result.delete == [] and not result.terminal


def test_a_rank_scaled_away_as_the_job_fails_under_all_is_deleted_with_its_event():
    pods = Pods()
    status = _started(make_job(("worker", 3, "Never"), cleanup="All"), pods)
    pods.set("worker", 2, "Failed")
    result = step(make_job(("worker", 2, "Never"), cleanup="All"), status, pods, at(5))
    assert result.terminal
    deleted = [e for e in result.events if e.reason == "SuccessfulDelete"]
    assert any("job-worker-2" in e.message for e in deleted), result.events


def test_a_type_removed_from_the_spec_while_its_pod_runs_has_its_pod_deleted():
    pods = Pods()
    status = _started(make_job(("worker", 1), ("ps", 1)), pods)
    uid = pods.uid("ps", 0)
    result = step(make_job(("worker", 1)), status, pods, at(5))
    assert result.delete == [("job-ps-0", uid, "scale-down")] and not result.terminal


def test_a_rank_stored_apart_by_an_earlier_version_is_judged_by_its_record():
    # status.removedReplicas names worker-2 (its pod still there, failed, under a policy that replaces it): its
    # failure uses a restart, counted on its record, and its pod is deleted as a rank scaled away.
    pods = Pods()
    status = _started(make_job(("worker", 3, "OnFailure", 2)), pods)
    [task] = status["tasks"]
    worker_2 = task["replicas"][2]
    legacy = {**status, "tasks": [{**task, "replicas": task["replicas"][:2]}], "removedReplicas": [worker_2]}
    pods.set("worker", 2, "Failed")
    result = step(make_job(("worker", 2, "OnFailure", 2)), legacy, pods, at(5))
    [task] = result.status["tasks"]
    kept = [(r["name"], r["phase"], r["restartCount"]) for r in task["replicas"]]
    assert kept[-1] == ("job-worker-2", "Deleted", 1)
    assert result.status["backoffCount"] == 1


def test_a_retryable_failure_of_a_rank_scaled_away_whose_record_is_dropped_for_size_stays_counted(monkeypatch):
    from controller.jobs.decisions import edits

    monkeypatch.setattr(edits, "MAX_RECORDS", 3)
    pods = Pods()
    status = _started(make_job(("worker", 3, "OnFailure", 2)), pods)
    pods.set("worker", 2, "Failed")
    pods.set("worker", 1, "Failed")
    result = step(make_job(("worker", 0, "OnFailure", 2), ("ps", 3, "OnFailure", 2)), status, pods, at(5))
    worker = next(t for t in result.status["tasks"] if t["type"] == "worker")
    assert worker["restartCount"] == 2 and result.status["backoffCount"] == 2


def test_a_debug_pod_lost_after_debug_mode_is_off_is_succeeded_at_once_without_a_back_off():
    # Its record says debug (the pod was one); debug mode is off now: the workload's pod is made at once, as
    # resuming does, whatever the restart back-off (which still applies in debug mode).
    from controller.jobs.decisions.backoff import RestartBackoff

    pods = Pods()
    job = make_job(("worker", 1))
    status = _started(job, pods)
    [task] = status["tasks"]
    [worker] = task["replicas"]
    status = {**status, "tasks": [{**task, "replicas": [{**worker, "debug": True}]}]}
    pods.remove("worker", 0)
    result = engine.plan(GENERICJOB, job, status, pods.list(), at(5), restart_backoff=RestartBackoff(10.0))
    assert [c.replica_type for c in result.create] == ["worker"] and result.status["backoffCount"] == 0
    debugging = make_job(("worker", 1), debug=True)
    waits = engine.plan(GENERICJOB, debugging, status, pods.list(), at(5), restart_backoff=RestartBackoff(10.0))
    assert waits.create == [] and waits.requeue_after == 10.0


def test_a_rank_scaled_away_as_the_job_fails_under_none_is_kept_without_a_delete_event():
    pods = Pods()
    status = _started(make_job(("worker", 3, "Never")), pods)
    pods.set("worker", 2, "Failed")
    result = step(make_job(("worker", 2, "Never")), status, pods, at(5))
    assert result.terminal and not [e for e in result.events if e.reason == "SuccessfulDelete"], result.events


def test_a_rank_that_restarted_before_failing_as_it_is_scaled_away_adds_only_its_new_restart(monkeypatch):
    pods, status = _worker_2_restarted_once(monkeypatch)
    assert status["backoffCount"] == 1
    pods.set("worker", 2, "Failed")
    result = step(make_job(("worker", 0, "OnFailure", 3), ("ps", 3, "OnFailure", 3)), status, pods, at(5))
    worker = next(t for t in result.status["tasks"] if t["type"] == "worker")
    assert worker["restartCount"] == 2 and result.status["backoffCount"] == 2


def test_a_debug_pod_failing_as_its_rank_is_scaled_away_counts_no_restart_and_fails_nothing():
    # Issue 45 (slots.py): the debug flag of a rank scaled away. Under a limit of 0 a workload pod's failure
    # would fail the job; a debug pod's decides nothing.
    pods = Pods()
    status = _started(make_job(("worker", 2, "OnFailure", 0), debug=True), pods)
    uid = pods.set("worker", 1, "Failed")["metadata"]["uid"]
    result = step(make_job(("worker", 1, "OnFailure", 0), debug=True), status, pods, at(5))
    assert not result.terminal and result.status["backoffCount"] == 0 and restarts(result) == []
    assert result.delete == [("job-worker-1", uid, "scale-down")]
    workload = Pods()
    status = _started(make_job(("worker", 2, "OnFailure", 0)), workload)
    workload.set("worker", 1, "Failed")
    assert step(make_job(("worker", 1, "OnFailure", 0)), status, workload, at(5)).terminal


def test_a_debug_pod_first_seen_failing_as_its_rank_is_scaled_away_counts_no_restart_and_fails_nothing():
    # Issue 45 (slots.py, `x_gather_slots__mutmut_158`): the pod of a rank scaled away says whether it is a debug
    # pod, not the record: here the record is still Creating (its pod made, never seen), so it says nothing yet.
    # Under a limit of 0 a workload pod's failure would fail the job; this debug pod's decides and counts nothing.
    pods = Pods()
    debugging = make_job(("worker", 2, "OnFailure", 0), debug=True)
    status = step(debugging, {}, pods, at(0)).status
    assert record(status, "worker", 1) == {"name": "job-worker-1", "uid": "", "phase": "Creating", "containers": [],
                                           "restartCount": 0}
    uid = pods.set("worker", 1, "Failed")["metadata"]["uid"]
    result = step(make_job(("worker", 1, "OnFailure", 0), debug=True), status, pods, at(5))
    assert not result.terminal and result.status["phase"] != "Failed" and result.status["backoffCount"] == 0
    assert restarts(result) == [] and result.delete == [("job-worker-1", uid, "scale-down")]
    assert record(result.status, "worker", 1) == {
        "name": "job-worker-1", "uid": uid, "phase": "Deleted", "restartCount": 0, "lastRestartUid": uid,
        "containers": [{"name": "main", "state": "terminated", "exitCode": 1}], "removed": True}


def test_ranks_after_a_pod_of_a_type_no_longer_in_the_spec_are_still_judged():
    # Issue 45 (slots.py): the pods of ranks scaled away are gathered in sorted order; one the engine cannot judge
    # (its type removed from the spec) must not stop the others from being judged: worker-1's failure, as it is
    # scaled away, uses a restart of the job's.
    pods = Pods()
    status = _started(make_job(("a", 1, "OnFailure", 2), ("worker", 2, "OnFailure", 2)), pods)
    pods.set("worker", 1, "Failed")
    result = step(make_job(("worker", 1, "OnFailure", 2)), status, pods, at(5))
    assert result.status["backoffCount"] == 1 and not result.terminal


def test_in_debug_mode_a_pod_made_before_pods_said_their_mode_is_a_debug_pod_kept_or_scaled_away():
    # (edits.is_debug: such a pod, seen in debug mode, decides nothing, as debug mode always did.) Under a limit of 0
    # a workload pod's failure would fail the job: neither worker-0's nor worker-1's (scaled away) does.
    from .plan_support import make_pod

    debugging = make_job(("worker", 2, "OnFailure", 0), debug=True)
    pods = Pods()
    status = _started(debugging, pods)
    for rank in (0, 1):  # as an older controller made them: no mode annotation
        pods.by_name[f"job-worker-{rank}"] = make_pod("worker", rank, pods.uid("worker", rank), "Failed")
    result = step(make_job(("worker", 1, "OnFailure", 0), debug=True), status, pods, at(5))
    assert not result.terminal and result.status["backoffCount"] == 0


def _failed_again_as_scaled_away(started: str):
    """worker-2 restarted once (a quick restart: streak 1), then its new pod, started at `started`, fails in the
    reconcile that sees the job scaled down to two workers, at(10)."""
    pods = Pods()
    job = make_job(("worker", 3, "OnFailure", 3))
    status = _started(job, pods)
    pods.set("worker", 2, "Failed")
    status = step(job, status, pods, at(3)).status
    status = step(job, status, pods, at(4)).status
    assert record(status, "worker", 2)["restartStreak"] == 1
    pods.set("worker", 2, "Failed")["status"]["startTime"] = started
    return step(make_job(("worker", 2, "OnFailure", 3)), status, pods, at(10))


def test_a_rank_scaled_away_whose_pod_failed_quickly_keeps_its_streak_counted_at_the_reconciles_time():
    # Issue 45 (plan.py, `judged_away`'s time): the streak reads the pod's startTime against the reconcile's time.
    result = _failed_again_as_scaled_away(at(8))
    worker_2 = record(result.status, "worker", 2)
    assert (worker_2["phase"], worker_2["restartCount"], worker_2["restartStreak"]) == ("Deleted", 2, 2)
    assert not worker_2.get("lastRestartTime")  # retired at once: no replacement waits on it
    assert result.status["backoffCount"] == 2 and not result.terminal
    assert restarts(result) == []  # the rank is not recreated: no Restarting Event


def test_a_rank_scaled_away_whose_pod_ran_ten_minutes_starts_its_streak_again():
    result = _failed_again_as_scaled_away("2023-12-31T23:50:00Z")
    worker_2 = record(result.status, "worker", 2)
    assert (worker_2["phase"], worker_2["restartCount"], worker_2["restartStreak"]) == ("Deleted", 2, 1)


def test_a_job_paused_as_it_is_scaled_down_keeps_the_record_of_the_rank_scaled_away():
    # Issue 45 (plan.py): the pause's plan carries the records of ranks scaled away in the same reconcile.
    pods = Pods()
    status = _started(make_job(("worker", 3, "OnFailure", 2)), pods)
    uids = [pods.uid("worker", rank) for rank in range(3)]
    result = step(make_job(("worker", 2, "OnFailure", 2), pause=True), status, pods, at(5))
    assert not result.terminal and result.status["phase"] in ("Pausing", "Paused")
    assert [(r["name"], r["phase"]) for r in result.status["tasks"][0]["replicas"]][2] == ("job-worker-2", "Deleted")
    assert sorted(result.delete) == sorted([("job-worker-0", uids[0], "pause"), ("job-worker-1", uids[1], "pause"),
                                            ("job-worker-2", uids[2], "scale-down")])


def test_a_job_failing_after_a_scale_down_whose_pod_is_still_seen_deletes_that_pod_again():
    # Issue 45 (plan.py, `kept`): worker-2 was scaled away and its pod retired by an earlier reconcile; its delete not
    # seen yet, the job fails. That pod is no replica of the finished job: deleted again, even under None, and its
    # record stays Deleted (not settled by the clean-up policy as a rank leaving in that moment would be).
    pods = Pods()
    status = _started(make_job(("worker", 3, "Never")), pods)
    two = make_job(("worker", 2, "Never"))
    uid = pods.uid("worker", 2)
    scaled = engine.plan(GENERICJOB, two, status, pods.list(), at(5))
    assert scaled.delete == [("job-worker-2", uid, "scale-down")]  # (not applied: the cache still shows the pod)
    pods.set("worker", 0, "Failed")
    failed = engine.plan(GENERICJOB, two, scaled.status, pods.list(), at(6))
    assert failed.terminal and failed.status["phase"] == "Failed"
    assert ("job-worker-2", uid, "scale-down") in failed.delete
    assert record(failed.status, "worker", 2)["phase"] == "Deleted"


def test_a_job_ending_as_it_is_scaled_down_keeps_the_restarts_of_records_dropped_for_size(monkeypatch):
    # Issue 45 (scale_down.settle_leaving): worker-2 restarted once; scaled away with worker-1, whose failure under
    # Never ends the job in that reconcile, and their records dropped for size (room for three, the spec's ps take
    # it): worker-2's restart stays in its type's count.
    pods, status = _worker_2_restarted_once(monkeypatch)
    pods.set("worker", 1, "Failed")
    result = step(make_job(("worker", 0, "Never"), ("ps", 3, "Never")), status, pods, at(5))
    assert result.terminal and result.status["phase"] == "Failed"
    worker = next(t for t in result.status["tasks"] if t["type"] == "worker")
    assert worker["restartCount"] == 1 and result.status["backoffCount"] == 1



def test_a_pod_retired_for_a_restart_whose_rank_is_scaled_away_as_the_job_ends_is_still_deleted():
    # Issue 45 (plan.py, `kept`): worker-2's failed pod was retired for its restart (the delete not seen yet); in the
    # next reconcile the job succeeds and worker-2 is scaled away. That pod is not one the clean-up policy (None)
    # keeps, as a rank leaving with its own pod would be: its delete is repeated and its record stays Deleted.
    job = make_job(("worker", 3, "OnFailure", 1), success=[{"worker": [0]}])
    pods = Pods()
    status = _started(job, pods)
    uid = pods.set("worker", 2, "Failed")["metadata"]["uid"]
    restarted = engine.plan(GENERICJOB, job, status, pods.list(), at(3))
    assert ("job-worker-2", uid, "restart") in restarted.delete  # (not applied: the cache still shows the pod)
    pods.set("worker", 0, "Succeeded")
    two = make_job(("worker", 2, "OnFailure", 1), success=[{"worker": [0]}])
    done = engine.plan(GENERICJOB, two, restarted.status, pods.list(), at(4))
    assert done.terminal and done.status["phase"] == "Succeeded"
    assert ("job-worker-2", uid, "scale-down") in done.delete
    assert record(done.status, "worker", 2)["phase"] == "Deleted"


def test_a_finished_job_moves_ranks_stored_apart_into_a_task_of_their_type_hyphens_and_all():
    # Issue 45 (edits.py): a record an earlier version stored apart (status.removedReplicas) is moved into its
    # type's task once the job has finished, its type read from its name (a type may have hyphens); a task made
    # for it counts the restarts its records hold, no more (kept_counts: a type not stored before starts at 0).
    pods = Pods()
    job = make_job(("worker", 1, "Never"), ("my-ps", 2, "Never"))
    status = _started(job, pods)
    pods.set("worker", 0, "Failed")
    failed = step(job, status, pods, at(5)).status
    assert failed["phase"] == "Failed"
    ps = next(t for t in failed["tasks"] if t["type"] == "my-ps")
    legacy = {**failed, "tasks": [t for t in failed["tasks"] if t["type"] != "my-ps"],
              "removedReplicas": ps["replicas"]}
    result = engine.plan(GENERICJOB, make_job(("worker", 1, "Never")), legacy, pods.list(), at(6))
    moved = next(t for t in result.status["tasks"] if t["type"] == "my-ps")
    assert [r["name"] for r in moved["replicas"]] == ["job-my-ps-0", "job-my-ps-1"] and moved["restartCount"] == 0


def test_the_restarts_of_two_records_of_a_type_dropped_for_size_are_both_kept(monkeypatch):
    # Issue 45 (edits.removed): the restarts carried for records dropped for size add up, per type.
    from controller.jobs.decisions import edits

    monkeypatch.setattr(edits, "MAX_RECORDS", 3)
    pods = Pods()
    job = make_job(("worker", 3, "OnFailure", 3))
    status = _started(job, pods)
    for rank, second in ((1, 3), (2, 5)):
        pods.set("worker", rank, "Failed")
        status = step(job, status, pods, at(second)).status
        status = step(job, status, pods, at(second + 1)).status
    pods.set_all("Running")
    result = step(make_job(("worker", 0, "OnFailure", 3), ("ps", 3, "OnFailure", 3)), status, pods, at(8))
    worker = next(t for t in result.status["tasks"] if t["type"] == "worker")
    assert worker["restartCount"] == 2 and result.status["backoffCount"] == 2
