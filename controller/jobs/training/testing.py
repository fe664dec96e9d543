"""The training kinds' model contract (controller/jobs/testing.py): one restart budget for the whole job
(`runPolicy.backoffLimit`), restart policies by type (Never, OnFailure, Always, ExitCode: the training container's
130, 137, 138 and 143, or none, are retried), success with the master, failure of any replica for good, the deadline
and clean-up in `runPolicy`. Each training kind's own (controller/kinds/<kind>/testing.py) says its master, its
defaults and what admission refuses, and the replica types of its chaos jobs (`chaos_types`). Reads nothing of the
controller."""

from __future__ import annotations

import random
from typing import Any

from controller.jobs.testing import (
    BUDGET,
    EITHER,
    FAILED,
    SUCCEEDED,
    ChaosJob,
    ChaosReplica,
    Judgement,
    Key,
    ModelContract,
    chaos_script,
    simulate,
)

RETRYABLE = (130, 137, 138, 143)  # SIGINT, SIGKILL, SIGTERM, and 138 "restart me"
POLICIES = ["Never", "OnFailure", "Always", "ExitCode"]
DEADLINE = 60  # activeDeadlineSeconds of the jobs drawn with one
UNLIMITED = 99  # a chaos job's backoffLimit, far above the restarts its scripts take


class TrainingContract(ModelContract):
    default_backoff_limit: int | None = None  # runPolicy.backoffLimit when unset (None: no limit)
    default_policy = "Never"

    def master(self, spec: dict) -> Key | None:
        """The replica whose success is the job's."""
        return None

    def backoff_limit(self, spec: dict) -> int | None:
        limit = (spec.get("runPolicy") or {}).get("backoffLimit")
        return self.default_backoff_limit if limit is None else limit

    def policy(self, spec: dict, replica_type: str) -> str:
        entry = next(r for r in self.replica_specs(spec) if r["type"] == replica_type)
        return entry.get("restartPolicy") or self.default_policy

    def judge(self, spec: dict, replica_type: str, phase: str, code: int | None, restarts: int,
              job_restarts: int) -> Judgement:
        policy, limit = self.policy(spec, replica_type), self.backoff_limit(spec)
        if phase == "Succeeded":
            wants = policy == "Always"
        else:
            wants = policy in ("OnFailure", "Always") or (policy == "ExitCode" and (code is None or code in RETRYABLE))
        if not wants:
            return Judgement(False)
        if limit == 0:
            return Judgement(False, EITHER)
        return Judgement(True) if limit is None or job_restarts < limit else Judgement(False, BUDGET)

    def counts_lost(self, spec: dict, replica_type: str) -> bool:
        """Under Never a lost pod is recreated without counting: the job cannot finish without the replica."""
        return self.policy(spec, replica_type) != "Never"

    def verdict(self, spec: dict, outcomes: dict[Key, str], removed_failed: list[Key]) -> str | None:
        if removed_failed or any(outcomes.get(k) == "Failed" for k in self.replicas(spec)):
            return "Failed"
        boss = self.master(spec)
        return "Succeeded" if boss is not None and outcomes.get(boss) == "Succeeded" else None

    def run_policy(self, draw: Any, cleanup: str) -> dict:
        from hypothesis import strategies as st
        run_policy: dict = {"cleanUpPolicy": cleanup}
        if (limit := draw(st.sampled_from([None, 0, 1, 2]))) is not None:
            run_policy["backoffLimit"] = limit
        if (deadline := draw(st.sampled_from([None, DEADLINE]))) is not None:
            run_policy["activeDeadlineSeconds"] = deadline
        return run_policy

    def typed_job(self, types: list[tuple[str, int, object]], extra: dict) -> dict:
        """A job of replicaSpecs: (type, replicas, restartPolicy) each, the workload's template."""
        specs = [{"type": t, "replicas": n, "restartPolicy": policy, "template": self.template()}
                 for t, n, policy in types]
        return self.job({"replicaSpecs": specs, **extra})

    def chaos_types(self, rng: random.Random) -> dict[str, int]:
        """The replicas of each type of a chaos job (its master's type among them maybe)."""
        raise NotImplementedError

    def chaos_job(self, rng: random.Random, name: str, mode: str) -> ChaosJob:
        """Replicas of `chaos_types`, each type Never or OnFailure, no backoff limit in reach (none, or UNLIMITED):
        the master's end is the job's, and only the master may fail for good (Never and a failing script); every other
        replica ends in success (restarted under OnFailure until it does), since a failure of any other for good would
        race the master's success."""
        types = self.chaos_types(rng)
        master = self.master({"replicaSpecs": [{"type": t, "replicas": n} for t, n in types.items()]})
        cleanup = rng.choice(["None", "Unfinished", "All"])
        policies = {t: ("OnFailure", UNLIMITED) if rng.random() < 0.6 else ("Never", 0) for t in types}
        replicas = []
        scripts: dict[str, dict | list] = {}
        for t, count in types.items():
            policy, limit = policies[t]
            for rank in range(count):
                if policy == "OnFailure":
                    attempts = [*[False] * rng.randint(0, 2), True]  # fails a few times, then succeeds
                else:
                    attempts = [rng.random() < 0.6 if (t, rank) == master else True]
                replica = ChaosReplica(t, rank, f"{name}-{t}-{rank}", policy, limit, attempts)
                replica.outcome, replica.restarts = simulate(policy, limit, replica.succeeds)
                replicas.append(replica)
                scripts[replica.name] = [chaos_script(rng, ok) for ok in attempts]
        succeeded = next(r for r in replicas if (r.type, r.rank) == master).outcome == SUCCEEDED
        run_policy: dict = {"cleanUpPolicy": cleanup}
        if self.default_backoff_limit is not None:  # a default limit in reach of the restarts drawn: lifted
            run_policy["backoffLimit"] = UNLIMITED
        spec: dict = {"replicaSpecs": [{"type": t, "replicas": n, "restartPolicy": policies[t][0],
                                        "template": self.template()} for t, n in types.items()],
                      "runPolicy": run_policy}
        if rng.random() < 0.3:
            spec["scheduler"] = {"t9kScheduler": {"queue": "default", "priority": rng.randint(0, 100)}}
        return ChaosJob(self.job_named(name, spec), replicas, scripts, SUCCEEDED if succeeded else FAILED, cleanup,
                        policies=policies)
