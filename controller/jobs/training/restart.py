"""Restart policies by replica type, against one restart budget for the whole job
(`runPolicy.backoffLimit`): the engine's `RestartRule` (controller/jobs/kind.py) of a training kind.

ExitCode replaces a failed replica only when its training container (named by the kind) exited with a
retryable code, or has none (the pod failed without it exiting: evicted, node lost)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from enum import StrEnum

# Killed by SIGINT, SIGKILL or SIGTERM, and 138, reserved for "restart me".
RETRYABLE_EXIT_CODES = frozenset({130, 137, 143, 138})


class RestartPolicyType(StrEnum):
    NEVER = "Never"
    ON_FAILURE = "OnFailure"
    ALWAYS = "Always"
    EXIT_CODE = "ExitCode"


class ReplicaRestart:
    """The restart rule of one replica type: its policy, and the job's one restart budget shared by
    every replica; `container` the training container whose exit code ExitCode judges."""

    def __init__(self, policy: RestartPolicyType, backoff_limit: int | None, container: str,
                 retryable_codes: Collection[int] = RETRYABLE_EXIT_CODES) -> None:
        self.policy = policy
        self.limit = backoff_limit
        self.container = container
        self.retryable_codes = retryable_codes

    def can_restart(self, restart_count: int, job_restarts: int = 0) -> bool:
        return self.limit is None or job_restarts < self.limit

    def replaces(self, phase: str, restart_count: int, containers: Sequence[dict] = (), job_restarts: int = 0) -> bool:
        if not self.can_restart(restart_count, job_restarts):
            return False
        if phase == "Succeeded":
            return self.policy == RestartPolicyType.ALWAYS
        if phase != "Failed":
            return False
        if self.policy == RestartPolicyType.EXIT_CODE:
            return self.retryable(containers)
        return self.policy in (RestartPolicyType.ON_FAILURE, RestartPolicyType.ALWAYS)

    def why_final(self, restart_count: int, containers: Sequence[dict] = (), job_restarts: int = 0) -> tuple[bool, str]:
        if self.policy == RestartPolicyType.NEVER:
            return False, "under restart policy Never"
        if self.policy == RestartPolicyType.EXIT_CODE and not self.retryable(containers):
            return False, "under restart policy ExitCode (its exit code is not retryable)"
        if self.limit is None:  # not reached: without a budget a retryable failure is always replaced
            return False, f"under restart policy {self.policy}"
        if self.limit == 0:  # no budget ran out: none was granted
            return False, f"under restart policy {self.policy} with runPolicy.backoffLimit 0 (no restarts)"
        return True, f"after {job_restarts} of {self.limit} restarts of the job (runPolicy.backoffLimit)"

    def restart_text(self, restart_count: int, job_restarts: int) -> str:
        """The Restarting Event's count: the job's restarts (this one included) against the job's budget."""
        limit = "" if self.limit is None else f" of {self.limit}"
        return f"restart {job_restarts}{limit} of the job"

    @property
    def counts_lost_pods(self) -> bool:
        """A pod lost while running is a failure without an exit code (retryable under ExitCode), counted
        against the budget; under Never it is recreated uncounted, as the engine's default rule does."""
        return self.policy != RestartPolicyType.NEVER

    def retryable(self, containers: Sequence[dict]) -> bool:
        """The training container exited with a retryable code, or has none."""
        code = next((c.get("exitCode") for c in containers
                     if c.get("name") == self.container and c.get("state") == "terminated"), None)
        return code is None or code in self.retryable_codes
