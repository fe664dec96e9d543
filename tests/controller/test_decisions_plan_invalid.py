"""One reconcile's plan of a job whose spec is invalid: what it deletes, force-deletes and keeps (mutant-driven)."""

from __future__ import annotations

from controller.jobs.decisions import plan as engine

from .decisions_plan_support import at, generic


def test_an_invalid_job_force_deletes_its_stuck_pods_and_is_no_longer_running():
    ps = generic()
    stuck = ps.make_pod("worker", 0, "u0", "Running", terminating=True)
    status = {"phase": "Running", "conditions": [{"type": "Running", "status": "True"}]}
    invalid = engine.plan_invalid(ps.GENERICJOB, status, [stuck], "bad", at(0), clock=1.8e9, stuck_after=60.0)
    assert [f.name for f in invalid.force_delete] == ["job-worker-0"]
    running = next(c for c in invalid.status["conditions"] if c["type"] == "Running")
    assert (running["status"], running["message"]) == ("False", "The job has finished.")


def test_an_invalid_job_that_never_described_its_replicas_gets_no_replica_status():
    ps = generic()
    invalid = ps.plan_invalid({}, [], "bad", at(0))
    assert {"tasks", "aggregate", "backoffCount"}.isdisjoint(invalid.status)


def test_an_invalid_job_still_counts_the_restarts_of_ranks_scaled_away():
    # Removed ranks keep their Deleted records in their type's task (the spec's "Removed ranks"); a job found
    # invalid keeps them, their restarts in restartCount and backoffCount.
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 1))
    status = ps.step(job, {}, pods, at(0)).status
    [task] = status["tasks"]
    gone = {"name": "job-worker-5", "uid": "u5", "phase": "Deleted", "restartCount": 2, "lastRestartUid": "u5"}
    status = {**status, "tasks": [{**task, "restartCount": 2, "replicas": [*task["replicas"], gone]}],
              "backoffCount": 2}
    invalid = ps.plan_invalid(status, pods.list(), "bad", at(1))
    assert invalid.status["backoffCount"] == 2
    [task] = invalid.status["tasks"]
    assert task["restartCount"] == 2
    assert [(r["name"], r["phase"], r["restartCount"]) for r in task["replicas"]][-1] == ("job-worker-5", "Deleted", 2)


def test_an_invalid_job_keeps_its_other_conditions_and_may_have_no_status_yet():
    ps = generic()
    initialized = {"type": "Initialized", "status": "True", "reason": "PodsCreated"}
    invalid = ps.plan_invalid({"phase": "Running", "conditions": [initialized]}, [], "bad", at(0))
    assert initialized in invalid.status["conditions"]
    assert ps.plan_invalid(None, [], "bad", at(0)).status["phase"] == "Failed"


def test_a_job_already_failed_as_invalid_still_deletes_its_unfinished_pods():
    ps = generic()
    first = ps.plan_invalid({"phase": "Running"}, [], "bad", at(0))
    running = ps.make_pod("worker", 0, "u0", "Running")
    again = ps.plan_invalid(first.status, [running], "bad", at(1))
    assert again.terminal and [d.name for d in again.delete] == ["job-worker-0"]


def test_a_pod_stuck_terminating_is_force_deleted_once_its_time_is_up_not_a_moment_later():
    from controller.jobs.decisions.backoff import epoch

    ps = generic()
    stuck = ps.make_pod("worker", 0, "u0", "Running", terminating=True)
    deadline = epoch(stuck["metadata"]["deletionTimestamp"])
    due = ps.plan_invalid({"phase": "Failed"}, [stuck], "bad", at(0))  # (no clock: never checked)
    assert due.force_delete == []
    early = engine.plan_invalid(ps.GENERICJOB, {}, [stuck], "bad", at(0), clock=deadline + 59.5, stuck_after=60.0)
    assert (early.force_delete, early.requeue_after) == ([], 0.5)
    on_time = engine.plan_invalid(ps.GENERICJOB, {}, [stuck], "bad", at(0), clock=deadline + 60.0, stuck_after=60.0)
    assert [f.name for f in on_time.force_delete] == ["job-worker-0"]


def test_an_invalid_job_removes_its_services_and_podgroup():
    ps = generic()
    child = {"metadata": {"name": "job", "uid": "c1"}}
    invalid = engine.plan_invalid(ps.GENERICJOB, {}, [], "bad", at(0), services=[child], podgroups=[child])
    assert [(a.resource, a.name) for a in invalid.services] == [("services", "job")]
    assert [(a.resource, a.name) for a in invalid.podgroup] == [("podgroups", "job")]


def test_a_job_that_finished_otherwise_is_left_as_it_is_when_its_spec_turns_invalid():
    ps = generic()
    succeeded = {"phase": "Succeeded"}
    left = ps.plan_invalid(succeeded, [ps.make_pod("worker", 0, "u0", "Running")], "bad", at(0))
    assert left.terminal and left.status == succeeded and left.delete == []


def test_an_invalid_job_does_not_delete_a_terminating_pod_again_and_shows_its_replica_deleted():
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 1))
    status = ps.step(job, {}, pods, at(0)).status
    going = pods.list()[0]
    going["metadata"]["deletionTimestamp"] = at(0)
    going["status"] = {"phase": "Running"}
    invalid = ps.plan_invalid(status, [going], "bad", at(1))
    assert invalid.delete == []
    [replica] = invalid.status["tasks"][0]["replicas"]
    assert replica["phase"] == "Deleted"


def test_of_two_pods_stuck_terminating_the_sooner_wakes_the_job():
    from controller.jobs.decisions.backoff import epoch

    ps = generic()
    first = ps.make_pod("worker", 0, "u0", "Running", terminating=True)
    later = ps.make_pod("worker", 1, "u1", "Running", terminating=True)
    later["metadata"]["deletionTimestamp"] = at(30)
    clock = epoch(at(0)) + 10
    for pods in ([first, later], [later, first]):
        woken = engine.plan_invalid(ps.GENERICJOB, {}, pods, "bad", at(0), clock=clock, stuck_after=60.0)
        assert woken.requeue_after == 50


def test_a_force_delete_says_how_long_ago_the_pods_grace_period_ended():
    from controller.jobs.decisions.backoff import epoch

    ps = generic()
    stuck = ps.make_pod("worker", 0, "u0", "Running", terminating=True)
    clock = epoch(stuck["metadata"]["deletionTimestamp"]) + 75.0
    [force] = engine.plan_invalid(ps.GENERICJOB, {}, [stuck], "bad", at(0), clock=clock, stuck_after=60.0).force_delete
    assert force.overdue == 75.0


def test_a_rank_scaled_away_without_restarts_adds_nothing_to_an_invalid_jobs_backoff_count():
    ps = generic()
    pods = ps.Pods()
    status = ps.step(ps.make_job(("worker", 1)), {}, pods, at(0)).status
    invalid = ps.plan_invalid({**status, "removedReplicas": [{"name": "job-worker-5"}]}, pods.list(), "bad", at(1))
    assert invalid.status["backoffCount"] == 0


def test_an_invalid_jobs_stored_record_without_a_name_is_kept_without_one():
    # Issue 45 (edits.described_records): a record that says no name is described as it is, not under a made-up one.
    ps = generic()
    status = {"phase": "Running", "tasks": [{"type": "worker", "restartCount": 0, "replicas": [{"phase": "Running"}]}]}
    invalid = engine.plan_invalid(ps.GENERICJOB, status, [], "bad", at(0))
    [record] = invalid.status["tasks"][0]["replicas"]
    assert not record.get("name"), record
