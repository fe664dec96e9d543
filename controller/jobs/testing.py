"""A kind's model contract: its rules written out from the spec (shared/spec/README.md) over the job's JSON, for the
engine's model test (tests/controller/model) to expect what the controller must do. Each kind brings its own from its
folder (`controller/kinds/<kind>/testing.py`, its `MODEL`, found by registry.model_contract), so a kind is one folder,
its test contract included. The same contract writes the kind's part of the chaos run (tests/chaos): the jobs it
submits under faults, the script of each pod attempt, and what each replica and the job come to (`chaos_job`).

A contract reads nothing of the controller: no model, no kind, no decision (a test checks its imports), so that the
model test checks the engine against the spec rather than against itself. Never imported by `run`; Hypothesis (for
`draw`) is a test dependency, imported where it is used.

The defaults are those of a kind with `spec.replicaSpecs` (type, replicas, restartPolicy, template), no master, no
start order, no group restart and no hostfile."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Key = tuple[str, int]  # (replica type, rank)
POLICY = "policy"  # a failure for good because the policy grants no restart (ReplicaFailed)
BUDGET = "budget"  # ... because the restarts it granted are used up (BackoffLimitExceeded)
EITHER = "either"  # a budget of 0: a budget that grants nothing; the spec allows either reason
COMMAND = ["python", "train.py"]  # the workload's command in the jobs drawn (a debug pod's is `sleep inf`)
SUCCEEDED, FAILED, RUNNING = "Succeeded", "Failed", "Running"
NORMAL, PAUSE, DEBUG = "normal", "pause", "debug"  # a chaos job runs, is paused and resumed, or runs in debug mode
MODES = (NORMAL, PAUSE, DEBUG)


@dataclass(frozen=True)
class Judgement:
    replaced: bool
    why: str = POLICY  # for a failure for good: POLICY or BUDGET


Objects = Callable[[list[dict]], bool]  # a test of the objects of one resource in the job's namespace


@dataclass
class ChaosReplica:
    """A replica of a chaos job: the script its pod attempts follow and what that comes to."""

    type: str
    rank: int
    name: str  # its pod's: `<job>-<type>-<rank>`
    policy: str
    limit: int  # the restarts it may take
    attempts: list[bool]  # scripted success of attempt 0, 1, ... (the last repeats)
    outcome: str = ""  # what it comes to for good (RUNNING: it runs until deleted)
    restarts: int = 0  # the restarts it takes to get there

    def succeeds(self, attempt: int) -> bool:
        return self.attempts[min(attempt, len(self.attempts) - 1)]


@dataclass
class ChaosJob:
    """A job the chaos run submits (tests/chaos/jobs.py), its pods' scripts (localcluster's scripted runner, by pod
    name, counting attempts per name: `start_after`, `run_for` (none: until deleted), `exit_code`; a list: one per
    attempt, the last repeating) and what the oracle expects: `expected`, the job's phase for good (RUNNING for a
    debug job), and each replica's outcome and restarts."""

    body: dict
    replicas: list[ChaosReplica]
    scripts: dict[str, dict | list]  # pod name -> script
    expected: str
    cleanup: str
    mode: str = NORMAL
    policies: dict[str, tuple[str, int]] = field(default_factory=dict)  # type -> (policy, limit)


def simulate(policy: str, limit: int, succeeds: Callable[[int], bool]) -> tuple[str, int]:
    """(outcome for good, restarts) of a replica whose attempt i succeeds iff succeeds(i), `limit` restarts allowed:
    Never keeps the first end, OnFailure restarts a failure, Always any end, until the limit."""
    restarts = 0
    while True:
        ok = succeeds(restarts)
        if policy == "Never":
            return (SUCCEEDED if ok else FAILED), 0
        if policy == "OnFailure" and ok:
            return SUCCEEDED, restarts
        if restarts < limit:
            restarts += 1
            continue
        return (SUCCEEDED if ok else FAILED), restarts


def chaos_script(rng: random.Random, ok: bool) -> dict:
    """One pod attempt: starts within 0.15 s, runs 0.15 to 1.2 s, exits 0 (ok) or 1."""
    return {"start_after": round(rng.uniform(0.01, 0.15), 3), "run_for": round(rng.uniform(0.15, 1.2), 3),
            "exit_code": 0 if ok else 1}


@dataclass(frozen=True)
class ApiExercise:
    """A job that makes the controller call every API its kind adds to the engine's (its kind's list, watch and status
    writes, its dependents' create and patch), for the RBAC test (tests/program/test_rbac_exactness.py): the job is
    created; once `made` holds of the objects of its resource (group, plural), `edit` is merged into the job, and
    `followed` must come to hold of the objects of its resource."""

    job: dict
    made: tuple[tuple[str, str], Objects] | None = None
    edit: dict | None = None
    followed: tuple[tuple[str, str], Objects] | None = None


class ModelContract:
    """What the model test needs of a kind (the defaults: a kind of replicaSpecs)."""

    kind: str = ""
    container: str = "main"  # the name of the workload's container in the jobs drawn (its exit code is judged)
    records: str = "replicas"  # the key of a task's replica records in the status (`status.tasks[].<records>`)
    chaos_modes: tuple[str, ...] = (NORMAL,)  # what the chaos run does with the kind's jobs (MODES)

    # --- the job's shape -------------------------------------------------------------------------

    def replica_specs(self, spec: dict) -> list[dict]:
        """The replica types, each `{type, replicas, restartPolicy, template}`, in spec order."""
        return spec["replicaSpecs"]

    def scale(self, spec: dict, index: int, replicas: int) -> bool:
        """Set the replicas of the `index`-th type (modulo their number) in place; False when it has no count."""
        specs = spec["replicaSpecs"]
        specs[index % len(specs)]["replicas"] = replicas
        return True

    def valid(self, spec: dict) -> bool:
        """Would admission take this spec? At least one replica by default."""
        return sum(self.counts(spec).values()) >= 1

    def replicas(self, spec: dict) -> list[Key]:
        """Every replica of the spec, in spec order and rank order (the order budgets are drawn in)."""
        return [(r["type"], rank) for r in self.replica_specs(spec) for rank in range(r.get("replicas", 1))]

    def counts(self, spec: dict) -> dict[str, int]:
        return {r["type"]: r.get("replicas", 1) for r in self.replica_specs(spec)}

    def job(self, spec: dict) -> dict:
        return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": self.kind,
                "metadata": {"name": "job", "namespace": "ns", "uid": "job-uid", "generation": 1}, "spec": spec}

    def template(self) -> dict:
        return {"spec": {"containers": [{"name": self.container, "image": "train:1", "command": list(COMMAND)}]}}

    def draw(self, draw: Any, cleanup: str) -> dict:
        """A job of the kind, drawn with Hypothesis's `draw` (several types, policies, budgets...), its clean-up
        policy `cleanup`."""
        raise NotImplementedError

    def api_exercise(self, template: dict) -> ApiExercise | None:
        """A job of the kind, its pods' `template` given (they run until deleted), that calls the APIs the kind adds;
        None: it adds none (the engine's own are exercised by the RBAC test's own jobs)."""
        return ApiExercise(self.job_named(self.kind.lower(), self.one_replica(copy.deepcopy(template))))

    def one_replica(self, template: dict) -> dict:
        """A spec of one replica of the workload's first type (the template's container named as the kind wants)."""
        for container in template["spec"]["containers"]:
            container["name"] = self.container
        return {"replicaSpecs": [{"type": "worker", "replicas": 1, "template": template}]}

    def job_named(self, name: str, spec: dict) -> dict:
        job = self.job(spec)
        job["metadata"] = {"name": name, "namespace": "default"}
        return job

    def chaos_job(self, rng: random.Random, name: str, mode: str) -> ChaosJob:
        """A job of the kind named `name` for the chaos run in `mode` (one of `chaos_modes`), drawn with `rng`, whose
        outcome its scripts decide whatever order its pods end in: exactly one verdict is reachable."""
        raise NotImplementedError

    # --- the rules -------------------------------------------------------------------------------

    def cleanup_policy(self, spec: dict) -> str:
        return (spec.get("runPolicy") or {}).get("cleanUpPolicy") or "Unfinished"

    def set_cleanup(self, spec: dict, policy: str) -> None:
        spec.setdefault("runPolicy", {}).update(cleanUpPolicy=policy)

    def deadline(self, spec: dict) -> int | None:
        return (spec.get("runPolicy") or {}).get("activeDeadlineSeconds")

    def judge(self, spec: dict, replica_type: str, phase: str, code: int | None, restarts: int,
              job_restarts: int) -> Judgement:
        """A pod of the replica ended with `phase` (a lost pod: Failed without a code): is it replaced (a restart to
        count), and if not, why. `restarts`: the replica's restarts so far; `job_restarts`: the job's."""
        raise NotImplementedError

    def counts_lost(self, spec: dict, replica_type: str) -> bool:
        """Is a pod lost while running (deleted by someone, its node gone) judged as a failure? Else it is recreated
        without counting."""
        return True

    def verdict(self, spec: dict, outcomes: dict[Key, str], removed_failed: list[Key]) -> str | None:
        """Succeeded or Failed by the rules, given each replica's outcome for good; failure wins a tie.
        `removed_failed`: ranks being scaled away whose failure for good was seen with the scale-down."""
        raise NotImplementedError

    # --- replicas that depend on each other, data kept current -------------------------------------

    def start_after(self, spec: dict) -> dict[str, tuple[str, ...]]:
        """The start order: a type's pods are made only once every replica of the types named is Running and Ready."""
        return {}

    def restart_together(self, spec: dict) -> dict[str, tuple[str, ...]]:
        """The group restart: a restart of a type takes the live pods of the types named (uncounted); the restarts
        of the group's types seen together count one, judged against the budget as it was before the group drew."""
        return {}

    def hostfile_replicas(self, spec: dict) -> list[Key]:
        """The replicas a hostfile the job keeps names, in its order (none: it keeps none)."""
        return []

    def hostfile_hosts(self, spec: dict, job: str, namespace: str) -> list[tuple[str, int]] | None:
        """The hosts (fully qualified) and slots of that hostfile; None: the kind keeps none."""
        return None
