"""Success and failure rules: has the job succeeded or failed, and which rule says so.

A rule is `{replicaType: [rank, ...]}`. The job succeeds when ANY success rule is met, a rule being
met when ALL the replicas it names have succeeded for good; it fails when ANY failure rule is met,
a rule being met when ALL its replicas have failed for good. Failure is checked first, so it wins
when both become true in the same observation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from controller.jobs.schema.api import JobPhase, Outcome, Verdict
from controller.kinds.genericjob.models import FinishRule, GenericJobSpec

# A default success rule naming more replicas than this is described in words, not listed, so the
# condition message and the Event stay small.
LISTED_REPLICAS_MAX = 32


Outcomes = Mapping[tuple[str, int], Outcome | None]  # by (type, rank); None: not decided yet


def rule_text(rule: FinishRule) -> str:
    """The rule as users wrote it, e.g. `{"worker": [0]}`."""
    return json.dumps(rule)


def success_message(rule: FinishRule) -> str:
    return f"The job is succeeded with rule: {rule_text(rule)}"


def failure_message(rule: FinishRule) -> str:
    return f"The job is failed with rule: {rule_text(rule)}"


def rule_met(rule: FinishRule, outcomes: Outcomes, wanted: Outcome) -> bool:
    """Every replica the rule names has come to `wanted`. A rule naming no replica is never met:
    an empty rule must not end a job at once. Replicas outside the spec (a rule validation should
    have rejected) never have an outcome, so they keep the rule from being met."""
    keys = [(replica_type, rank) for replica_type, ranks in rule.items() for rank in ranks]
    return bool(keys) and all(outcomes.get(key) == wanted for key in keys)


def all_replicas(spec: GenericJobSpec) -> FinishRule:
    return {r.type: list(range(r.replicas)) for r in spec.replica_specs if r.replicas > 0}


def evaluate(spec: GenericJobSpec, outcomes: Outcomes) -> Verdict | None:
    """The job's verdict, or None while it is undecided.

    An empty rule list counts as absent (as Go's `omitempty` would make it). Without failure rules,
    any replica failed for good fails the job, and the message names that replica; without success
    rules, the job succeeds when every replica has succeeded, so a job of zero replicas succeeds at
    once (like a batch/v1 Job with zero completions).
    """
    failed = tuple(key for key in _spec_order(spec) if outcomes.get(key) == Outcome.FAILED)
    if len(outcomes) > sum(r.replicas for r in spec.replica_specs):
        # Ranks scaled away in the moment they failed are judged too (after those of the spec), by the default
        # rule; an explicit rule never names them (admission refuses such a scale-down).
        named = set(_spec_order(spec))
        failed += tuple(sorted(key for key, outcome in outcomes.items()
                               if outcome == Outcome.FAILED and key not in named))
    if spec.failure_rules:
        for rule in spec.failure_rules:
            if rule_met(rule, outcomes, Outcome.FAILED):
                named = {(replica_type, rank) for replica_type, ranks in rule.items() for rank in ranks}
                return Verdict(JobPhase.FAILED, rule, failure_message(rule),
                               replicas=tuple(key for key in failed if key in named))
    elif failed:
        # The default rule is "any replica failed for good": it is shown as the rule of the first failed
        # replica (the seed's form); the cause (controller/jobs/decisions/cause.py) counts the others.
        replica_type, rank = failed[0]
        rule = {replica_type: [rank]}
        return Verdict(JobPhase.FAILED, rule, failure_message(rule), replicas=failed)

    if spec.success_rules:
        for rule in spec.success_rules:
            if rule_met(rule, outcomes, Outcome.SUCCEEDED):
                return Verdict(JobPhase.SUCCEEDED, rule, success_message(rule))
    else:
        keys = list(_spec_order(spec))
        if all(outcomes.get(key) == Outcome.SUCCEEDED for key in keys):
            rule = all_replicas(spec)
            if not keys:
                return Verdict(JobPhase.SUCCEEDED, rule, "The job is succeeded: it has no replicas")
            if len(keys) <= LISTED_REPLICAS_MAX:
                return Verdict(JobPhase.SUCCEEDED, rule, success_message(rule))
            return Verdict(JobPhase.SUCCEEDED, rule, f"The job is succeeded: all {len(keys)} replicas succeeded")
    return None


def _spec_order(spec: GenericJobSpec):
    for replica_spec in spec.replica_specs:
        for rank in range(replica_spec.replicas):
            yield replica_spec.type, rank
