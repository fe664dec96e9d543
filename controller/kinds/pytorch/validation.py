"""What the controller checks in a PyTorchTrainingJob before it makes anything: the pydantic model, then what
the CRD's rules say again for jobs admitted by an older CRD: unique types, one `master` replica at most, at
least one replica, elastic bounds (1 <= min <= max), names that make valid pod and Service names."""

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
from controller.kinds.pytorch.models import API, MASTER, PyTorchTrainingJob

__all__ = ["elastic_bounds_changed", "parse_and_validate", "validate"]


def parse_and_validate(obj: dict) -> PyTorchTrainingJob | list[SpecError]:
    job = parse(obj, PyTorchTrainingJob)
    if isinstance(job, PyTorchTrainingJob):
        return validate(job) + fixed_types_errors(job, obj) or job
    return job


def validate(job: PyTorchTrainingJob) -> list[SpecError]:
    errors = [*name_errors(job, API, services=True), *duplicate_types(job), *template_errors(job),
              *run_mode_errors(job), *no_replicas_errors(list(job.spec.declared_replicas.values())),
              *master_errors(job)]
    elastic = job.spec.elastic
    if elastic.enabled and elastic.min_replicas is not None and elastic.max_replicas is not None \
            and elastic.min_replicas > elastic.max_replicas:
        errors.append(SpecError("spec.elastic", f"minReplicas ({elastic.min_replicas}) must be at most maxReplicas "
                                                f"({elastic.max_replicas})"))
    return list(dict.fromkeys(errors))


def master_errors(job: PyTorchTrainingJob) -> list[SpecError]:
    """Global rank 0 (the master, whose success is the job's) never moves: a `master` type has exactly one
    replica; without one, the first type keeps at least one (its rank 0 is the master). Elastic mode splits
    its replicas by weight: the first type must keep one there too."""
    specs = job.spec.replica_specs
    for index, spec in enumerate(specs):
        declared = job.spec.declared_replicas.get(spec.type, spec.replicas)
        if spec.type == MASTER and declared != 1:
            return [SpecError(f"spec.replicaSpecs[{index}].replicas",
                              f'a replica type "{MASTER}" has exactly one replica')]
    if any(spec.type == MASTER for spec in specs) or not specs:
        return []
    first = specs[0]
    declared = job.spec.declared_replicas.get(first.type, first.replicas)
    if min(declared, first.replicas) > 0 or not any(job.spec.declared_replicas.values()):
        return []  # (no replicas at all: said once, by no_replicas_errors)
    return [SpecError("spec.replicaSpecs[0].replicas", f'without a "{MASTER}" type, rank 0 of the first type '
                      f'("{first.type}") is the master, whose success is the job\'s: it needs at least one replica '
                      f"(it has {min(declared, first.replicas)})")]


def elastic_bounds_changed(old: dict, new: dict) -> list[SpecError]:
    """An edit that changes `elastic.minReplicas` or `maxReplicas` (the admission webhook's update rule, as the
    CRD's transition rules say it, with their messages): the bounds are immutable once the job exists, set or
    unset. Only when both objects have `spec.elastic`, as a transition rule on it runs."""
    before, after = _elastic(old), _elastic(new)
    if before is None or after is None:
        return []
    return [SpecError(f"spec.elastic.{bound}", f"{bound} is immutable")
            for bound in ("minReplicas", "maxReplicas")
            if (bound in before) != (bound in after) or before.get(bound) != after.get(bound)]


def _elastic(obj: dict) -> dict | None:
    spec = obj.get("spec") if isinstance(obj, dict) else None
    elastic = spec.get("elastic") if isinstance(spec, dict) else None
    return elastic if isinstance(elastic, dict) else None
