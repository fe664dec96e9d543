"""What the spec says, written out for the model (shared/spec/README.md), from the job's JSON and nothing of
the controller's code: which replicas a job has, which replica is the master, whether a finished pod is
replaced (and whether that uses a budget), and the verdict of the success and failure rules.

The kinds differ in these ways only: GenericJob's restart limit is per replica and its rules are the user's
(default: all replicas succeed / any fails for good); TensorFlowTrainingJob, PyTorchTrainingJob and MPIJob share one
budget (`runPolicy.backoffLimit`, PyTorch's and MPIJob's 3 by default) and succeed with their master (MPIJob's: the
launcher); the first two have ExitCode. MPIJob (the spec's "MPIJob") has a launcher and workers rather than
replicaSpecs (read as replicaSpecs here: `replica_specs`), OnFailure by default, a lost pod under Never final (any
failure is), the start order (the launcher made once every worker is Running and Ready, unless AtStartup), the group
restart (a worker restarted takes the launcher with it; the group's restarts in one reconcile count one, judged
against the budget as it was before the group drew on it) and the hostfile its ConfigMap keeps current."""

from __future__ import annotations

from dataclasses import dataclass

from tests.controller.model.world import JOB, NS

GENERIC, TENSORFLOW, PYTORCH, MPI = "GenericJob", "TensorFlowTrainingJob", "PyTorchTrainingJob", "MPIJob"
MODELLED = (GENERIC, TENSORFLOW, PYTORCH, MPI)  # the kinds this module has the rules of
# Registered kinds the machine does not draw yet, each with why (none today).
NOT_YET_MODELLED: dict[str, str] = {}
LAUNCHER, WORKER = "launcher", "worker"
WAITING_FOR_READY = "WaitingForReady"  # the spec's waiting reason of a replica the start order holds back
FINISHED = ("Succeeded", "Failed")
RETRYABLE = (130, 137, 138, 143)  # SIGINT, SIGKILL, SIGTERM, and 138 "restart me"
CONTAINER = {GENERIC: "main", TENSORFLOW: "tensorflow", PYTORCH: "pytorch", MPI: "mpi"}
POLICY = "policy"  # a failure for good because the policy grants no restart (ReplicaFailed)
BUDGET = "budget"  # ... because the restarts it granted are used up (BackoffLimitExceeded)
EITHER = "either"  # a job-wide backoffLimit of 0: a budget that grants nothing; the spec allows either reason

Key = tuple[str, int]  # (replica type, rank)


@dataclass(frozen=True)
class Judgement:
    replaced: bool
    why: str = POLICY  # for a failure for good: POLICY or BUDGET


def replica_specs(spec: dict) -> list[dict]:
    """The replica types of a spec, each `{type, replicas, restartPolicy, template}`: an MPIJob's launcher (always
    one) and workers read as the other kinds' replicaSpecs, in that order, with MPIJob's default OnFailure."""
    if "replicaSpecs" in spec:
        return spec["replicaSpecs"]
    launcher, worker = spec["launcher"], spec["worker"]
    return [{"type": LAUNCHER, "replicas": 1, "restartPolicy": launcher.get("restartPolicy") or "OnFailure",
             "template": launcher["template"]},
            {"type": WORKER, "replicas": worker.get("replicas", 1),
             "restartPolicy": worker.get("restartPolicy") or "OnFailure", "template": worker["template"]}]


def scale(spec: dict, index: int, replicas: int) -> bool:
    """Set the replicas of the spec's `index`-th type (modulo their number) in place; False when that type has no
    count to edit (an MPIJob's launcher)."""
    if "replicaSpecs" in spec:
        spec["replicaSpecs"][index % len(spec["replicaSpecs"])]["replicas"] = replicas
        return True
    if index % 2 == 0:
        return False
    spec["worker"]["replicas"] = replicas
    return True


def replicas(spec: dict) -> list[Key]:
    """Every replica of the spec, in spec order and rank order (the order budgets are drawn in)."""
    return [(r["type"], rank) for r in replica_specs(spec) for rank in range(r.get("replicas", 1))]


def counts(spec: dict) -> dict[str, int]:
    return {r["type"]: r.get("replicas", 1) for r in replica_specs(spec)}


def start_after(kind: str, spec: dict) -> dict[str, tuple[str, ...]]:
    """The start order: a type's pods are made only once every replica of the types named is Running and Ready."""
    if kind == MPI and spec.get("launcherCreationPolicy", "WaitForWorkersReady") == "WaitForWorkersReady":
        return {LAUNCHER: (WORKER,)}
    return {}


def restart_together(kind: str, spec: dict) -> dict[str, tuple[str, ...]]:
    """The group restart: a restart of a type takes the live pods of the types named (uncounted); the restarts of
    the group's types seen together count one."""
    return {WORKER: (LAUNCHER,), LAUNCHER: ()} if kind == MPI else {}


def group(kind: str, spec: dict) -> set[str]:
    return {t for first, taken in restart_together(kind, spec).items() for t in (first, *taken)}


def hostfile_replicas(kind: str, spec: dict) -> list[Key]:
    """The replicas the job's hostfile names, in its order: the launcher first when it runs as a worker, then every
    worker (none: the kind keeps no hostfile)."""
    if kind != MPI:
        return []
    return [(LAUNCHER, 0)] * bool(spec.get("runLauncherAsWorker")) + [k for k in replicas(spec) if k[0] == WORKER]


def hostfile_hosts(kind: str, spec: dict) -> list[tuple[str, int]] | None:
    """The hosts (fully qualified) and slots the job's hostfile names, in rank order; None: the kind keeps none."""
    if kind != MPI:
        return None
    return [(f"{JOB}-{t}-{rank}.{JOB}.{NS}.svc", spec.get("slotsPerWorker", 1))
            for t, rank in hostfile_replicas(kind, spec)]


def run_mode(spec: dict, mode: str) -> bool:
    entry = (spec.get("runMode") or {}).get(mode) or {}
    return bool(entry.get("enabled") or entry.get("enable"))


def master(kind: str, spec: dict) -> Key | None:
    """The replica whose success is the job's: TF's chief, else worker 0; PyTorch's master, else global rank 0."""
    have = counts(spec)
    if kind == TENSORFLOW:
        return ("chief", 0) if have.get("chief") else ("worker", 0) if have.get("worker") else None
    if kind == MPI:
        return LAUNCHER, 0
    if kind == PYTORCH:
        if have.get("master"):
            return "master", 0
        return next(((t, 0) for t, n in have.items() if n), None)
    return None


def backoff_limit(kind: str, spec: dict) -> int | None:
    limit = (spec.get("runPolicy") or {}).get("backoffLimit")
    return 3 if limit is None and kind in (PYTORCH, MPI) else limit


def cleanup_policy(kind: str, spec: dict) -> str:
    if kind == GENERIC:
        return spec.get("cleanUpPolicy") or "None"
    return (spec.get("runPolicy") or {}).get("cleanUpPolicy") or "Unfinished"


def deadline(kind: str, spec: dict) -> int | None:
    return None if kind == GENERIC else (spec.get("runPolicy") or {}).get("activeDeadlineSeconds")


def judge(kind: str, spec: dict, replica_type: str, phase: str, code: int | None, restarts: int,
          job_restarts: int) -> Judgement:
    """A pod of the replica ended with `phase` (a lost pod: Failed without a code): is it replaced (a restart to
    count), and if not, why. `restarts`: the replica's restarts so far; `job_restarts`: the job's."""
    entry = next(r for r in replica_specs(spec) if r["type"] == replica_type)
    if kind == GENERIC:
        policy = (entry.get("restartPolicy") or {}).get("policy", "OnFailure")
        limit = (entry.get("restartPolicy") or {}).get("limit", 0)
        wants = policy == "Always" or (phase == "Failed" and policy == "OnFailure")
        if not wants or limit == 0:
            return Judgement(False)
        return Judgement(True) if restarts < limit else Judgement(False, BUDGET)
    policy = entry.get("restartPolicy") or "Never"
    limit = backoff_limit(kind, spec)
    if phase == "Succeeded":
        wants = policy == "Always"
    else:
        wants = policy in ("OnFailure", "Always") or (policy == "ExitCode" and (code is None or code in RETRYABLE))
    if not wants:
        return Judgement(False)
    if limit == 0:
        return Judgement(False, EITHER)
    return Judgement(True) if limit is None or job_restarts < limit else Judgement(False, BUDGET)


def counts_lost(kind: str, spec: dict, replica_type: str) -> bool:
    """A pod lost while running (deleted by someone, its node gone) is a restart to count, except under Never
    (recreated without counting: the job cannot finish without the replica). An MPIJob's is judged as any failure:
    under Never, final."""
    if kind == MPI:
        return True
    entry = next(r for r in replica_specs(spec) if r["type"] == replica_type)
    policy = (entry.get("restartPolicy") or {}).get("policy", "OnFailure") if kind == GENERIC \
        else entry.get("restartPolicy") or "Never"
    return policy != "Never"


def verdict(kind: str, spec: dict, outcomes: dict[Key, str], removed_failed: list[Key]) -> str | None:
    """Succeeded or Failed by the rules, given each replica's outcome for good; failure wins a tie.
    `removed_failed`: ranks being scaled away whose failure for good was seen with the scale-down (judged by the
    rules as they were)."""
    present = replicas(spec)
    failed = [k for k in present if outcomes.get(k) == "Failed"]
    if kind == GENERIC:
        failure_rules = spec.get("failureRules") or []
        if failure_rules:
            if any(_met(rule, outcomes, "Failed") for rule in failure_rules):
                return "Failed"
        elif failed or removed_failed:
            return "Failed"
        success_rules = spec.get("successRules") or []
        if success_rules:
            return "Succeeded" if any(_met(rule, outcomes, "Succeeded") for rule in success_rules) else None
        return "Succeeded" if present and all(outcomes.get(k) == "Succeeded" for k in present) else None
    if failed or removed_failed:
        return "Failed"
    boss = master(kind, spec)
    return "Succeeded" if boss is not None and outcomes.get(boss) == "Succeeded" else None


def _met(rule: dict, outcomes: dict[Key, str], wanted: str) -> bool:
    keys = [(t, int(rank)) for t, ranks in rule.items() for rank in ranks]
    return bool(keys) and all(outcomes.get(k) == wanted for k in keys)


def rule_keys(spec: dict) -> set[Key]:
    return {(t, int(rank)) for rules in (spec.get("successRules") or [], spec.get("failureRules") or [])
            for rule in rules for t, ranks in rule.items() for rank in ranks}


def valid(kind: str, spec: dict) -> bool:
    """Would admission take this spec (the spec's "Invalid input is refused at admission")? Total replicas >= 1,
    rules name only ranks the spec has, and the master stays (TF: the chief or worker 0; PyTorch: one master)."""
    have = counts(spec)
    if sum(have.values()) < 1:
        return False
    if any(have.get(t, 0) <= rank for t, rank in rule_keys(spec)):
        return False
    if kind == PYTORCH and "master" in have and have["master"] != 1:
        return False
    if kind == PYTORCH and "master" not in have and not have.get(replica_specs(spec)[0]["type"]):
        return False  # global rank 0 would move to another type
    if kind == TENSORFLOW and "chief" in have and have["chief"] != 1:
        return False
    if kind == TENSORFLOW and "chief" not in have and not have.get("worker"):
        return False
    if kind == MPI and have.get(WORKER, 0) < 1:
        return False
    return True
