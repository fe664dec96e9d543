"""The pod of one replica, as the controller wants it to be.

The template passes through untouched (resources, env, volumes, hostname, subdomain, ...), deep-
copied so the parsed job is never mutated, with only what the controller owns changed:

- metadata: name `[job]-[type]-[rank]`, the job's namespace, the template's labels, annotations and
  finalizers, the kind's labels (JobKind.template_labels), plus the controller's labels (which win) and,
  with T9k Scheduler, the pod-group label and annotation; a controller ownerReference to the job.
- spec.restartPolicy is always Never: the controller replaces finished pods itself, so it counts
  every restart (a kubelet restart in place would be invisible to the restart limit).
- spec.schedulerName is t9k-scheduler with T9k Scheduler.
- the kind decorates the pod spec (JobKind.decorate_pod): its variables and environment, and the run
  mode's override, which it applies with `apply_override`.
- annotations say which mode the pod was made in (`<prefix>/run-mode`: immediate, debug or resume) and
  from which template (`<prefix>/template-hash`).
- run modes: debug replaces the command and drops the args; resume applies the resumeSpecs
  command and/or args; both drop the init containers when skipInitContainer. An override applies
  to EVERY container of the pod, not just the first: the spec's override has no container name,
  and a debug pod whose sidecar still ran the real workload would not be a debug pod.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from controller.jobs.children.podgroup import GROUP_NAME_KEY, SCHEDULER_NAME, podgroup_name, uses_t9k_scheduler
from controller.jobs.kind import JobKind, ParsedJob, ReplicaSpec
from controller.jobs.schema.naming import owner_reference, replica_labels, replica_name

DEFAULT_DEBUG_COMMAND = ("sleep", "inf")
RUN_MODE = "run-mode"  # the annotation `<prefix>/run-mode` on every pod: the PodMode it was made in
TEMPLATE_HASH = "template-hash"  # and `<prefix>/template-hash`: the template it was made from (template_hash)


class PodMode(StrEnum):
    IMMEDIATE = "immediate"
    DEBUG = "debug"
    RESUME = "resume"


@dataclass(frozen=True, slots=True)
class Override:
    """What a run mode changes in every container of a replica's pod. `field` is the JSON path of
    the spec entry it comes from, for errors in its command and args."""

    field: str
    command: list[str] | None = None
    args: list[str] | None = None
    drop_args: bool = False
    skip_init_containers: bool = False


def replica_spec(job: ParsedJob, replica_type: str) -> tuple[int, ReplicaSpec]:
    """(index in spec.replicaSpecs, spec) of a replica type; KeyError if the job has no such type."""
    for index, spec in enumerate(job.spec.replica_specs):
        if spec.type == replica_type:
            return index, spec
    raise KeyError(f'replica type "{replica_type}" is not in spec.replicaSpecs of {job.namespace}/{job.name}')


def run_mode_override(job: ParsedJob, replica_type: str, mode: PodMode | str) -> Override | None:
    """The override of a mode for one replica type; None when the pod is the template's."""
    if mode == PodMode.DEBUG:
        debug = job.spec.run_mode.debug
        for index, entry in enumerate(debug.replica_specs if debug else ()):
            if entry.type == replica_type:
                command = entry.command if entry.command is not None else list(DEFAULT_DEBUG_COMMAND)
                return Override(f"spec.runMode.debug.replicaSpecs[{index}]", command=command, drop_args=True,
                                skip_init_containers=entry.skip_init_container)
        return Override("spec.runMode.debug", command=list(DEFAULT_DEBUG_COMMAND), drop_args=True)
    if mode == PodMode.RESUME:
        pause = job.spec.run_mode.pause
        for index, resume in enumerate(pause.resume_specs if pause else ()):
            if resume.type == replica_type:
                return Override(f"spec.runMode.pause.resumeSpecs[{index}]", command=resume.command, args=resume.args,
                                skip_init_containers=resume.skip_init_container)
        return None
    if mode != PodMode.IMMEDIATE:
        raise ValueError(f"unknown pod mode {mode!r}")
    return None


def desired_pod(kind: JobKind, job: ParsedJob, replica_type: str, rank: int, *,
                mode: PodMode | str = PodMode.IMMEDIATE) -> dict:
    """The pod of replica (type, rank). Raises what the kind's decoration raises for a spec it cannot
    build (a variable that does not resolve, which its validation reports first) and KeyError for an unknown type."""
    index, spec = replica_spec(job, replica_type)
    template = spec.template
    pod_spec = _copy_json(template.get("spec")) if isinstance(template.get("spec"), dict) else {}
    kind.decorate_pod(job, replica_type, rank, index, pod_spec, run_mode_override(job, replica_type, mode))
    pod_spec["restartPolicy"] = "Never"
    if uses_t9k_scheduler(job):
        pod_spec["schedulerName"] = SCHEDULER_NAME
    kind_labels = kind.template_labels(job, replica_type)
    metadata = _metadata(kind, job, template.get("metadata"), kind_labels, replica_type, rank)
    metadata["annotations"] = {**metadata.get("annotations", {}), mode_annotation(kind.api): str(mode),
                               f"{kind.api.label_prefix}/{TEMPLATE_HASH}": template_hash(template, kind_labels)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": pod_spec,
    }


def template_hash(template: dict, labels: Mapping[str, str] | None = None) -> str:
    """A short hash of a replica type's pod template, as a Deployment's pod-template-hash: the pods made
    before a template edit are told from those made after (the edit applies to new pods only). `labels`: the
    kind's labels on every pod of the type (JobKind.template_labels), hashed as part of the template's."""
    # Every plan of a running job asks (edits.template_changes), and its template is the same object for a whole
    # generation (the reconciler parses a job once per generation; parsed templates are never changed): remembered
    # by identity, the entry holding the template so that its id cannot be reused while it is remembered.
    entry = _hashes.get(id(template))
    if entry is not None and entry[0] is template and entry[1] == labels:
        return entry[2]
    hashed = template
    if labels:
        meta = template.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        own = meta.get("labels")
        hashed = {**template, "metadata": {**meta, "labels": {**(own if isinstance(own, dict) else {}), **labels}}}
    digest = hashlib.sha256(orjson.dumps(hashed, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    if len(_hashes) >= _HASHES_KEPT:
        _hashes.clear()
    _hashes[id(template)] = (template, labels, digest)
    return digest


_HASHES_KEPT = 256
_hashes: dict[int, tuple[dict, Mapping[str, str] | None, str]] = {}


def mode_annotation(api) -> str:
    key = _mode_keys.get(api.label_prefix)
    if key is None:  # made once per kind: a plan reads it twice per replica
        key = _mode_keys[api.label_prefix] = f"{api.label_prefix}/{RUN_MODE}"
    return key


_mode_keys: dict[str, str] = {}  # label prefix -> its run-mode annotation key


def pod_mode(api, pod: dict) -> str | None:
    """The mode a pod was made in (PodMode's value); None for a pod made before pods said so. Turning debug
    mode on or off replaces the pods of the other mode, and a debug pod's end is no outcome of the job."""
    return (pod["metadata"].get("annotations") or {}).get(mode_annotation(api))


def _copy_json(value: Any) -> Any:
    """A deep copy of parsed JSON (dicts, lists, scalars): the template is one, and this is a few
    times faster than copy.deepcopy, which matters when a job has many replicas."""
    kind = type(value)
    if kind is dict:
        return {key: _copy_json(item) for key, item in value.items()}
    if kind is list:
        return [_copy_json(item) for item in value]
    return value


def apply_override(override: Override | None, pod_spec: dict,
                   expand: Callable[[list[str], str], list[str]] = lambda values, _field: values) -> None:
    """A run mode's override, applied to every container of `pod_spec`. `expand` gives a kind's
    variables their values in the override's command and args (the second argument is the field)."""
    if override is None:
        return
    command = None if override.command is None else expand(override.command, f"{override.field}.command")
    args = None if override.args is None else expand(override.args, f"{override.field}.args")
    for container in pod_spec.get("containers") or ():
        if not isinstance(container, dict):
            continue
        if command is not None:
            container["command"] = list(command)
        if override.drop_args:
            container.pop("args", None)
        elif args is not None:
            container["args"] = list(args)
    if override.skip_init_containers:
        pod_spec.pop("initContainers", None)


def _metadata(kind: JobKind, job: ParsedJob, template_meta: object, kind_labels: Mapping[str, str],
              replica_type: str, rank: int) -> dict:
    source = template_meta if isinstance(template_meta, dict) else {}
    labels = {**(source.get("labels") or {}), **kind_labels,
              **replica_labels(kind.api, job.name, job.uid, replica_type, rank)}
    annotations = dict(source.get("annotations") or {})
    if uses_t9k_scheduler(job):
        labels[GROUP_NAME_KEY] = annotations[GROUP_NAME_KEY] = podgroup_name(job.name)
    meta: dict = {"name": replica_name(job.name, replica_type, rank), "namespace": job.namespace, "labels": labels}
    if annotations:
        meta["annotations"] = annotations
    if source.get("finalizers"):
        meta["finalizers"] = list(source["finalizers"])
    meta["ownerReferences"] = [owner_reference(kind.api, job.name, job.uid)]
    return meta
