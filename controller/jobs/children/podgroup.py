"""The PodGroup of a job scheduled by T9k Scheduler (gang scheduling), defined in this one place.

The specification does not give the PodGroup API, so this module does:

    apiVersion: scheduler.tensorstack.dev/v1beta1
    kind: PodGroup                      (plural podgroups, namespaced)
    metadata: {name: <job name>, ownerReferences: [the job, controller]}
    spec: {minMember: <total replicas, or the kind's min_member>, queue: <t9kScheduler.queue>,
           priority: <t9kScheduler.priority, 0-100>}
    status: {phase: ...}                (written by the scheduler; kept as it comes)

The job's pods then carry `schedulerName: t9k-scheduler` and the label and annotation
`scheduler.tensorstack.dev/group-name: <podgroup name>`, which the scheduler reads to find the group.
The CRD is written to manifests/crds/podgroup.yaml with the kinds' CRDs (registry.crd_files: by the
first kind's generator).
"""

from __future__ import annotations

from apimachinery.resource import Resource
from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.schema.api import T9kScheduler
from controller.jobs.schema.crd import custom_resource
from controller.jobs.schema.naming import job_labels, owner_reference

GROUP = "scheduler.tensorstack.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "PodGroup"
PLURAL = "podgroups"
# `kubectl get t9kpg`. Not `pg` or `podgroup`: Volcano's PodGroup (scheduling.volcano.sh) claims those, and a
# cluster may serve both; kubectl would expand a shared short name to whichever group it lists first.
SHORT_NAME = "t9kpg"
RESOURCE = Resource(GROUP, VERSION, PLURAL)
SCHEDULER_NAME = "t9k-scheduler"
GROUP_NAME_KEY = f"{GROUP}/group-name"  # both a label (for selection) and an annotation (what schedulers read)


def podgroup_name(job_name: str) -> str:
    return job_name


def t9k_scheduler(job: ParsedJob) -> T9kScheduler | None:
    """The job's T9k Scheduler settings; None when another scheduler places its pods."""
    scheduler = job.spec.scheduler
    return scheduler.t9k_scheduler if scheduler is not None else None


def uses_t9k_scheduler(job: ParsedJob) -> bool:
    return t9k_scheduler(job) is not None


def min_member(kind: JobKind, job: ParsedJob) -> int:
    """Gang size: every replica of the job must be placeable before any of them runs; unless the kind
    names a smaller gang (`JobKind.min_member`, an elastic job's lower bound: it can start with that many)."""
    smaller = kind.min_member(job)
    if smaller is not None:
        return smaller
    return sum(kind.replica_counts(job).values())


def desired_podgroup(kind: JobKind, job: ParsedJob) -> dict | None:
    """The PodGroup the job needs, or None when it is not scheduled by T9k Scheduler."""
    t9k = t9k_scheduler(job)
    if t9k is None:
        return None
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": podgroup_name(job.name),
            "namespace": job.namespace,
            "labels": job_labels(kind.api, job.name, job.uid),
            "ownerReferences": [owner_reference(kind.api, job.name, job.uid)],
        },
        "spec": {"minMember": min_member(kind, job), "queue": t9k.queue, "priority": t9k.priority},
    }


def podgroup_crd() -> dict:
    spec_schema = {
        "type": "object",
        "description": "The gang: how many pods must be schedulable together, and where they queue.",
        "properties": {
            "minMember": {"type": "integer", "minimum": 0, "format": "int32",
                          "description": "The minimum number of pods to schedule together."},
            "queue": {"type": "string", "description": "The queue the group waits in."},
            "priority": {"type": "integer", "minimum": 0, "maximum": 100, "default": 0, "format": "int32",
                         "description": "The priority of the group within its queue, 0-100. Defaults to 0."},
        },
        "required": ["minMember", "queue"],
    }
    status_schema = {
        "type": "object",
        "description": "Written by the scheduler.",
        "properties": {"phase": {"type": "string", "description": "The phase of the group."}},
        "x-kubernetes-preserve-unknown-fields": True,
    }
    schema = {
        "type": "object",
        "description": "PodGroup: a set of pods that T9k Scheduler places all together or not at all.",
        "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                       "spec": spec_schema, "status": status_schema},
        "required": ["spec"],
    }
    columns = [
        {"name": "MinMember", "type": "integer", "jsonPath": ".spec.minMember"},
        {"name": "Queue", "type": "string", "jsonPath": ".spec.queue"},
        {"name": "Priority", "type": "integer", "jsonPath": ".spec.priority"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return custom_resource(GROUP, VERSION, KIND, PLURAL, schema, columns, short_names=[SHORT_NAME],
                           categories=("t9k",))
