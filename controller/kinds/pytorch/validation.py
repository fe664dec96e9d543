"""What the controller checks in a PyTorchTrainingJob before it makes anything: the pydantic model, then what
the CRD's rules say again for jobs admitted by an older CRD: unique types, one `master` replica at most, at
least one replica, elastic bounds (1 <= min <= max), names that make valid pod and Service names."""

from __future__ import annotations

from controller.jobs.validation import (
    SpecError,
    duplicate_types,
    name_errors,
    parse,
    run_mode_errors,
    template_errors,
)
from controller.kinds.pytorch.models import API, MASTER, PyTorchTrainingJob

__all__ = ["parse_and_validate", "validate"]


def parse_and_validate(obj: dict) -> PyTorchTrainingJob | list[SpecError]:
    job = parse(obj, PyTorchTrainingJob)
    if isinstance(job, PyTorchTrainingJob):
        return validate(job) or job
    return job


def validate(job: PyTorchTrainingJob) -> list[SpecError]:
    errors = [*name_errors(job, API, services=True), *duplicate_types(job), *template_errors(job),
              *run_mode_errors(job)]
    for index, spec in enumerate(job.spec.replica_specs):
        if spec.type == MASTER and job.spec.declared_replicas.get(MASTER, 0) > 1:
            errors.append(SpecError(f"spec.replicaSpecs[{index}].replicas",
                                    f'at most one replica of type "{MASTER}" '
                                    f"(it has {job.spec.declared_replicas[MASTER]})"))
    if not any(job.spec.declared_replicas.values()):
        errors.append(SpecError("spec.replicaSpecs", "the job has no replicas"))
    elastic = job.spec.elastic
    if elastic.enabled and elastic.min_replicas is not None and elastic.max_replicas is not None \
            and elastic.min_replicas > elastic.max_replicas:
        errors.append(SpecError("spec.elastic", f"minReplicas ({elastic.min_replicas}) must be at most maxReplicas "
                                                f"({elastic.max_replicas})"))
    return list(dict.fromkeys(errors))
