"""Success and failure rules, with the user guide's rules example and the defaults."""

from __future__ import annotations

from controller.jobs.schema.api import JobPhase
from controller.kinds.genericjob.rules import Outcome, evaluate, failure_message, rule_met, rule_text, success_message

from .plan_support import make_job

S, F = Outcome.SUCCEEDED, Outcome.FAILED

# The user guide (004): three success rules and one failure rule.
GUIDE = make_job(("master", 3), ("worker", 3),
                 success=[{"master": [0]}, {"worker": [0, 1, 2]}, {"master": [2], "worker": [0, 1]}],
                 failure=[{"master": [0]}])


def outcomes(**by_name: Outcome) -> dict:
    """outcomes(master_0=S, worker_1=F) -> {("master", 0): S, ("worker", 1): F}"""
    result = {}
    for key, value in by_name.items():
        replica_type, rank = key.rsplit("_", 1)
        result[(replica_type, int(rank))] = value
    return result


def test_rule_text_is_the_rule_as_json():
    assert rule_text({"worker": [0]}) == '{"worker": [0]}'
    assert success_message({"master": [2], "worker": [0, 1]}) == \
        'The job is succeeded with rule: {"master": [2], "worker": [0, 1]}'
    assert failure_message({"worker": [0]}) == 'The job is failed with rule: {"worker": [0]}'


def test_rule_met_needs_every_named_replica():
    rule = {"master": [2], "worker": [0, 1]}
    assert rule_met(rule, outcomes(master_2=S, worker_0=S, worker_1=S), S)
    assert not rule_met(rule, outcomes(master_2=S, worker_0=S), S)
    assert not rule_met(rule, outcomes(master_2=S, worker_0=S, worker_1=F), S)


def test_empty_rule_is_never_met():
    assert not rule_met({}, {}, S)
    assert not rule_met({"worker": []}, outcomes(worker_0=S), S)


def test_rule_naming_a_replica_outside_the_spec_is_never_met():
    assert not rule_met({"worker": [7]}, outcomes(worker_0=S), S)


def test_guide_first_success_rule_master_0():
    verdict = evaluate(GUIDE.spec, outcomes(master_0=S))
    assert verdict.phase == JobPhase.SUCCEEDED
    assert verdict.message == 'The job is succeeded with rule: {"master": [0]}'


def test_guide_second_success_rule_all_three_workers():
    assert evaluate(GUIDE.spec, outcomes(worker_0=S, worker_1=S)) is None
    verdict = evaluate(GUIDE.spec, outcomes(worker_0=S, worker_1=S, worker_2=S))
    assert verdict.phase == JobPhase.SUCCEEDED
    assert verdict.rule == {"worker": [0, 1, 2]}


def test_guide_third_success_rule_master_2_and_workers_0_1():
    assert evaluate(GUIDE.spec, outcomes(master_2=S, worker_0=S)) is None
    verdict = evaluate(GUIDE.spec, outcomes(master_2=S, worker_0=S, worker_1=S))
    assert verdict.message == 'The job is succeeded with rule: {"master": [2], "worker": [0, 1]}'


def test_guide_other_replicas_succeeding_decide_nothing():
    assert evaluate(GUIDE.spec, outcomes(master_1=S, master_2=S, worker_2=S)) is None


def test_guide_failure_rule_master_0():
    verdict = evaluate(GUIDE.spec, outcomes(master_0=F))
    assert verdict.phase == JobPhase.FAILED
    assert verdict.message == 'The job is failed with rule: {"master": [0]}'


def test_guide_failures_outside_the_failure_rule_do_not_fail_the_job():
    # failureRules are given, so the default "any replica failed" does not apply.
    assert evaluate(GUIDE.spec, outcomes(master_1=F, worker_0=F, worker_1=F, worker_2=F)) is None


def test_guide_failed_workers_still_let_another_success_rule_succeed():
    verdict = evaluate(GUIDE.spec, outcomes(worker_0=F, master_0=S))
    assert verdict.phase == JobPhase.SUCCEEDED


def test_failure_wins_a_tie():
    # All workers succeeded (second success rule) while master 0 failed for good.
    verdict = evaluate(GUIDE.spec, outcomes(master_0=F, worker_0=S, worker_1=S, worker_2=S))
    assert verdict.phase == JobPhase.FAILED
    assert verdict.rule == {"master": [0]}


def test_default_success_is_every_replica_succeeded():
    job = make_job(("master", 1), ("worker", 2))
    assert evaluate(job.spec, outcomes(master_0=S, worker_0=S)) is None
    verdict = evaluate(job.spec, outcomes(master_0=S, worker_0=S, worker_1=S))
    assert verdict.phase == JobPhase.SUCCEEDED
    assert verdict.message == 'The job is succeeded with rule: {"master": [0], "worker": [0, 1]}'


def test_default_failure_names_the_failed_replica():
    job = make_job(("master", 1), ("worker", 3))
    verdict = evaluate(job.spec, outcomes(master_0=S, worker_1=F, worker_2=F))
    assert verdict.phase == JobPhase.FAILED
    assert verdict.message == 'The job is failed with rule: {"worker": [1]}'


def test_default_failure_wins_a_tie_with_an_explicit_success_rule():
    job = make_job(("a", 1), ("b", 1), success=[{"a": [0]}])
    verdict = evaluate(job.spec, outcomes(a_0=S, b_0=F))
    assert verdict.phase == JobPhase.FAILED
    assert verdict.rule == {"b": [0]}


def test_explicit_success_rules_with_default_failure():
    job = make_job(("worker", 4), success=[{"worker": [0]}])
    assert evaluate(job.spec, outcomes(worker_0=S)).phase == JobPhase.SUCCEEDED
    assert evaluate(job.spec, outcomes(worker_3=F)).message == 'The job is failed with rule: {"worker": [3]}'


def test_empty_rule_lists_count_as_absent():
    job = make_job(("worker", 2), success=[], failure=[])
    assert evaluate(job.spec, outcomes(worker_0=S, worker_1=S)).phase == JobPhase.SUCCEEDED
    assert evaluate(job.spec, outcomes(worker_1=F)).phase == JobPhase.FAILED


def test_string_ranks_are_parsed():
    job = make_job(("worker", 2), success=[{"worker": ["1"]}])
    assert evaluate(job.spec, outcomes(worker_1=S)).rule == {"worker": [1]}


def test_zero_replicas_succeed_at_once():
    job = make_job(("worker", 0))
    verdict = evaluate(job.spec, {})
    assert verdict.phase == JobPhase.SUCCEEDED
    assert verdict.message == "The job is succeeded: it has no replicas"


def test_default_success_of_many_replicas_keeps_the_message_short():
    job = make_job(("worker", 100))
    verdict = evaluate(job.spec, {("worker", r): S for r in range(100)})
    assert verdict.message == "The job is succeeded: all 100 replicas succeeded"
    assert verdict.rule == {"worker": list(range(100))}


def test_undecided_replicas_decide_nothing():
    assert evaluate(GUIDE.spec, {}) is None
    assert evaluate(make_job(("worker", 2)).spec, outcomes(worker_0=None, worker_1=None)) is None
