"""One reconcile's plan of a TFJob: its active deadline, its dependents, podgroup and services (mutant-driven)."""

from __future__ import annotations

from controller.jobs.decisions import plan as engine
from controller.jobs.training import tensorboard
from controller.kinds.tensorflow.kind import TENSORFLOW

from .decisions_plan_support import NOW, at
from .test_tensorflow_kind import parsed


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


def test_the_deadlines_wake_up_is_timed_by_the_clock_not_whole_seconds():
    from controller.jobs.decisions.backoff import epoch

    job = parsed(("worker", 1), runPolicy={"activeDeadlineSeconds": 60})
    woken = engine.plan(TENSORFLOW, job, {"phase": "Running", "startTime": at(0)}, [], at(20),
                        clock=epoch(at(20)) + 0.5)
    assert woken.requeue_after == 39.5


def test_the_deadline_passes_only_when_no_time_is_left():
    from controller.jobs.decisions.backoff import epoch

    job = parsed(("worker", 1), runPolicy={"activeDeadlineSeconds": 60})
    almost = engine.plan(TENSORFLOW, job, {"phase": "Running", "startTime": at(0)}, [], at(59),
                         clock=epoch(at(59)) + 0.5)
    assert not almost.terminal and almost.requeue_after == 0.5


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


def test_a_jobs_podgroup_and_services_are_made_when_watched_and_not_while_paused():
    job = parsed(("worker", 1), scheduler={"t9kScheduler": {"queue": "q"}})
    made = engine.plan(TENSORFLOW, job, {}, [], NOW, services=[], podgroups=[])
    assert [a.resource for a in made.podgroup] == ["podgroups"] and [a.resource for a in made.services] == ["services"]
    paused = parsed(("worker", 1), scheduler={"t9kScheduler": {"queue": "q"}}, runMode={"pause": {"enabled": True}})
    held = engine.plan(TENSORFLOW, paused, {}, [], NOW, services=[], podgroups=[])
    assert (held.podgroup, held.services) == ([], [])
    unwatched = engine.plan(TENSORFLOW, job, {}, [], NOW)
    assert (unwatched.podgroup, unwatched.services) == ([], [])


def test_a_job_without_a_status_is_planned_as_a_new_one():
    job = parsed(("worker", 1))
    assert engine.plan(TENSORFLOW, job, None, [], NOW).status == engine.plan(TENSORFLOW, job, {}, [], NOW).status


def test_a_replacement_waiting_out_its_back_off_wakes_the_job_before_its_deadline_does():
    import copy

    from controller.jobs.decisions.backoff import RestartBackoff

    job = parsed(("worker", 1), runPolicy={"activeDeadlineSeconds": 60})
    status = copy.deepcopy(engine.plan(TENSORFLOW, job, {}, [], at(0)).status)
    # worker-0's pod failed and was counted at second 18: its replacement waits 10 s, until second 28.
    status["tasks"][0]["replicaStatus"][0].update(
        {"restartCount": 1, "lastRestartUid": "u0", "lastRestartTime": at(18), "restartStreak": 1})
    waiting = engine.plan(TENSORFLOW, job, status, [], at(20), restart_backoff=RestartBackoff(10.0))
    assert (waiting.create, waiting.requeue_after) == ([], 8.0)  # not the deadline's 40


def test_a_job_resumed_in_the_second_it_started_is_still_woken_at_its_deadline():
    # Issue 45 (plan.py): the deadline's clock restarts at resume, here at the second of the stored startTime; the
    # plan must still ask to be woken when it passes (no watch event announces a deadline).
    job = parsed(("worker", 1), runPolicy={"activeDeadlineSeconds": 60})
    paused = {"phase": "Paused", "startTime": at(100), "conditions": [{"type": "Paused", "status": "True"}]}
    resumed = engine.plan(TENSORFLOW, job, paused, [], at(100))
    assert not resumed.terminal and resumed.status["phase"] == "Resuming"
    assert (resumed.status["startTime"], resumed.requeue_after) == (at(100), 60)
