"""What the controller checks in a TensorFlowTrainingJob before it makes anything: the pydantic model
(the engine's parser, with this kind's model), then what the CRD's rules say again for jobs admitted
by an older CRD: unique types, at most one chief and one evaluator, a `tensorflow` container in every
template, and names that make valid pod and Service names; and what the CRD's rules say of every edit: at least
one replica, the replica the job's success is judged by kept (the chief, else worker 0), and the replica types
and their order as the status recorded them (a transition rule in the CRD)."""

from __future__ import annotations

from controller.jobs.schema.validation import (
    SpecError,
    duplicate_types,
    fixed_types_errors,
    name_errors,
    no_replicas_errors,
    parse,
    run_mode_errors,
    template_errors,
)
from controller.kinds.tensorflow.models import API, ReplicaType, TensorFlowTrainingJob
from controller.kinds.tensorflow.tfconfig import CONTAINER

__all__ = ["parse_and_validate", "validate"]

SINGLE = ("chief", "evaluator")  # at most one replica of each


def parse_and_validate(obj: dict) -> TensorFlowTrainingJob | list[SpecError]:
    job = parse(obj, TensorFlowTrainingJob)
    if isinstance(job, TensorFlowTrainingJob):
        return validate(job) + fixed_types_errors(job, obj) or job
    return job


def validate(job: TensorFlowTrainingJob) -> list[SpecError]:
    # Every replica has a Service: its name, like the pod's, must be a DNS-1035 label.
    errors = [*name_errors(job, API, services=True), *duplicate_types(job), *template_errors(job),
              *run_mode_errors(job), *no_replicas_errors([spec.replicas for spec in job.spec.replica_specs]),
              *master_errors(job)]
    for index, spec in enumerate(job.spec.replica_specs):
        if spec.type in SINGLE and spec.replicas > 1:
            errors.append(SpecError(f"spec.replicaSpecs[{index}].replicas",
                                    f'at most one replica of type "{spec.type}"'))
        containers = (spec.template.get("spec") or {}).get("containers") if isinstance(spec.template, dict) else None
        if isinstance(containers, list) and not any(isinstance(c, dict) and c.get("name") == CONTAINER
                                                    for c in containers):
            errors.append(SpecError(f"spec.replicaSpecs[{index}].template.spec.containers",
                                    f'needs a container named "{CONTAINER}" (the training container)'))
    return list(dict.fromkeys(errors))


def master_errors(job: TensorFlowTrainingJob) -> list[SpecError]:
    """The replica the job's success is judged by stays: a chief listed keeps its replica, else a worker type
    listed keeps worker 0. Scaled to 0, the master would move to another replica mid-run, or vanish."""
    for replica_type in (ReplicaType.CHIEF, ReplicaType.WORKER):
        for index, spec in enumerate(job.spec.replica_specs):
            if spec.type == replica_type:
                if spec.replicas > 0:
                    return []
                judged = "the chief" if replica_type == ReplicaType.CHIEF else "worker 0, without a chief,"
                return [SpecError(f"spec.replicaSpecs[{index}].replicas", f"the job's success is judged by {judged} "
                                  f'so type "{replica_type}" needs at least one replica (it has 0)')]
    return []
