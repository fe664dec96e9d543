"""GenericJob's model contract (controller/jobs/testing.py): a restart limit per replica (`restartPolicy.policy` and
`.limit`), the user's success and failure rules (default: every replica succeeds / any fails for good),
`cleanUpPolicy` at the spec's top (None by default) and no deadline; admission refuses a rule naming a rank the job
does not have. Its chaos jobs (`chaos_job`) play every mode: run, paused and resumed, in debug mode. Reads nothing of
the controller but the contracts."""

from __future__ import annotations

import random
from typing import Any

from controller.jobs.testing import (
    BUDGET,
    DEBUG,
    FAILED,
    MODES,
    NORMAL,
    PAUSE,
    RUNNING,
    SUCCEEDED,
    ApiExercise,
    ChaosJob,
    ChaosReplica,
    Judgement,
    Key,
    ModelContract,
    chaos_script,
    simulate,
)


class GenericJobContract(ModelContract):
    kind = "GenericJob"
    container = "main"
    chaos_modes = MODES

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

    def chaos_job(self, rng: random.Random, name: str, mode: str) -> ChaosJob:
        """1-4 replicas of one or two types (a master maybe), each type's policy and limit drawn (Never under pause),
        Services, the T9k scheduler and success and failure rules maybe; each attempt's script drawn, redrawn until
        exactly one verdict is reachable (else every replica succeeds). Paused jobs: every attempt alike (the pause
        retires pods uncounted); debug jobs: pods that run until deleted."""
        types = {"worker": rng.randint(1, 3)}
        if rng.random() < 0.4:
            types = {"master": 1, **types}
        cleanup = rng.choice(["None", "Unfinished", "All"])
        spec: dict = {"cleanUpPolicy": cleanup}
        if rng.random() < 0.3:
            spec["service"] = {"ports": [{"name": "http", "port": 8080}]}
        if rng.random() < 0.3:
            spec["scheduler"] = {"t9kScheduler": {"queue": "default", "priority": rng.randint(0, 100)}}
        policies = {t: ("Never", 0) if mode == PAUSE else
                    (rng.choice(["Never", "OnFailure", "OnFailure", "Always"]), rng.randint(0, 3)) for t in types}
        for _ in range(50):
            replicas, scripts = self._chaos_replicas(rng, name, mode, types, policies)
            success_rules: list[dict] = []
            failure_rules: list[dict] = []
            if mode == NORMAL and rng.random() < 0.45:
                pick = rng.choice(replicas)
                success_rules = [{pick.type: [pick.rank]}]
                if rng.random() < 0.5:
                    other = rng.choice(replicas)
                    failure_rules = [{other.type: [str(other.rank)]}]
            succeeded, failed = verdicts(replicas, success_rules, failure_rules)
            if mode == DEBUG or succeeded != failed:
                break
        else:  # no draw gave exactly one verdict: make every replica succeed
            success_rules = failure_rules = []
            for r in replicas:
                r.attempts, r.outcome, r.restarts = [True], SUCCEEDED, (r.limit if r.policy == "Always" else 0)
                scripts[r.name] = [chaos_script(rng, True)]
            succeeded = True
        replica_specs = [{"type": t, "replicas": count, "restartPolicy": {"policy": policies[t][0],
                                                                          "limit": policies[t][1]},
                          "template": {"spec": {"containers": [{"name": self.container, "image": "busybox:1.36",
                                                                "command": ["sh", "-c", "echo $(type) $(rank)"]}]}}}
                         for t, count in types.items()]
        if success_rules:
            spec["successRules"] = success_rules
        if failure_rules:
            spec["failureRules"] = failure_rules
        if mode == DEBUG:
            spec["runMode"] = {"debug": {"enabled": True}}
        expected = RUNNING if mode == DEBUG else SUCCEEDED if succeeded else FAILED
        return ChaosJob(self.job_named(name, {"replicaSpecs": replica_specs, **spec}), replicas, scripts, expected,
                        cleanup, mode, policies)

    @staticmethod
    def _chaos_replicas(rng: random.Random, name: str, mode: str, types: dict[str, int],
                        policies: dict[str, tuple[str, int]]) -> tuple[list[ChaosReplica], dict[str, dict | list]]:
        replicas, scripts = [], {}
        for t, count in types.items():
            policy, limit = policies[t]
            for rank in range(count):
                pod = f"{name}-{t}-{rank}"
                script: dict | list
                if mode == DEBUG:
                    attempts, script = [True], {}  # runs until deleted
                elif mode == PAUSE:
                    ok = rng.random() < 0.85
                    attempts, script = [ok], chaos_script(rng, ok)  # every attempt alike: pause and resume are moot
                else:
                    attempts = [rng.random() < 0.6 for _ in range(limit + 1)]
                    script = [chaos_script(rng, ok) for ok in attempts]
                replica = ChaosReplica(t, rank, pod, policy, limit, attempts)
                replica.outcome, replica.restarts = simulate(policy, limit, replica.succeeds)
                replicas.append(replica)
                scripts[pod] = script
        return replicas, scripts


def verdicts(replicas: list[ChaosReplica], success_rules: list[dict], failure_rules: list[dict]) -> tuple[bool, bool]:
    """(some success rule is met, some failure rule is met) once every replica has its outcome (by default: every
    replica succeeded / any failed): a chaos job with both could end either way, as its pods happen to end."""
    outcome = {(r.type, r.rank): r.outcome for r in replicas}

    def met(rule: dict, wanted: str) -> bool:
        return all(outcome.get((t, int(k))) == wanted for t, ranks in rule.items() for k in ranks)

    failed = any(met(r, FAILED) for r in failure_rules) if failure_rules else FAILED in outcome.values()
    succeeded = (any(met(r, SUCCEEDED) for r in success_rules) if success_rules
                 else all(o == SUCCEEDED for o in outcome.values()))
    return succeeded, failed


def _met(rule: dict, outcomes: dict[Key, str], wanted: str) -> bool:
    keys = [(t, int(rank)) for t, ranks in rule.items() for rank in ranks]
    return bool(keys) and all(outcomes.get(k) == wanted for k in keys)


def rule_keys(spec: dict) -> set[Key]:
    return {(t, int(rank)) for rules in (spec.get("successRules") or [], spec.get("failureRules") or [])
            for rule in rules for t, ranks in rule.items() for rank in ranks}


MODEL = GenericJobContract()
