"""What the spec says, written out for the model (shared/spec/README.md), from the job's JSON and nothing of the
controller's code: each kind's model contract (`controller/kinds/<kind>/testing.py`'s MODEL, found through the
registry: registry.model_contract), which says which replicas a job has, whether a finished pod is replaced (and
whether that uses a budget), the verdict of the success and failure rules, the start order, the group restart and
the hostfile; and what holds for every kind (run modes, the finished phases). The functions here only ask the
contract of the kind named, so the machine, the oracle and the checks never branch on a kind."""

from __future__ import annotations

import functools

from controller.jobs.testing import BUDGET, EITHER, POLICY, Judgement, Key, ModelContract
from controller.kinds import registry
from tests.controller.model.world import JOB, NS

__all__ = ["BUDGET", "EITHER", "POLICY", "Judgement", "Key"]

FINISHED = ("Succeeded", "Failed")
WAITING_FOR_READY = "WaitingForReady"  # the spec's waiting reason of a replica the start order holds back


@functools.cache
def contract(kind: str) -> ModelContract:
    return registry.model_contract(registry.KINDS[kind])


def container(kind: str) -> str:
    return contract(kind).container


def replica_specs(kind: str, spec: dict) -> list[dict]:
    return contract(kind).replica_specs(spec)


def scale(kind: str, spec: dict, index: int, replicas: int) -> bool:
    return contract(kind).scale(spec, index, replicas)


def replicas(kind: str, spec: dict) -> list[Key]:
    return contract(kind).replicas(spec)


def run_mode(spec: dict, mode: str) -> bool:
    entry = (spec.get("runMode") or {}).get(mode) or {}
    return bool(entry.get("enabled") or entry.get("enable"))


def cleanup_policy(kind: str, spec: dict) -> str:
    return contract(kind).cleanup_policy(spec)


def set_cleanup(kind: str, spec: dict, policy: str) -> None:
    contract(kind).set_cleanup(spec, policy)


def deadline(kind: str, spec: dict) -> int | None:
    return contract(kind).deadline(spec)


def judge(kind: str, spec: dict, replica_type: str, phase: str, code: int | None, restarts: int,
          job_restarts: int) -> Judgement:
    return contract(kind).judge(spec, replica_type, phase, code, restarts, job_restarts)


def counts_lost(kind: str, spec: dict, replica_type: str) -> bool:
    return contract(kind).counts_lost(spec, replica_type)


def verdict(kind: str, spec: dict, outcomes: dict[Key, str], removed_failed: list[Key]) -> str | None:
    return contract(kind).verdict(spec, outcomes, removed_failed)


def valid(kind: str, spec: dict) -> bool:
    """Would admission take this spec (the spec's "Invalid input is refused at admission")?"""
    return contract(kind).valid(spec)


def start_after(kind: str, spec: dict) -> dict[str, tuple[str, ...]]:
    return contract(kind).start_after(spec)


def restart_together(kind: str, spec: dict) -> dict[str, tuple[str, ...]]:
    return contract(kind).restart_together(spec)


def group(kind: str, spec: dict) -> set[str]:
    """The types of the job's restart group."""
    return {t for first, taken in restart_together(kind, spec).items() for t in (first, *taken)}


def hostfile_replicas(kind: str, spec: dict) -> list[Key]:
    return contract(kind).hostfile_replicas(spec)


def hostfile_hosts(kind: str, spec: dict) -> list[tuple[str, int]] | None:
    return contract(kind).hostfile_hosts(spec, JOB, NS)
