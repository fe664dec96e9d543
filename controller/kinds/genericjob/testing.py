"""GenericJob's model contract (controller/jobs/testing.py): a restart limit per replica (`restartPolicy.policy` and
`.limit`), the user's success and failure rules (default: every replica succeeds / any fails for good),
`cleanUpPolicy` at the spec's top (None by default) and no deadline; admission refuses a rule naming a rank the job
does not have. Reads nothing of the controller but the contracts."""

from __future__ import annotations

from typing import Any

from controller.jobs.testing import BUDGET, ApiExercise, Judgement, Key, ModelContract


class GenericJobContract(ModelContract):
    kind = "GenericJob"
    container = "main"

    def api_exercise(self, template: dict) -> ApiExercise | None:
        return None  # the engine's own APIs: the RBAC test's GenericJobs call every one

    def cleanup_policy(self, spec: dict) -> str:
        return spec.get("cleanUpPolicy") or "None"

    def set_cleanup(self, spec: dict, policy: str) -> None:
        spec.update(cleanUpPolicy=policy)

    def deadline(self, spec: dict) -> int | None:
        return None

    def _policy(self, spec: dict, replica_type: str) -> tuple[str, int]:
        entry = next(r for r in self.replica_specs(spec) if r["type"] == replica_type)
        policy = entry.get("restartPolicy") or {}
        return policy.get("policy", "OnFailure"), policy.get("limit", 0)

    def judge(self, spec: dict, replica_type: str, phase: str, code: int | None, restarts: int,
              job_restarts: int) -> Judgement:
        policy, limit = self._policy(spec, replica_type)
        wants = policy == "Always" or (phase == "Failed" and policy == "OnFailure")
        if not wants or limit == 0:
            return Judgement(False)
        return Judgement(True) if restarts < limit else Judgement(False, BUDGET)

    def counts_lost(self, spec: dict, replica_type: str) -> bool:
        return self._policy(spec, replica_type)[0] != "Never"

    def verdict(self, spec: dict, outcomes: dict[Key, str], removed_failed: list[Key]) -> str | None:
        present = self.replicas(spec)
        failure_rules = spec.get("failureRules") or []
        if failure_rules:
            if any(_met(rule, outcomes, "Failed") for rule in failure_rules):
                return "Failed"
        elif removed_failed or any(outcomes.get(k) == "Failed" for k in present):
            return "Failed"
        success_rules = spec.get("successRules") or []
        if success_rules:
            return "Succeeded" if any(_met(rule, outcomes, "Succeeded") for rule in success_rules) else None
        return "Succeeded" if present and all(outcomes.get(k) == "Succeeded" for k in present) else None

    def valid(self, spec: dict) -> bool:
        have = self.counts(spec)
        return super().valid(spec) and not any(have.get(t, 0) <= rank for t, rank in rule_keys(spec))

    def draw(self, draw: Any, cleanup: str) -> dict:
        from hypothesis import strategies as st
        policy = st.fixed_dictionaries({"policy": st.sampled_from(["Never", "OnFailure", "Always"]),
                                        "limit": st.sampled_from([0, 1, 2])})
        master = draw(st.booleans())
        workers = draw(st.integers(0 if master else 1, 3))
        types = ([("master", 1, draw(policy))] if master else []) + [("worker", workers, draw(policy))]
        extra: dict = {"cleanUpPolicy": cleanup}
        success = [None] + ([[{"worker": [0]}]] if workers else []) + ([[{"master": [0]}]] if master else [])
        failure = [None] + ([[{"worker": [0]}, {"worker": [1]}]] if workers >= 2 else [])
        if chosen := draw(st.sampled_from(success)):
            extra["successRules"] = chosen
        if chosen := draw(st.sampled_from(failure)):
            extra["failureRules"] = chosen
        specs = [{"type": t, "replicas": n, "restartPolicy": p, "template": self.template()} for t, n, p in types]
        return self.job({"replicaSpecs": specs, **extra})


def _met(rule: dict, outcomes: dict[Key, str], wanted: str) -> bool:
    keys = [(t, int(rank)) for t, ranks in rule.items() for rank in ranks]
    return bool(keys) and all(outcomes.get(k) == wanted for k in keys)


def rule_keys(spec: dict) -> set[Key]:
    return {(t, int(rank)) for rules in (spec.get("successRules") or [], spec.get("failureRules") or [])
            for rule in rules for t, ranks in rule.items() for rank in ranks}


MODEL = GenericJobContract()
