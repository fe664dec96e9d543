"""Validation every job kind shares: the `SpecError` that names a field, the InvalidSpec message, turning
a pydantic error into field paths (`parse`), and the checks of what every kind's spec has (the total of
replicas, unique replica types, templates a pod can be made from, run-mode overrides naming known types).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self, TypeVar

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from controller.jobs.kind import KindApi, ParsedJob
from controller.jobs.kind import invalid_spec_message as invalid_spec_message  # its home before JobKind had it
from controller.jobs.schema.api import MAX_TOTAL_REPLICAS, ReplicaDebugSet, ResumeSpec
from controller.jobs.schema.naming import label, replica_name

CONTAINER_GROUPS = ("initContainers", "containers")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE_MAX = 63
SUBDOMAIN_MAX = 253

# The fields every kind's model reads from metadata (`from_object`).
_METADATA_FIELDS = {"name": "metadata.name", "namespace": "metadata.namespace", "uid": "metadata.uid",
                    "generation": "metadata.generation"}


@dataclass(frozen=True, slots=True)
class SpecError:
    field: str  # JSON path, e.g. spec.replicaSpecs[0].replicas
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class FromObject(Protocol):
    """A kind's parsed model: a class that builds itself from the job object (as JobObject.from_object)."""

    @classmethod
    def from_object(cls, obj: dict) -> Self: ...


M = TypeVar("M", bound=FromObject)


# --- parse ------------------------------------------------------------------------------------


def parse(obj: dict, model: type[M]) -> M | list[SpecError]:
    """The job's model (a kind's `model`, built by its `from_object`), or the reasons it cannot be built,
    with JSON field paths. The total of replicas is checked first, on the object as stored: a job admitted
    before the CRD capped it must fail on it, whatever else the model finds."""
    too_many = total_replicas_errors(obj)
    try:
        job = model.from_object(obj)
    except ValidationError as err:
        return too_many + _spec_errors(err, {**obj, **(obj.get("metadata") or {})})
    except (KeyError, TypeError, AttributeError) as err:  # no metadata, or metadata not an object
        return [*too_many, SpecError("metadata", f"malformed object metadata: {err!r}")]
    return too_many or job


def total_replicas_errors(obj: dict) -> list[SpecError]:
    """The CRD's cap on the replicas of a whole job (MAX_TOTAL_REPLICAS), counted as the CRD's rule counts
    them: an entry without `replicas` has one. Values that are not counts are left to the model."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    entries = spec.get("replicaSpecs") if isinstance(spec, dict) else None
    if not isinstance(entries, list):
        return []
    total = sum(_count(entry.get("replicas", 1)) for entry in entries if isinstance(entry, dict))
    if total <= MAX_TOTAL_REPLICAS:
        return []
    return [SpecError("spec.replicaSpecs", total_replicas_message(total))]


def total_replicas_message(total: int | None = None) -> str:
    asked = f" (it asks for {total})" if total is not None else ""
    return (f"the total of replicas over all replica types must be at most {MAX_TOTAL_REPLICAS}{asked}: "
            "each replica is a record in the job's status, which must fit in one object of the API server")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


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


def _readable(detail: ErrorDetails) -> str:
    message = detail["msg"].removeprefix("Value error, ")
    value = detail.get("input")
    if detail["type"] != "missing" and (value is None or isinstance(value, (str, int, float, bool))):
        message += f" (got {json.dumps(value)})"
    return message


def duplicate_types(job: ParsedJob) -> list[SpecError]:
    first: dict[str, int] = {}
    errors = []
    for index, spec in enumerate(job.spec.replica_specs):
        if spec.type in first:
            errors.append(SpecError(f"spec.replicaSpecs[{index}].type", f'duplicate replica type "{spec.type}" '
                                    f"(also spec.replicaSpecs[{first[spec.type]}])"))
        first.setdefault(spec.type, index)
    return errors


def template_errors(job: ParsedJob) -> list[SpecError]:
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


def run_mode_errors(job: ParsedJob) -> list[SpecError]:
    known = {spec.type for spec in job.spec.replica_specs}
    run_mode = job.spec.run_mode
    overrides: list[tuple[str, Sequence[ReplicaDebugSet | ResumeSpec]]] = [
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


def name_errors(job: ParsedJob, api: KindApi, *, services: bool,
                counts: Mapping[str, int] | None = None) -> list[SpecError]:
    """The job's name is the value of a label on every pod, and `[job]-[type]-[rank]` is a pod name and, with
    `services`, a Service name: each must be valid where it goes. `counts`: the replicas run of each type
    (JobKind.replica_counts), when not the written ones."""
    errors = []
    if len(job.name) > LABEL_VALUE_MAX:
        errors.append(SpecError("metadata.name", f"must be no more than {LABEL_VALUE_MAX} characters: it is the "
                                f"value of the label {label(api, 'name')} on every pod (it has {len(job.name)})"))
    for spec in job.spec.replica_specs:
        replicas = spec.replicas if counts is None else counts.get(spec.type, spec.replicas)
        if replicas == 0:
            continue
        longest = replica_name(job.name, spec.type, replicas - 1)
        if services:
            if len(longest) > LABEL_VALUE_MAX or not DNS1035_LABEL.fullmatch(longest):
                errors.append(SpecError("metadata.name", f'the Service name "{longest}" (replica type "{spec.type}") '
                                        f"must be a DNS-1035 label of at most {LABEL_VALUE_MAX} characters: "
                                        "lower case letters, digits and '-', starting with a letter"))
        elif len(longest) > SUBDOMAIN_MAX or not DNS1123_SUBDOMAIN.fullmatch(longest):
            errors.append(SpecError("metadata.name", f'the pod name "{longest}" (replica type "{spec.type}") must '
                                    f"be a DNS-1123 subdomain of at most {SUBDOMAIN_MAX} characters"))
    return errors


def no_replicas_errors(counts: list[int]) -> list[SpecError]:
    """A job runs at least one replica, when created and after any edit: with none there is nothing to
    judge it by (a job judged by all its replicas would succeed at once, one judged by its master would wait
    forever)."""
    if any(count > 0 for count in counts):
        return []
    return [SpecError("spec.replicaSpecs", "a job needs at least one replica: the replicas of all its types "
                                           "add up to 0")]


def recorded_types(obj: dict) -> list[Any]:
    """The replica types, in order, of the job's status (`status.tasks[].type`, written from the spec the
    job last ran), as the status holds them (the controller writes strings): empty before the first status write."""
    status = obj.get("status") if isinstance(obj, dict) else None
    tasks = status.get("tasks") if isinstance(status, dict) else None
    if not isinstance(tasks, list):
        return []
    return [task.get("type") for task in tasks if isinstance(task, dict)]


def fixed_types_errors(job: ParsedJob, obj: dict) -> list[SpecError]:
    """A training job's replica types, their names and their order cannot change once it exists: global ranks
    and the master follow from them, and the running pods were told them. The CRD refuses such an edit
    (a transition rule); this compares with the types the status recorded, for an edit that got past it."""
    recorded = recorded_types(obj)
    types = [spec.type for spec in job.spec.replica_specs]
    if not recorded or types == recorded:
        return []
    return [SpecError("spec.replicaSpecs", f"the replica types and their order cannot change once the job exists "
                                           f"(it has {_listed(recorded)}; the spec now has {_listed(types)}): "
                                           "only their replicas can")]


def _listed(types: list[str]) -> str:
    return "[" + ", ".join(types) + "]"
