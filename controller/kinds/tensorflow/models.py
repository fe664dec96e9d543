"""Pydantic models of the TensorFlowTrainingJob API (batch.tensorstack.dev/v1beta1, spec 003).

docs/SPEC-DECISIONS.md ("TensorFlowTrainingJob") settles what 003 leaves open: replica types
chief, worker, ps and evaluator; a string restartPolicy per type (Never by default, or OnFailure,
Always, ExitCode); `runPolicy` with the deadline, the job-wide restart budget and the clean-up
policy (Unfinished by default; 003's lowercase spellings accepted); `runMode` as GenericJob's, with
003's `enable` accepted beside `enabled`. The engine reads the shared fields (controller/jobs/kind.py,
ParsedJob) through `spec.replica_specs`, `spec.run_mode`, `spec.clean_up_policy` and `spec.scheduler`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, field_validator

from controller.jobs.api import MAX_REPLICAS, CleanUpPolicy, JobObject, Model, RunMode, SchedulePolicy
from controller.jobs.kind import KindApi
from controller.kinds.tensorflow.tensorboard_spec import TensorBoardSpec

GROUP = "batch.tensorstack.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TensorFlowTrainingJob"
PLURAL = "tensorflowtrainingjobs"
SHORT_NAME = "tftj"  # not tfjob: that is Kubeflow's TFJob
API = KindApi(GROUP, VERSION, KIND, PLURAL, label_prefix="tensorflowtrainingjob.batch.tensorstack.dev")

# Exit codes of the `tensorflow` container that ExitCode restarts: killed by SIGINT, SIGKILL or SIGTERM,
# and 138, reserved for "restart me". A pod that failed without an exit code (evicted, node lost) too.
RETRYABLE_EXIT_CODES = frozenset({130, 137, 143, 138})


class ReplicaType(StrEnum):
    CHIEF = "chief"
    WORKER = "worker"
    PS = "ps"
    EVALUATOR = "evaluator"


class RestartPolicyType(StrEnum):
    NEVER = "Never"
    ON_FAILURE = "OnFailure"
    ALWAYS = "Always"
    EXIT_CODE = "ExitCode"


class ReplicaSpec(Model):
    type: ReplicaType = Field(description='The type of the replica: "chief", "worker", "ps" or "evaluator".')
    replicas: Annotated[int, Field(ge=0, le=MAX_REPLICAS)] = Field(
        1, description="The desired number of replicas created from the template.")
    template: dict[str, Any] = Field(description="The pod of each replica; its restartPolicy is the controller's.")
    restart_policy: RestartPolicyType = Field(RestartPolicyType.NEVER, description=(
        "When a finished replica is replaced: Never, OnFailure, Always, or ExitCode (retryable exit codes only)."))


class RunPolicy(Model):
    active_deadline_seconds: Annotated[int, Field(gt=0)] | None = Field(None, description=(
        "Seconds after the job's startTime after which it fails (DeadlineExceeded)."))
    backoff_limit: Annotated[int, Field(ge=0)] | None = Field(None, description=(
        "Restarts of all the job's replicas together before a failing replica fails the job; unset: no limit."))
    clean_up_policy: CleanUpPolicy = Field(CleanUpPolicy.UNFINISHED, description=(
        "Which replicas to delete once the job has finished: All, Unfinished (default) or None."))

    @field_validator("clean_up_policy", mode="before")
    @classmethod
    def _capitalised(cls, value: Any) -> Any:
        # 003 writes all / unfinished / none.
        return value.capitalize() if isinstance(value, str) and value.lower() in ("all", "unfinished", "none") \
            else value


def _enable_is_enabled(value: Any) -> Any:
    """003 spells a mode's switch `enable`; `enabled` wins when both are given."""
    if isinstance(value, dict):
        for mode in ("debug", "pause"):
            entry = value.get(mode)
            if isinstance(entry, dict) and "enable" in entry:
                entry = dict(entry)
                enable = entry.pop("enable")
                entry.setdefault("enabled", enable)
                value = {**value, mode: entry}
    return value


class TensorFlowTrainingJobSpec(Model):
    replica_specs: Annotated[list[ReplicaSpec], Field(min_length=1)] = Field(
        description="The replicas of the job, by type.")
    tensorboard_spec: TensorBoardSpec | None = Field(None, description=(
        "The TensorBoard showing the training logs: the fields of a tensorstack.dev/v1beta1 TensorBoard's spec, "
        "copied into it as given."))
    run_policy: RunPolicy = Field(default_factory=RunPolicy, description="Deadline, restart budget and clean-up.")
    scheduler: SchedulePolicy | None = Field(None, description="The scheduler that dispatches the pods.")
    run_mode: RunMode = Field(default_factory=RunMode, description="Debug or pause the job.")

    @field_validator("run_mode", mode="before")
    @classmethod
    def _enable(cls, value: Any) -> Any:
        return _enable_is_enabled(value)

    @property
    def clean_up_policy(self) -> CleanUpPolicy:
        return self.run_policy.clean_up_policy

    def replica(self, replica_type: str) -> ReplicaSpec | None:
        return next((r for r in self.replica_specs if r.type == replica_type), None)

    def master(self) -> tuple[str, int] | None:
        """The replica whose success is the job's: the chief, else worker 0."""
        if self.replica(ReplicaType.CHIEF) is not None and self.replica(ReplicaType.CHIEF).replicas > 0:
            return str(ReplicaType.CHIEF), 0
        worker = self.replica(ReplicaType.WORKER)
        return (str(ReplicaType.WORKER), 0) if worker is not None and worker.replicas > 0 else None


class TensorFlowTrainingJob(JobObject):
    """The parts of a TensorFlowTrainingJob object the controller reads, parsed once per generation."""

    spec: TensorFlowTrainingJobSpec


class ReplicaRestart:
    """The engine's RestartRule (controller/jobs/kind.py) for one replica type: its policy, and the
    job's one restart budget (runPolicy.backoffLimit) shared by every replica."""

    def __init__(self, policy: RestartPolicyType, backoff_limit: int | None) -> None:
        self.policy = policy
        self.limit = backoff_limit

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
            return retryable(containers)
        return self.policy in (RestartPolicyType.ON_FAILURE, RestartPolicyType.ALWAYS)

    def why_final(self, restart_count: int, containers: Sequence[dict] = (), job_restarts: int = 0) -> tuple[bool, str]:
        if self.policy == RestartPolicyType.NEVER:
            return False, "under restart policy Never"
        if self.policy == RestartPolicyType.EXIT_CODE and not retryable(containers):
            return False, "under restart policy ExitCode (its exit code is not retryable)"
        if self.limit is None:  # not reached: without a budget a retryable failure is always replaced
            return False, f"under restart policy {self.policy}"
        return True, f"after {job_restarts} of {self.limit} restarts of the job (runPolicy.backoffLimit)"

    @property
    def counts_lost_pods(self) -> bool:
        """A pod lost while running is a failure without an exit code (retryable under ExitCode), counted
        against the budget; under Never it is recreated uncounted, as GenericJob does."""
        return self.policy != RestartPolicyType.NEVER


def retryable(containers: Sequence[dict]) -> bool:
    """ExitCode: the `tensorflow` container exited with a retryable code, or has none (the pod failed
    without it exiting: evicted, node lost)."""
    code = next((c.get("exitCode") for c in containers
                 if c.get("name") == "tensorflow" and c.get("state") == "terminated"), None)
    return code is None or code in RETRYABLE_EXIT_CODES
