"""What the controller checks in a PyTorchTrainingJob beyond what every training job gets (the training kit's
TrainingKind.parse): what the CRD's rules say again for jobs admitted by an older CRD: one `master` replica
at most, the master kept, elastic bounds (1 <= min <= max); and, of an edit, elastic bounds unchanged."""

from __future__ import annotations

from controller.jobs.schema.validation import SpecError
from controller.kinds.pytorch.models import MASTER, PyTorchTrainingJob

__all__ = ["elastic_bounds_changed", "validate"]


def validate(job: PyTorchTrainingJob) -> list[SpecError]:
    errors = master_errors(job)
    elastic = job.spec.elastic
    if elastic.enabled and elastic.min_replicas is not None and elastic.max_replicas is not None \
            and elastic.min_replicas > elastic.max_replicas:
        errors.append(SpecError("spec.elastic", f"minReplicas ({elastic.min_replicas}) must be at most maxReplicas "
                                                f"({elastic.max_replicas})"))
    return errors


def master_errors(job: PyTorchTrainingJob) -> list[SpecError]:
    """Global rank 0 (the master, whose success is the job's) never moves: a `master` type has exactly one
    replica; without one, the first type keeps at least one (its rank 0 is the master). Elastic mode splits
    its replicas by weight: the first type must keep one there too."""
    specs, counts = job.spec.replica_specs, job.spec.counts()
    for index, spec in enumerate(specs):
        if spec.type == MASTER and spec.replicas != 1:
            return [SpecError(f"spec.replicaSpecs[{index}].replicas",
                              f'a replica type "{MASTER}" has exactly one replica')]
    if any(spec.type == MASTER for spec in specs) or not specs:
        return []
    first = specs[0]
    running = min(first.replicas, counts.get(first.type, first.replicas))
    if running > 0 or not any(spec.replicas for spec in specs):
        return []  # (no replicas at all: said once, by no_replicas_errors)
    return [SpecError("spec.replicaSpecs[0].replicas", f'without a "{MASTER}" type, rank 0 of the first type '
                      f'("{first.type}") is the master, whose success is the job\'s: it needs at least one replica '
                      f"(it has {running})")]


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
