"""GenericJob's default success rule (controller/kinds/genericjob/rules.py) at its edges. Written against the
mutants that survived the other tests (tests/mutation, RELIABILITY.md): each test names the behaviour a surviving
mutant broke."""

from __future__ import annotations

from controller.jobs.schema.api import JobPhase, Outcome
from controller.kinds.genericjob.rules import LISTED_REPLICAS_MAX, evaluate

from .plan_support import make_job


def all_succeeded(job) -> dict:
    return {(spec.type, rank): Outcome.SUCCEEDED for spec in job.spec.replica_specs for rank in range(spec.replicas)}


def test_the_default_success_rule_leaves_out_a_type_of_zero_replicas():
    job = make_job(("master", 0), ("worker", 2))
    verdict = evaluate(job.spec, all_succeeded(job))
    assert verdict.rule == {"worker": [0, 1]}
    assert verdict.message == 'The job is succeeded with rule: {"worker": [0, 1]}'


def test_the_default_success_rule_lists_up_to_its_maximum_of_replicas_and_counts_beyond():
    listed = make_job(("worker", LISTED_REPLICAS_MAX))
    verdict = evaluate(listed.spec, all_succeeded(listed))
    assert verdict.phase == JobPhase.SUCCEEDED and verdict.message.startswith("The job is succeeded with rule: ")
    counted = make_job(("worker", LISTED_REPLICAS_MAX + 1))
    beyond = evaluate(counted.spec, all_succeeded(counted))
    assert beyond.phase == JobPhase.SUCCEEDED and beyond.rule == {"worker": list(range(LISTED_REPLICAS_MAX + 1))}
    assert beyond.message == f"The job is succeeded: all {LISTED_REPLICAS_MAX + 1} replicas succeeded"


def test_a_job_of_no_replicas_succeeds_by_the_default_rule_naming_none():
    none = evaluate(make_job(("worker", 0)).spec, {})
    assert (none.phase, none.rule, none.message) == (JobPhase.SUCCEEDED, {}, "The job is succeeded: it has no replicas")


def test_the_failure_of_a_rank_scaled_away_is_named_after_the_specs_once_each():
    # worker-3 failed in the moment it was scaled away (edits.judged adds it to the outcomes): the default rule
    # fails the job, naming worker-0 (the spec's) first and each failed replica once.
    job = make_job(("worker", 2))
    outcomes = {("worker", 0): Outcome.FAILED, ("worker", 1): None, ("worker", 3): Outcome.FAILED}
    verdict = evaluate(job.spec, outcomes)
    assert verdict.phase == JobPhase.FAILED and verdict.rule == {"worker": [0]}
    assert verdict.replicas == (("worker", 0), ("worker", 3))
