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
