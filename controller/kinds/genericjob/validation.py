"""What the CRD schema cannot reject, found before the controller makes anything.

`parse` turns a GenericJob object into the model or into SpecErrors (a schema error that got past
the API server: an older CRD, or a value the model is stricter about). `validate` then checks what
only the controller can see: rules naming unknown types or ranks out of range, unresolvable
variables, no replicas at all, duplicate replica types, names too long for a pod or Service, run-mode
overrides naming unknown types, templates without containers. Any error makes a new job Failed with
reason InvalidSpec, with `invalid_spec_message` as the condition and Warning Event text, and no pods;
a running job whose edit has errors is held (controller/jobs/decisions/held.py).
"""

from __future__ import annotations

from controller.jobs.children.pods import PodMode, run_mode_override
from controller.jobs.schema.validation import (
    SpecError,
    duplicate_types,
    invalid_spec_message,
    name_errors,
    no_replicas_errors,
    run_mode_errors,
    template_errors,
)
from controller.jobs.schema.validation import parse as shared_parse
from controller.kinds.genericjob.models import API, FinishRule, GenericJob
from controller.kinds.genericjob.substitution import JobVariables, pod_spec_problems


def parse(obj: dict, model: type[GenericJob] = GenericJob) -> GenericJob | list[SpecError]:
    """The job's model (GenericJob's by default), or the reasons it cannot be built, with JSON field paths."""
    return shared_parse(obj, model)


def validate(job: GenericJob) -> list[SpecError]:
    """Every problem of a parsed job that would stop the controller making its pods correctly."""
    errors = [
        *name_errors(job, API, services=job.spec.service is not None),
        *duplicate_types(job),
        *no_replicas_errors([spec.replicas for spec in job.spec.replica_specs]),
        *template_errors(job),
        *_rule_errors(job, "successRules", job.spec.success_rules),
        *_rule_errors(job, "failureRules", job.spec.failure_rules),
        *run_mode_errors(job),
        *_variable_errors(job),
    ]
    return list(dict.fromkeys(errors))


def _rule_errors(job: GenericJob, field: str, rules: list[FinishRule] | None) -> list[SpecError]:
    counts: dict[str, int] = {}
    for spec in job.spec.replica_specs:
        counts.setdefault(spec.type, spec.replicas)
    errors = []
    for index, rule in enumerate(rules or ()):
        where = f"spec.{field}[{index}]"
        if not any(rule.values()):
            # An empty rule would be met at once (all of no replicas have finished).
            errors.append(SpecError(where, "a rule must name at least one replica"))
        for replica_type, ranks in rule.items():
            if replica_type not in counts:
                errors.append(SpecError(where, f'replica type "{replica_type}" is not in spec.replicaSpecs'))
                continue
            count = counts[replica_type]
            errors += [SpecError(where, f'rank {rank} of "{replica_type}" is out of range [0, {count})')
                       for rank in ranks if not 0 <= rank < count]
    return errors


def _variable_errors(job: GenericJob) -> list[SpecError]:
    """A dry run of substitution for rank 0 of every type: whether a variable resolves does not
    depend on the replica's own rank, only on the type, rank or port it names."""
    shared = JobVariables.of(job)
    errors: list[SpecError] = []
    for index, spec in enumerate(job.spec.replica_specs):
        variables = shared.for_replica(spec.type, 0)
        pod_spec = spec.template.get("spec")
        if isinstance(pod_spec, dict):
            problems = pod_spec_problems(pod_spec, variables, f"spec.replicaSpecs[{index}].template.spec")
            errors += [SpecError(p.field, p.message) for p in problems]
        for mode in (PodMode.DEBUG, PodMode.RESUME):
            override = run_mode_override(job, spec.type, mode)
            if override is None:
                continue
            for key in ("command", "args"):
                values = getattr(override, key)
                for position, text in enumerate(values or ()):
                    errors += [SpecError(p.field, p.message)
                               for p in variables.problems(text, f"{override.field}.{key}[{position}]")]
    return errors


__all__ = ["SpecError", "duplicate_types", "invalid_spec_message", "parse", "run_mode_errors", "template_errors",
           "validate"]
