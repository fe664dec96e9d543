"""What the controller checks in a TensorFlowTrainingJob beyond what every training job gets (the training
kit's TrainingKind.parse): what the CRD's rules say again for jobs admitted by an older CRD: at most one chief
and one evaluator, a `tensorflow` container in every template; and what the CRD's rules say of every edit: the
replica the job's success is judged by kept (the chief, else worker 0)."""

from __future__ import annotations

from controller.jobs.schema.validation import SpecError
from controller.kinds.tensorflow.models import ReplicaType, TensorFlowTrainingJob
from controller.kinds.tensorflow.tfconfig import CONTAINER

__all__ = ["master_errors", "validate"]

SINGLE = ("chief", "evaluator")  # at most one replica of each


def validate(job: TensorFlowTrainingJob) -> list[SpecError]:
    errors = master_errors(job)
    for index, spec in enumerate(job.spec.replica_specs):
        if spec.type in SINGLE and spec.replicas > 1:
            errors.append(SpecError(f"spec.replicaSpecs[{index}].replicas",
                                    f'at most one replica of type "{spec.type}"'))
        containers = (spec.template.get("spec") or {}).get("containers") if isinstance(spec.template, dict) else None
        if isinstance(containers, list) and not any(isinstance(c, dict) and c.get("name") == CONTAINER
                                                    for c in containers):
            errors.append(SpecError(f"spec.replicaSpecs[{index}].template.spec.containers",
                                    f'needs a container named "{CONTAINER}" (the training container)'))
    return errors


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
