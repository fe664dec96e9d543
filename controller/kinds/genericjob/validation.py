"""What the CRD schema cannot reject, found before the controller makes anything.

`parse` turns a GenericJob object into the model or into SpecErrors (a schema error that got past
the API server: an older CRD, or a value the model is stricter about). `validate` then checks what
only the controller can see: rules naming unknown types or ranks out of range, unresolvable
variables, duplicate replica types, names too long for a pod or Service, run-mode overrides naming
unknown types, templates without containers. Any error makes the job Failed with reason
InvalidSpec, with `invalid_spec_message` as the condition and Warning Event text, and no pods.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from controller.jobs.naming import label, replica_name
from controller.jobs.pods import PodMode, run_mode_override
from controller.kinds.genericjob.models import API, FinishRule, GenericJob
from controller.kinds.genericjob.substitution import CONTAINER_GROUPS, JobVariables, pod_spec_problems

DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE_MAX = 63
SUBDOMAIN_MAX = 253
MESSAGE_ERRORS_SHOWN = 5  # a condition message and an Event stay readable with many errors

# GenericJob fields that the model reads from metadata (GenericJob.from_object).
_METADATA_FIELDS = {"name": "metadata.name", "namespace": "metadata.namespace", "uid": "metadata.uid",
                    "generation": "metadata.generation"}


@dataclass(frozen=True, slots=True)
class SpecError:
    field: str  # JSON path, e.g. spec.replicaSpecs[0].replicas
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def invalid_spec_message(errors: list[SpecError]) -> str:
    """One line for the Failed condition and the Warning Event: the first few errors."""
    shown = "; ".join(str(error) for error in errors[:MESSAGE_ERRORS_SHOWN])
    hidden = len(errors) - MESSAGE_ERRORS_SHOWN
    return f"{shown}; and {hidden} more" if hidden > 0 else shown


# --- parse ------------------------------------------------------------------------------------


def parse(obj: dict, model: type = GenericJob):
    """The job's model (GenericJob's, or another kind's `model` with a `from_object`), or the reasons it
    cannot be built, with JSON field paths."""
    try:
        return model.from_object(obj)
    except ValidationError as err:
        return _spec_errors(err, {**obj, **(obj.get("metadata") or {})})
    except (KeyError, TypeError, AttributeError) as err:  # no metadata, or metadata not an object
        return [SpecError("metadata", f"malformed object metadata: {err!r}")]


def _spec_errors(err: ValidationError, source: dict) -> list[SpecError]:
    messages: dict[str, list[str]] = {}  # path -> messages; a union's alternatives share one path
    for detail in err.errors(include_url=False):
        path = _json_path(detail["loc"], source, missing=detail["type"] == "missing")
        text = _readable(detail)
        if text not in messages.setdefault(path, []):
            messages[path].append(text)
    return [SpecError(path, " or ".join(texts)) for path, texts in messages.items()]


def _json_path(loc: tuple, source: Any, missing: bool) -> str:
    """`spec.replicaSpecs[0].replicas` from pydantic's loc, walking the input alongside. A name that
    is not in the input is a union member tag (`targetPort.int`) and is dropped, except on the way
    to a missing field."""
    parts: list[str] = []
    value = source
    for segment in loc:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
            value = value[segment] if isinstance(value, list) and 0 <= segment < len(value) else None
        elif (isinstance(value, dict) and segment in value) or (missing and (value is None or isinstance(value, dict))):
            if not parts and segment in _METADATA_FIELDS:
                parts.append(_METADATA_FIELDS[segment])
            else:
                parts.append(f".{segment}" if parts else str(segment))
            value = value.get(segment) if isinstance(value, dict) else None
    return "".join(parts) or "<root>"


def _readable(detail: dict) -> str:
    message = detail["msg"].removeprefix("Value error, ")
    value = detail.get("input")
    if detail["type"] != "missing" and (value is None or isinstance(value, (str, int, float, bool))):
        message += f" (got {json.dumps(value)})"
    return message


# --- validate ---------------------------------------------------------------------------------


def validate(job: GenericJob) -> list[SpecError]:
    """Every problem of a parsed job that would stop the controller making its pods correctly."""
    errors = [
        *_name_errors(job),
        *duplicate_types(job),
        *template_errors(job),
        *_rule_errors(job, "successRules", job.spec.success_rules),
        *_rule_errors(job, "failureRules", job.spec.failure_rules),
        *run_mode_errors(job),
        *_variable_errors(job),
    ]
    return list(dict.fromkeys(errors))


def _name_errors(job: GenericJob) -> list[SpecError]:
    errors = []
    if len(job.name) > LABEL_VALUE_MAX:
        errors.append(SpecError("metadata.name", f"must be no more than {LABEL_VALUE_MAX} characters: it is the "
                                f"value of the label {label(API, 'name')} on every pod (it has {len(job.name)})"))
    for spec in job.spec.replica_specs:
        if spec.replicas == 0:
            continue
        longest = replica_name(job.name, spec.type, spec.replicas - 1)
        if job.spec.service is not None:
            if len(longest) > LABEL_VALUE_MAX or not DNS1035_LABEL.fullmatch(longest):
                errors.append(SpecError("metadata.name", f'the Service name "{longest}" (replica type "{spec.type}") '
                                        f"must be a DNS-1035 label of at most {LABEL_VALUE_MAX} characters: "
                                        "lower case letters, digits and '-', starting with a letter"))
        elif len(longest) > SUBDOMAIN_MAX or not DNS1123_SUBDOMAIN.fullmatch(longest):
            errors.append(SpecError("metadata.name", f'the pod name "{longest}" (replica type "{spec.type}") must '
                                    f"be a DNS-1123 subdomain of at most {SUBDOMAIN_MAX} characters"))
    return errors


def duplicate_types(job: GenericJob) -> list[SpecError]:
    first: dict[str, int] = {}
    errors = []
    for index, spec in enumerate(job.spec.replica_specs):
        if spec.type in first:
            errors.append(SpecError(f"spec.replicaSpecs[{index}].type", f'duplicate replica type "{spec.type}" '
                                    f"(also spec.replicaSpecs[{first[spec.type]}])"))
        first.setdefault(spec.type, index)
    return errors


def template_errors(job: GenericJob) -> list[SpecError]:
    """The template shapes the controller relies on, and what every pod needs (name, image), so a
    bad template of one type never leaves the pods of the other types half made."""
    errors = []
    for index, spec in enumerate(job.spec.replica_specs):
        where = f"spec.replicaSpecs[{index}].template.spec"
        pod_spec = spec.template.get("spec")
        if not isinstance(pod_spec, dict):
            errors.append(SpecError(where, "a pod template needs a spec with at least one container"))
            continue
        if not isinstance(pod_spec.get("containers"), list) or not pod_spec["containers"]:
            errors.append(SpecError(f"{where}.containers", "a pod template needs at least one container"))
        for group in CONTAINER_GROUPS:
            containers = pod_spec.get(group)
            if group in pod_spec and not isinstance(containers, list):
                errors.append(SpecError(f"{where}.{group}", "must be a list of containers"))
                continue
            for position, container in enumerate(containers or ()):
                errors += _container_errors(container, f"{where}.{group}[{position}]")
    return errors


def _container_errors(container: Any, where: str) -> list[SpecError]:
    if not isinstance(container, dict):
        return [SpecError(where, "must be a container object")]
    errors = [SpecError(f"{where}.{key}", "required: every container needs one")
              for key in ("name", "image") if not isinstance(container.get(key), str) or not container[key]]
    for key in ("command", "args"):
        values = container.get(key)
        if values is not None and (not isinstance(values, list) or not all(isinstance(v, str) for v in values)):
            errors.append(SpecError(f"{where}.{key}", "must be a list of strings"))
    env = container.get("env")
    if env is not None and not isinstance(env, list):
        errors.append(SpecError(f"{where}.env", "must be a list of variables"))
    for position, var in enumerate(env if isinstance(env, list) else ()):
        if not isinstance(var, dict) or not isinstance(var.get("name"), str):
            errors.append(SpecError(f"{where}.env[{position}]", "must be an object with a name"))
        elif var.get("value") is not None and not isinstance(var["value"], str):
            errors.append(SpecError(f"{where}.env[{position}].value", "must be a string"))
    return errors


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


def run_mode_errors(job: GenericJob) -> list[SpecError]:
    known = {spec.type for spec in job.spec.replica_specs}
    run_mode = job.spec.run_mode
    overrides = [
        ("spec.runMode.debug.replicaSpecs", run_mode.debug.replica_specs if run_mode.debug else []),
        ("spec.runMode.pause.resumeSpecs", run_mode.pause.resume_specs if run_mode.pause else []),
    ]
    errors = []
    for field, entries in overrides:
        seen: set[str] = set()
        for index, entry in enumerate(entries):
            where = f"{field}[{index}].type"
            if entry.type not in known:
                errors.append(SpecError(where, f'replica type "{entry.type}" is not in spec.replicaSpecs'))
            elif entry.type in seen:
                errors.append(SpecError(where, f'duplicate replica type "{entry.type}"'))
            seen.add(entry.type)
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
            for key in ("command", "args"):
                values = getattr(override, key) if override else None
                for position, text in enumerate(values or ()):
                    errors += [SpecError(p.field, p.message)
                               for p in variables.problems(text, f"{override.field}.{key}[{position}]")]
    return errors
