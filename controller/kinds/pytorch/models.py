"""Pydantic models of the PyTorchTrainingJob API (batch.tensorstack.dev/v1beta1; the spec's section
"PyTorchTrainingJob"): replica specs of any lowercase type (`master` has one replica), torchrun mode
(`torchrunConfig`), elastic mode (`elastic`), run modes, the training kit's `runPolicy` (backoffLimit
defaults to 3 here), TensorBoard and scheduler.

In elastic mode (elastic and torchrun both enabled) the job runs other counts than the ones written
(`spec.counts()`, the kind's `replica_counts`): `expectedReplicas` (default the written total) clamped to
[minReplicas, maxReplicas] and split across the types by `scalingWeight` (the master keeps its one
replica); `min_member` gives the PodGroup `minReplicas`. The parsed `replica_specs` keep what was written.
"""

from __future__ import annotations

import functools
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, field_validator

from controller.jobs.kind import KindApi
from controller.jobs.schema.api import MAX_REPLICAS, JobObject, Model, RunMode, SchedulePolicy
from controller.jobs.training.restart import RestartPolicyType
from controller.jobs.training.runpolicy import RunPolicy, TrainingSpec, enable_read
from controller.jobs.training.tensorboard import TensorBoardSpec

GROUP = "batch.tensorstack.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "PyTorchTrainingJob"
PLURAL = "pytorchtrainingjobs"
SHORT_NAME = "pj"  # T9k's manual: `kubectl get pj`; pytorchjob is Kubeflow's
API = KindApi(GROUP, VERSION, KIND, PLURAL, label_prefix="pytorchtrainingjob.batch.tensorstack.dev")
MASTER = "master"
DEFAULT_BACKOFF_LIMIT = 3  # T9k's PyTorch page; set by the CRD schema too
TYPE_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
TYPE_MAX = 63
PROC_PER_NODE_PATTERN = r"^([0-9]+|gpu|cpu|auto)$"


class RdzvBackend(StrEnum):
    C10D = "c10d"
    ETCD = "etcd"
    ETCD_V2 = "etcd-v2"


class ReplicaSpec(Model):
    type: Annotated[str, Field(pattern=TYPE_PATTERN, max_length=TYPE_MAX)] = Field(description=(
        'The type of the replica, a lowercase DNS label, unique in the job: "master" (one replica, global rank '
        '0), "worker", "node", "ps", ...'))
    replicas: Annotated[int, Field(ge=0, le=MAX_REPLICAS)] = Field(
        1, description="The desired number of replicas created from the template.")
    scaling_weight: Annotated[int, Field(ge=1, le=MAX_REPLICAS)] = Field(1, description=(
        "In elastic mode, this type's share of expectedReplicas, relative to the other types' (largest remainder)."))
    template: dict[str, Any] = Field(description="The pod of each replica; its restartPolicy is the controller's.")
    restart_policy: RestartPolicyType = Field(RestartPolicyType.NEVER, description=(
        "When a finished replica is replaced: Never, OnFailure, Always, or ExitCode (retryable exit codes only)."))


class TorchrunConfig(Model):
    enabled: bool = Field(False, description=(
        "Run the training container's args with torchrun: its command no longer takes effect."))
    max_restarts: Annotated[int, Field(ge=0)] | None = Field(None, description=(
        "torchrun's --max_restarts (restarts of the worker group before the replica fails); omitted when unset."))
    proc_per_node: Annotated[str, Field(pattern=PROC_PER_NODE_PATTERN, max_length=16)] = Field("1", description=(
        'torchrun\'s --nproc_per_node: processes per replica, an integer string, or "gpu" (one per GPU), "cpu" '
        'or "auto".'))
    rdzv_backend: RdzvBackend = Field(RdzvBackend.C10D, description="torchrun's --rdzv_backend: c10d, etcd or etcd-v2.")
    extra_options: Annotated[list[Annotated[str, Field(max_length=1024)]], Field(max_length=64)] = Field(
        default_factory=list, description=(
            "More torchrun flags, before the script; a flag named like one of the controller's (--x=v or --x v, "
            "spelt with _ or -) replaces it."))
    min_nodes: int | None = Field(None, description="Older field, accepted and ignored.")


class ElasticConfig(Model):
    enabled: bool = Field(False, description="Elastic training (torchrun mode only; ignored otherwise).")
    min_replicas: Annotated[int, Field(ge=1, le=MAX_REPLICAS)] | None = Field(None, description=(
        "The fewest replicas the job runs with (torchrun's --nnodes MIN, the PodGroup's minMember); defaults to "
        "maxReplicas. Immutable."))
    max_replicas: Annotated[int, Field(ge=1, le=MAX_REPLICAS)] | None = Field(None, description=(
        "The most replicas the job runs with (torchrun's --nnodes MAX); defaults to minReplicas. Immutable."))
    expected_replicas: Annotated[int, Field(ge=0, le=MAX_REPLICAS)] | None = Field(None, description=(
        "The replicas the job runs now, clamped to [minReplicas, maxReplicas] and split across the types by "
        "scalingWeight; defaults to the sum of replicaSpecs[].replicas. Edit it to scale the job: the highest "
        "ranks go first, the master stays."))


class PyTorchTrainingJobSpec(TrainingSpec):
    replica_specs: Annotated[list[ReplicaSpec], Field(min_length=1)] = Field(
        description="The replicas of the job, by type; global ranks: master-0 first, then list order.")
    torchrun_config: TorchrunConfig = Field(default_factory=TorchrunConfig, description="torchrun mode.")
    elastic: ElasticConfig = Field(default_factory=ElasticConfig, description="Elastic training (torchrun mode).")
    tensorboard_spec: TensorBoardSpec | None = Field(None, description=(
        "The TensorBoard showing the training logs: the fields of a tensorstack.dev/v1beta1 TensorBoard's spec, "
        "copied into it as given."))
    run_policy: RunPolicy = Field(default_factory=lambda: RunPolicy(backoff_limit=DEFAULT_BACKOFF_LIMIT),
                                  description="Deadline, restart budget (backoffLimit, default 3) and clean-up.")
    scheduler: SchedulePolicy | None = Field(None, description="The scheduler that dispatches the pods.")
    run_mode: RunMode = Field(default_factory=RunMode, description="Debug or pause the job.")

    @field_validator("torchrun_config", "elastic", mode="before")
    @classmethod
    def _enable_switch(cls, value: Any) -> Any:
        return enable_read(value)

    @field_validator("run_policy", mode="before")
    @classmethod
    def _backoff_default(cls, value: Any) -> Any:
        if isinstance(value, dict) and "backoffLimit" not in value and "backoff_limit" not in value:
            return {**value, "backoffLimit": DEFAULT_BACKOFF_LIMIT}
        return value

    @property
    def torchrun(self) -> bool:
        return self.torchrun_config.enabled

    @property
    def elastic_active(self) -> bool:
        return self.elastic.enabled and self.torchrun_config.enabled

    @property
    def elastic_ignored(self) -> bool:
        return self.elastic.enabled and not self.torchrun_config.enabled

    @functools.cached_property
    def declared_replicas(self) -> dict[str, int]:
        """The replicas written of each type."""
        return {spec.type: spec.replicas for spec in self.replica_specs}

    @functools.cached_property
    def _counts(self) -> dict[str, int]:
        return split(self.expected_total(), self.replica_specs) if self.elastic_active else self.declared_replicas

    def counts(self) -> dict[str, int]:
        """The replicas the job runs of each type: in elastic mode, expectedReplicas split by weight; else
        those written."""
        return self._counts

    def bounds(self) -> tuple[int, int]:
        """(minReplicas, maxReplicas), a missing bound taking the other's value (both missing: the written total)."""
        low, high = self.elastic.min_replicas, self.elastic.max_replicas
        total = sum(self.declared_replicas.values()) or 1
        low = low if low is not None else high if high is not None else total
        high = high if high is not None else low
        return low, high

    def expected_total(self) -> int:
        low, high = self.bounds()
        expected = self.elastic.expected_replicas
        expected = sum(self.declared_replicas.values()) if expected is None else expected
        return max(low, min(high, expected))

    def min_member(self) -> int | None:
        """The PodGroup's gang in elastic mode: minReplicas (the kind's min_member)."""
        return self.bounds()[0] if self.elastic_active else None

    def replica(self, replica_type: str) -> ReplicaSpec | None:
        return next((r for r in self.replica_specs if r.type == replica_type), None)

    def ordered(self) -> list[ReplicaSpec]:
        """The replica specs in global rank order: master first, then list order."""
        return sorted(self.replica_specs, key=lambda spec: spec.type != MASTER)

    def global_rank(self, replica_type: str, rank: int) -> int:
        offset = 0
        for spec in self.ordered():
            if spec.type == replica_type:
                return offset + rank
            offset += self.counts()[spec.type]
        raise KeyError(replica_type)

    def master(self) -> tuple[str, int] | None:
        """The replica of global rank 0, whose success is the job's."""
        return next(((spec.type, 0) for spec in self.ordered() if self.counts()[spec.type] > 0), None)

    def world_size(self) -> int:
        return sum(self.counts().values())


def split(total: int, specs: list[ReplicaSpec]) -> dict[str, int]:
    """`total` replicas across the types by scalingWeight (largest remainder, ties to the earlier type); a
    `master` type keeps its one replica."""
    counts = {spec.type: 0 for spec in specs}
    others = [spec for spec in specs if spec.type != MASTER]
    if len(others) < len(specs) and total > 0:
        counts[MASTER] = 1
        total -= 1
    if not others:
        return counts
    weight = sum(spec.scaling_weight for spec in others)
    quotas = [(total * spec.scaling_weight / weight, index, spec.type) for index, spec in enumerate(others)]
    for quota, _, replica_type in quotas:
        counts[replica_type] = int(quota)
    left = total - sum(counts[spec.type] for spec in others)
    for _, _, replica_type in sorted(quotas, key=lambda q: (-(q[0] - int(q[0])), q[1]))[:left]:
        counts[replica_type] += 1
    return counts


OWNER_NAME_LABEL = "tensorstack.dev/owner-name"  # T9k's tutorials select a job's pods on it


class PyTorchTrainingJob(JobObject):
    """The parts of a PyTorchTrainingJob object the controller reads, parsed once per generation."""

    spec: PyTorchTrainingJobSpec
