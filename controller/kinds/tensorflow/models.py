"""Pydantic models of the TensorFlowTrainingJob API (batch.tensorstack.dev/v1beta1, spec 003).

docs/SPEC-DECISIONS.md ("TensorFlowTrainingJob") settles what 003 leaves open: replica types
chief, worker, ps and evaluator; a string restartPolicy per type (Never by default, or OnFailure,
Always, ExitCode); `runPolicy` with the deadline, the job-wide restart budget and the clean-up
policy (Unfinished by default; 003's lowercase spellings accepted); `runMode` as GenericJob's, with
003's `enable` accepted beside `enabled`. Run policy, restart policies and the `enable` spelling are the
training-job kit's (controller/jobs/training/). The engine reads the shared fields (controller/jobs/kind.py,
ParsedJob) through `spec.replica_specs`, `spec.run_mode`, `spec.clean_up_policy` and `spec.scheduler`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field

from controller.jobs.kind import KindApi
from controller.jobs.schema.api import MAX_REPLICAS, JobObject, Model, RunMode, SchedulePolicy
from controller.jobs.training.restart import RestartPolicyType
from controller.jobs.training.runpolicy import RunPolicy, TrainingSpec
from controller.jobs.training.tensorboard import TensorBoardSpec

GROUP = "batch.tensorstack.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TensorFlowTrainingJob"
PLURAL = "tensorflowtrainingjobs"
SHORT_NAME = "tftj"  # not tfjob: that is Kubeflow's TFJob
API = KindApi(GROUP, VERSION, KIND, PLURAL, label_prefix="tensorflowtrainingjob.batch.tensorstack.dev")


class ReplicaType(StrEnum):
    CHIEF = "chief"
    WORKER = "worker"
    PS = "ps"
    EVALUATOR = "evaluator"


class ReplicaSpec(Model):
    type: ReplicaType = Field(description='The type of the replica: "chief", "worker", "ps" or "evaluator".')
    replicas: Annotated[int, Field(ge=0, le=MAX_REPLICAS)] = Field(
        1, description="The desired number of replicas created from the template.")
    template: dict[str, Any] = Field(description="The pod of each replica; its restartPolicy is the controller's.")
    restart_policy: RestartPolicyType = Field(RestartPolicyType.NEVER, description=(
        "When a finished replica is replaced: Never, OnFailure, Always, or ExitCode (retryable exit codes only)."))


class TensorFlowTrainingJobSpec(TrainingSpec):
    replica_specs: Annotated[list[ReplicaSpec], Field(min_length=1)] = Field(
        description="The replicas of the job, by type.")
    tensorboard_spec: TensorBoardSpec | None = Field(None, description=(
        "The TensorBoard showing the training logs: the fields of a tensorstack.dev/v1beta1 TensorBoard's spec, "
        "copied into it as given."))
    run_policy: RunPolicy = Field(default_factory=RunPolicy, description="Deadline, restart budget and clean-up.")
    scheduler: SchedulePolicy | None = Field(None, description="The scheduler that dispatches the pods.")
    run_mode: RunMode = Field(default_factory=RunMode, description="Debug or pause the job.")

    def replica(self, replica_type: str) -> ReplicaSpec | None:
        return next((r for r in self.replica_specs if r.type == replica_type), None)

    def master(self) -> tuple[str, int] | None:
        """The replica whose success is the job's: the chief, else worker 0."""
        for replica_type in (ReplicaType.CHIEF, ReplicaType.WORKER):
            spec = self.replica(replica_type)
            if spec is not None and spec.replicas > 0:
                return str(replica_type), 0
        return None


class TensorFlowTrainingJob(JobObject):
    """The parts of a TensorFlowTrainingJob object the controller reads, parsed once per generation."""

    spec: TensorFlowTrainingJobSpec
