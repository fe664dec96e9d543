"""One reconcile's plan (controller/jobs/plan.py) in the cases the planning tests do not reach: a kind's dependent
resources reported on the job. Written against the mutants that survived the other tests (tests/mutation,
RELIABILITY.md): each test names the behaviour a surviving mutant broke."""

from __future__ import annotations

from controller.jobs import plan as engine
from controller.kinds.tensorflow import tensorboard
from controller.kinds.tensorflow.kind import TENSORFLOW

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
