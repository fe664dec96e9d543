"""One reconcile's plan (controller/jobs/decisions/plan.py) in the cases the planning tests do not reach: a kind's
dependent resources reported on the job. Written against the mutants that survived the other tests (tests/mutation,
RELIABILITY.md): each test names the behaviour a surviving mutant broke."""

from __future__ import annotations

import pytest

from controller.jobs.children.pods import mode_annotation
from controller.jobs.decisions import plan as engine
from controller.jobs.decisions.slots import pick
from controller.jobs.training import tensorboard
from controller.kinds.tensorflow.kind import TENSORFLOW

from .plan_support import Pods, make_job, step
from .test_tensorflow_kind import parsed

NOW = "2024-01-01T00:00:00Z"


def test_a_dependent_whose_api_is_missing_is_reported_on_the_job_with_one_warning():
    job = parsed(("worker", 1), tensorboardSpec={"image": "tb"})
    first = engine.plan(TENSORFLOW, job, {}, [], NOW, dependents={tensorboard.RESOURCE: None})
    assert first.status["tensorboard"]["reason"] == "DependentAPIMissing"
    warnings = [e for e in first.events if e.type == "Warning"]
    assert [(e.reason, e.message) for e in warnings] == [("DependentAPIMissing", first.status["tensorboard"]["note"])]
    again = engine.plan(TENSORFLOW, job, first.status, [], NOW, dependents={tensorboard.RESOURCE: None})
    assert again.status["tensorboard"] == first.status["tensorboard"]
    assert not [e for e in again.events if e.type == "Warning"]


def test_a_dependent_being_made_is_reported_without_a_warning():
    job = parsed(("worker", 1), tensorboardSpec={"image": "tb"})
    made = engine.plan(TENSORFLOW, job, {}, [], NOW, dependents={tensorboard.RESOURCE: []})
    assert (made.status["tensorboard"]["reason"], made.status["tensorboard"]["type"]) == ("DependentNotReady", "Normal")
    assert not [e for e in made.events if e.type == "Warning"]
    assert "tensorboard" not in engine.plan(TENSORFLOW, parsed(("worker", 1)), {}, [], NOW, dependents={}).status


def at(second: int) -> str:
    return f"2024-01-01T00:{second // 60:02d}:{second % 60:02d}Z"


def test_an_active_deadline_wakes_the_job_when_it_passes_and_then_fails_it():
    job = parsed(("worker", 1), runPolicy={"activeDeadlineSeconds": 60})
    running = {"phase": "Running", "startTime": at(0)}
    waiting = engine.plan(TENSORFLOW, job, running, [], at(20))
    assert not waiting.terminal and waiting.requeue_after == 40
    failed = engine.plan(TENSORFLOW, job, running, [], at(61))
    assert failed.terminal and failed.status["reason"] == "DeadlineExceeded"


def test_a_job_that_starts_now_is_woken_at_its_deadline():
    job = parsed(("worker", 1), runPolicy={"activeDeadlineSeconds": 60})
    started = engine.plan(TENSORFLOW, job, {}, [], at(5))
    assert started.status["startTime"] == at(5) and started.requeue_after == 60


def test_paused_time_never_counts_against_the_deadline():
    job = parsed(("worker", 1), runPolicy={"activeDeadlineSeconds": 60}, runMode={"pause": {"enabled": True}})
    paused = engine.plan(TENSORFLOW, job, {"phase": "Running", "startTime": at(0)}, [], at(100))
    assert not paused.terminal and paused.status["phase"] == "Paused"


def test_a_resumed_job_starts_its_deadline_again():
    job = parsed(("worker", 1), runPolicy={"activeDeadlineSeconds": 60})
    paused = {"phase": "Paused", "startTime": at(0), "conditions": [{"type": "Paused", "status": "True"}]}
    resumed = engine.plan(TENSORFLOW, job, paused, [], at(100))
    assert not resumed.terminal and resumed.status["phase"] == "Resuming"
    assert (resumed.status["startTime"], resumed.requeue_after) == (at(100), 60)


# --- GenericJobs (tests/controller/plan_support.py) ----------------------------------------------------------


def generic():
    from . import plan_support

    return plan_support


def failed_single_worker():
    """A one-worker job (restart policy Never) whose worker failed at second 1: the plan support module, the
    pods, the job and its finished status."""
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 1, "Never"))
    status = ps.step(job, {}, pods, at(0)).status
    pods.set("worker", 0, "Failed")
    return ps, pods, job, ps.plan(job, status, pods.list(), at(1)).status


def test_a_job_created_paused_says_it_has_neither_completed_nor_failed():
    ps = generic()
    job = ps.make_job(("worker", 1), pause=True)
    conditions = {c["type"]: c["status"] for c in ps.plan(job, {}, [], at(0)).status["conditions"]}
    assert (conditions["Completed"], conditions["Failed"], conditions["Paused"]) == ("False", "False", "True")


def test_a_template_change_is_announced_in_the_plan_and_recorded():
    ps = generic()
    job = ps.make_job(("worker", 1))
    first = ps.plan(job, {}, [], at(0))
    hashes = first.status["templateHashes"]
    assert set(hashes) == {"worker"}
    edited = ps.plan(job, {**first.status, "templateHashes": {"worker": "an older hash"}}, [], at(1))
    assert [e.reason for e in edited.events if e.reason == "TemplateChanged"] == ["TemplateChanged"]
    assert edited.status["templateHashes"] == hashes


@pytest.mark.parametrize(("replicas", "shown"), [
    (2, "job-worker-0, job-worker-1"),
    (5, "job-worker-0, job-worker-1, job-worker-2, job-worker-3, job-worker-4"),
    (7, "job-worker-0, job-worker-1, job-worker-2, job-worker-3, job-worker-4 and 2 more"),
])
def test_turning_debug_mode_on_replaces_the_running_pods_and_says_so(replicas, shown):
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", replicas))
    status = ps.step(job, {}, pods, at(0)).status
    pods.set_all("Running")
    for pod in pods.list():  # made in the workload's mode, as the controller's pods say
        pod["metadata"]["annotations"] = {mode_annotation(ps.GENERICJOB.api): "immediate"}
    status = ps.step(job, status, pods, at(1)).status
    debug = ps.make_job(("worker", replicas), debug=True)
    switched = ps.plan(debug, status, pods.list(), at(2))
    assert sorted(d.name for d in switched.delete) == sorted(f"job-worker-{rank}" for rank in range(replicas))
    assert [e.message for e in switched.events if e.reason == "RunModeChanged"] == [
        f"Debug mode turned on: replacing the pods of {shown}"]


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


def test_a_finished_job_records_the_clean_up_policy_it_finished_with():
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 1, "Never"), cleanup="All")
    status = ps.step(job, {}, pods, at(0)).status
    pods.set("worker", 0, "Failed")
    finished = ps.plan(job, status, pods.list(), at(1))
    assert finished.terminal and finished.status["cleanUpPolicy"] == "All"


def test_among_look_alike_pods_the_recorded_one_is_the_replicas_then_one_not_retired():
    ps = generic()
    from controller.jobs.decisions.status import Replica

    retired, recorded, other = (ps.make_pod("worker", 0, uid) for uid in ("u-old", "u-rec", "u-new"))
    record = Replica("job-worker-0", "u-rec", "Running", last_restart_uid="u-old")
    assert pick([retired, other, recorded], record) is recorded
    assert pick([retired, other], Replica("job-worker-0", "", "Creating", last_restart_uid="u-old")) is other
    assert pick([retired], record) is retired


def test_a_jobs_podgroup_and_services_are_made_when_watched_and_not_while_paused():
    job = parsed(("worker", 1), scheduler={"t9kScheduler": {"queue": "q"}})
    made = engine.plan(TENSORFLOW, job, {}, [], NOW, services=[], podgroups=[])
    assert [a.resource for a in made.podgroup] == ["podgroups"] and [a.resource for a in made.services] == ["services"]
    paused = parsed(("worker", 1), scheduler={"t9kScheduler": {"queue": "q"}}, runMode={"pause": {"enabled": True}})
    held = engine.plan(TENSORFLOW, paused, {}, [], NOW, services=[], podgroups=[])
    assert (held.podgroup, held.services) == ([], [])
    unwatched = engine.plan(TENSORFLOW, job, {}, [], NOW)
    assert (unwatched.podgroup, unwatched.services) == ([], [])


def test_a_refused_write_does_not_change_the_conditions_of_a_job_that_finishes():
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 1, "Never"))
    status = ps.step(job, {}, pods, at(0)).status
    pods.set("worker", 0, "Failed")
    finished = engine.plan(ps.GENERICJOB, job, status, pods.list(), at(1),
                           write_failure=engine.WriteFailure("FailedCreate", "pods is forbidden"))
    failure = next(c for c in finished.status["conditions"] if c["type"] == "ReplicaFailure")
    assert finished.terminal and failure["reason"] != "FailedCreate"


def test_the_deadlines_wake_up_is_timed_by_the_clock_not_whole_seconds():
    from controller.jobs.decisions.backoff import epoch

    job = parsed(("worker", 1), runPolicy={"activeDeadlineSeconds": 60})
    woken = engine.plan(TENSORFLOW, job, {"phase": "Running", "startTime": at(0)}, [], at(20),
                        clock=epoch(at(20)) + 0.5)
    assert woken.requeue_after == 39.5


def test_a_job_without_a_status_is_planned_as_a_new_one():
    job = parsed(("worker", 1))
    assert engine.plan(TENSORFLOW, job, None, [], NOW).status == engine.plan(TENSORFLOW, job, {}, [], NOW).status


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


def tf_pod(job, replica_type: str, rank: int, phase: str) -> dict:
    from controller.jobs.schema.naming import replica_labels, replica_name

    return {"metadata": {"name": replica_name(job.name, replica_type, rank), "namespace": "ns",
                         "uid": f"u-{replica_type}-{rank}",
                         "labels": replica_labels(TENSORFLOW.api, job.name, job.uid, replica_type, rank)},
            "status": {"phase": phase}}


def test_past_its_deadline_a_job_under_all_deletes_every_pod_and_under_none_its_unfinished_ones():
    running = {"phase": "Running", "startTime": at(0)}
    for policy, deleted in (("All", ["tf-worker-0", "tf-worker-1"]), ("None", ["tf-worker-0"])):
        job = parsed(("worker", 2), runPolicy={"activeDeadlineSeconds": 60, "cleanUpPolicy": policy})
        pods = [tf_pod(job, "worker", 0, "Running"), tf_pod(job, "worker", 1, "Succeeded")]
        failed = engine.plan(TENSORFLOW, job, running, pods, at(61))
        assert failed.status["reason"] == "DeadlineExceeded"
        assert sorted(d.name for d in failed.delete) == deleted, policy


def test_the_deadline_passes_only_when_no_time_is_left():
    from controller.jobs.decisions.backoff import epoch

    job = parsed(("worker", 1), runPolicy={"activeDeadlineSeconds": 60})
    almost = engine.plan(TENSORFLOW, job, {"phase": "Running", "startTime": at(0)}, [], at(59),
                         clock=epoch(at(59)) + 0.5)
    assert not almost.terminal and almost.requeue_after == 0.5


def test_a_finished_job_says_once_per_generation_that_spec_changes_are_ignored():
    ps, pods, job, finished = failed_single_worker()
    seen = ps.plan(job, {**finished, "observedGeneration": job.generation}, pods.list(), at(2))
    assert not [e for e in seen.events if e.reason == "SpecChangeIgnored"]
    edited = ps.plan(job, {**finished, "observedGeneration": job.generation - 1}, pods.list(), at(2))
    assert [e.reason for e in edited.events if e.reason == "SpecChangeIgnored"] == ["SpecChangeIgnored"]


def test_a_finishing_job_keeps_the_conditions_of_its_past():
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 1, "Never"))
    status = ps.step(job, {}, pods, at(0)).status
    resumed = {"type": "Paused", "status": "False", "reason": "Resumed", "message": "The job was resumed.",
               "lastTransitionTime": at(0)}
    pods.set("worker", 0, "Failed")
    finished = ps.plan(job, {**status, "conditions": [*status["conditions"], resumed]}, pods.list(), at(1))
    assert finished.terminal and resumed in finished.status["conditions"]
    assert (finished.status["startTime"], finished.status["completionTime"]) == (at(0), at(1))


def test_the_restarts_of_ranks_scaled_away_spend_the_jobs_budget():
    job = TENSORFLOW.parse(tfjob_with_restart_policy("OnFailure"))
    status = {"phase": "Running", "startTime": at(0), "removedReplicas": [{"name": "tf-worker-3", "restartCount": 2}]}
    failed = engine.plan(TENSORFLOW, job, status, [tf_pod(job, "worker", 0, "Failed")], at(1))
    assert failed.terminal and failed.status["reason"] == "BackoffLimitExceeded"


def tfjob_with_restart_policy(policy: str) -> dict:
    from .test_tensorflow_kind import tfjob

    obj = tfjob(("worker", 1), runPolicy={"backoffLimit": 2})
    obj["spec"]["replicaSpecs"][0]["restartPolicy"] = policy
    return obj


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


def test_a_refused_write_shows_on_a_new_job_and_keeps_its_first_time_and_the_other_conditions():
    ps = generic()
    job = ps.make_job(("worker", 1))
    refused = engine.WriteFailure("FailedCreate", "pods is forbidden")
    first = engine.plan(ps.GENERICJOB, job, {}, [], at(0), write_failure=refused)
    conditions = {c["type"]: c for c in first.status["conditions"]}
    assert conditions["ReplicaFailure"]["reason"] == "FailedCreate" and "Completed" in conditions
    again = engine.plan(ps.GENERICJOB, job, first.status, [], at(5), write_failure=refused)
    failure = next(c for c in again.status["conditions"] if c["type"] == "ReplicaFailure")
    assert failure["lastTransitionTime"] == at(0)


def test_a_finished_jobs_clean_up_of_a_pod_its_record_still_shows_says_so():
    import copy

    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 2, "Never"), cleanup="All")
    status = ps.step(job, {}, pods, at(0)).status
    pods.set("worker", 0, "Failed")
    pods.set("worker", 1, "Running")
    finished = copy.deepcopy(ps.plan(job, status, pods.list(), at(1)).status)
    finished["tasks"][0]["replicas"][1]["phase"] = "Running"  # as a controller that stopped before its write left it
    late = ps.plan(job, finished, pods.list(), at(2))
    assert [e.message for e in late.events if e.reason == "SuccessfulDelete"] == ["Deleted pod: job-worker-1"]


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


def test_turning_debug_mode_off_replaces_the_debug_pods_and_says_so():
    ps = generic()
    pods = ps.Pods()
    debug = ps.make_job(("worker", 1), debug=True)
    status = ps.step(debug, {}, pods, at(0)).status
    pods.set_all("Running")
    for pod in pods.list():
        pod["metadata"]["annotations"] = {mode_annotation(ps.GENERICJOB.api): "debug"}
    status = ps.step(debug, status, pods, at(1)).status
    switched = ps.plan(ps.make_job(("worker", 1)), status, pods.list(), at(2))
    assert [d.name for d in switched.delete] == ["job-worker-0"]
    assert [e.message for e in switched.events if e.reason == "RunModeChanged"] == [
        "Debug mode turned off: replacing the pods of job-worker-0"]


def test_a_finished_jobs_replica_awaiting_a_pod_is_deleted_unless_its_create_was_just_sent():
    import copy

    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 2, "Never"))
    status = ps.step(job, {}, pods, at(0)).status
    pods.set("worker", 0, "Failed")
    finished = copy.deepcopy(ps.plan(job, status, pods.list(), at(1)).status)
    finished["tasks"][0]["replicas"][1].update(phase="Creating", uid="")
    others = [p for p in pods.list() if p["metadata"]["name"] != "job-worker-1"]

    def phase(creating):
        settled = engine.plan(ps.GENERICJOB, job, finished, others, at(2), creating=frozenset(creating))
        return settled.status["tasks"][0]["replicas"][1]["phase"]

    assert phase(()) == "Deleted"
    assert phase({"job-worker-1"}) == "Creating"


def test_a_finished_jobs_ranks_stored_apart_by_an_earlier_version_are_moved_into_their_tasks():
    # status.removedReplicas (an earlier version's place for ranks scaled away): a finished job keeps its status,
    # but the records move into their type's task, Deleted, their restarts counted there, as a running job's do.
    ps, pods, job, finished = failed_single_worker()
    legacy = {**finished, "removedReplicas": [{"name": "job-worker-5", "restartCount": 2}], "backoffCount": 2}
    moved = ps.plan(job, legacy, pods.list(), at(2)).status
    assert "removedReplicas" not in moved
    [task] = moved["tasks"]
    assert [(r["name"], r["phase"]) for r in task["replicas"]] == [("job-worker-0", "Failed"),
                                                                   ("job-worker-5", "Deleted")]
    assert task["restartCount"] == 2 and moved["backoffCount"] == 2 and moved["phase"] == "Failed"
    again = ps.plan(job, moved, pods.list(), at(3)).status
    assert again == moved


# Outcomes seen with a scale-down (the spec's "Every outcome is judged"; the judging branch).

def _started(job, pods):
    status = step(job, {}, pods, at(0)).status
    status = step(job, status, pods, at(1)).status
    pods.set_all("Running")
    return step(job, status, pods, at(2)).status


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
    from controller.kinds.genericjob.kind import GENERICJOB

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


def test_an_edit_of_a_job_finished_by_an_older_controller_which_stored_no_policy_is_ignored():
    # No status.cleanUpPolicy (an older controller): the edit cannot be told a policy change, and is said ignored.
    ps, pods, job, finished = failed_single_worker()
    older = {key: value for key, value in finished.items() if key != "cleanUpPolicy"}
    edited = ps.plan(job, {**older, "observedGeneration": job.generation - 1}, pods.list(), at(2))
    assert [e.reason for e in edited.events if e.type == "Normal"] == ["SpecChangeIgnored"]


def test_a_finished_jobs_restarts_of_records_dropped_for_size_are_not_added_again():
    ps, pods, job, finished = failed_single_worker()
    [task] = finished["tasks"]
    dropped = {**finished, "tasks": [{**task, "restartCount": 3}], "backoffCount": 3}  # 3 beyond its records
    again = ps.plan(job, dropped, pods.list(), at(2)).status
    assert again["tasks"][0]["restartCount"] == 3 and again["backoffCount"] == 3


def test_a_rank_scaled_away_as_the_job_fails_under_none_is_kept_without_a_delete_event():
    pods = Pods()
    status = _started(make_job(("worker", 3, "Never")), pods)
    pods.set("worker", 2, "Failed")
    result = step(make_job(("worker", 2, "Never")), status, pods, at(5))
    assert result.terminal and not [e for e in result.events if e.reason == "SuccessfulDelete"], result.events


def test_a_rank_that_restarted_before_failing_as_it_is_scaled_away_adds_only_its_new_restart(monkeypatch):
    from controller.jobs.decisions import edits

    monkeypatch.setattr(edits, "MAX_RECORDS", 3)
    pods = Pods()
    job = make_job(("worker", 3, "OnFailure", 3))
    status = _started(job, pods)
    pods.set("worker", 2, "Failed")
    status = step(job, status, pods, at(3)).status  # its first restart
    status = step(job, status, pods, at(4)).status
    assert status["backoffCount"] == 1
    pods.set("worker", 2, "Failed")
    result = step(make_job(("worker", 0, "OnFailure", 3), ("ps", 3, "OnFailure", 3)), status, pods, at(5))
    worker = next(t for t in result.status["tasks"] if t["type"] == "worker")
    assert worker["restartCount"] == 2 and result.status["backoffCount"] == 2
