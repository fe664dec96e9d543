"""`TrainingKind[T]`: the `JobKind` of a Kubeflow-style training kind, with all it shares with its siblings, so
that a training kind writes only what is its own: its API and model, its replica types' rules (`validate`),
its training container's names and port, and what it tells each replica (`decorate_pod`).

Shared here: parsing (the engine's parser with the kind's model), the checks every training job gets
(names that make pod and Service names, unique types, templates, run-mode types, at least one replica, the
replica types fixed once recorded); restart policies by type with ExitCode judging the training container,
against one restart budget (runPolicy.backoffLimit); the verdict: any replica failed for good fails the job
(failure wins a tie, the first in the kind's rank order named), else the master's success is the job's (a job
without a master succeeds when every replica has); the active deadline (runPolicy.activeDeadlineSeconds); the
TensorBoard (spec.tensorboardSpec, a dependent); a headless Service per replica on the training container's
port.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from apimachinery.resource import Resource
from controller.jobs.kind import NO_STATUS, Dependent, KindBase, Outcomes, ReplicaSpec
from controller.jobs.schema.api import JobPhase, Outcome, Verdict
from controller.jobs.schema.validation import (
    FromObject,
    SpecError,
    duplicate_types,
    fixed_types_errors,
    name_errors,
    no_replicas_errors,
    parse,
    run_mode_errors,
    template_errors,
)
from controller.jobs.training import containers, tensorboard
from controller.jobs.training.restart import ReplicaRestart, RestartPolicyType
from controller.jobs.training.runpolicy import RunPolicy

__all__ = ["TrainingJob", "TrainingKind"]


class TrainingReplica(ReplicaSpec, Protocol):
    @property
    def restart_policy(self) -> RestartPolicyType: ...


class TrainingSpec(tensorboard.BoardSpec, Protocol):
    @property
    def replica_specs(self) -> Sequence[TrainingReplica]: ...
    @property
    def run_policy(self) -> RunPolicy: ...

    def replica(self, replica_type: str) -> TrainingReplica | None: ...

    def master(self) -> tuple[str, int] | None:
        """The replica whose success is the job's; None when no replica is."""


class TrainingJob(tensorboard.WithTensorBoard, FromObject, Protocol):
    """What the kit reads of a parsed training job; its model builds itself from the job object."""

    @property
    def spec(self) -> TrainingSpec: ...


T = TypeVar("T", bound=TrainingJob)


class TrainingKind(KindBase[T]):
    model: type[T]  # the kind's parsed model (a JobObject: `from_object`)
    container_names: tuple[str, ...]  # the training container: the first container of these names
    any_container: bool = False  # without one, the pod's first container is (else no container is)
    port_name: str  # the training container's port of this name, else default_port, is each replica's Service's
    default_port: int
    dependent_resources: tuple[Dependent, ...] = (tensorboard.DEPENDENT,)
    restart_rule_type: type[ReplicaRestart] = ReplicaRestart  # the rule of each replica type (restart_rule)

    def validate(self, job: T) -> list[SpecError]:
        """The kind's own checks of a parsed job, after those every training job gets."""
        return []

    def rank_order(self, job: T, replica: tuple[str, int]) -> Any:
        """The sort key of a replica (type, rank): the failure named first when several fail at once."""
        return replica

    def parse(self, obj: dict) -> T | list[SpecError]:
        job = parse(obj, self.model)
        if not isinstance(job, self.model):
            return job
        # Every replica has a Service: its name, like the pod's, must be a DNS-1035 label.
        errors = [*name_errors(job, self.api, services=True, counts=self.replica_counts(job)),
                  *duplicate_types(job), *template_errors(job), *run_mode_errors(job),
                  *no_replicas_errors([spec.replicas for spec in job.spec.replica_specs]),
                  *self.validate(job), *fixed_types_errors(job, obj)]
        return list(dict.fromkeys(errors)) or job

    def training_container(self, pod_spec: dict) -> dict | None:
        return containers.training_container(pod_spec, self.container_names, any_container=self.any_container)

    def port(self, pod_spec: dict) -> int:
        """The port of a replica type's training container named `port_name`, else the default."""
        return containers.named_port(self.training_container(pod_spec), self.port_name, self.default_port)

    def replica_port(self, job: T, replica_type: str) -> int:
        spec = job.spec.replica(replica_type)
        return self.port((spec.template.get("spec") or {}) if spec is not None else {})

    def restart_rule(self, job: T, replica_type: str) -> ReplicaRestart:
        spec = job.spec.replica(replica_type)
        if spec is None:
            raise KeyError(f'replica type "{replica_type}" is not in spec.replicaSpecs of {job.name}')
        container = self.training_container(spec.template.get("spec") or {}) or {}
        return self.restart_rule_type(spec.restart_policy, job.spec.run_policy.backoff_limit,
                                      str(container.get("name") or ""))

    def verdict(self, job: T, outcomes: Outcomes) -> Verdict | None:
        failed = sorted((key for key, outcome in outcomes.items() if outcome == Outcome.FAILED),
                        key=lambda key: self.rank_order(job, key))
        if failed:  # failure wins a tie
            replica_type, rank = failed[0]
            return Verdict(JobPhase.FAILED, failed[0], f"Replica {job.name}-{replica_type}-{rank} has failed.",
                           replicas=tuple(failed))
        master = job.spec.master()
        if master is not None and outcomes.get(master) == Outcome.SUCCEEDED:
            return Verdict(JobPhase.SUCCEEDED, master, f"The master replica {job.name}-{master[0]}-{master[1]} "
                           "has succeeded.")
        if master is None and outcomes and all(o == Outcome.SUCCEEDED for o in outcomes.values()):
            return Verdict(JobPhase.SUCCEEDED, None, "Every replica has succeeded.")  # no master: all of them
        return None

    def active_deadline(self, job: T) -> float | None:
        return job.spec.run_policy.active_deadline_seconds

    def dependents(self, job: T, status: Mapping[str, Any] = NO_STATUS) -> dict[Resource, dict]:
        board = tensorboard.desired(job, self.api)
        return {} if board is None else {tensorboard.RESOURCE: board}

    def dependent_status(self, job: T, observed: Mapping[Resource, list[dict] | None],
                         actions: Mapping[Resource, str]) -> dict:
        reported = tensorboard.status(job, observed.get(tensorboard.RESOURCE), actions.get(tensorboard.RESOURCE, "NOP"))
        return {} if reported is None else {"tensorboard": reported}

    def service_ports(self, job: T, replica_type: str) -> list[dict] | None:
        port = self.replica_port(job, replica_type)
        return [{"name": self.port_name, "port": port, "targetPort": port, "protocol": "TCP"}]

    def set_env(self, pod_spec: dict, env: Iterable[tuple[str, str]], *, every_container: bool = False) -> None:
        """The variables in the training container (`every_container`: in every container), each unless the
        user set it there."""
        chosen = pod_spec.get("containers") or () if every_container else [self.training_container(pod_spec)]
        containers.set_env(chosen, env)
