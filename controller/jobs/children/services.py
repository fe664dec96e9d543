"""The Service of one replica: the replica's stable host name `[job]-[type]-[rank]`.

Headless (`clusterIP: None`): the name resolves straight to the pod's IP, with no proxying, which
is what peers of a distributed job need; and `publishNotReadyAddresses`, because peers must find
each other while starting up, before any readiness probe passes. The selector pins exactly one
pod: the job's uid (not its name, so a re-created job never selects an old job's pods), the type
and the rank.
"""

from __future__ import annotations

from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.schema.naming import job_labels, owner_reference, replica_labels, replica_name


def service_selector(kind: JobKind, job: ParsedJob, replica_type: str, rank: int) -> dict[str, str]:
    return {kind.api.uid_label: job.uid, kind.api.type_label: replica_type, kind.api.rank_label: str(rank)}


def stored_ports(svc: dict) -> list[dict]:
    """A stored Service's ports, reduced to the fields a kind's service_ports() sets, to compare the two."""
    return [{k: port[k] for k in ("name", "port", "targetPort", "protocol") if k in port}
            for port in (svc.get("spec") or {}).get("ports") or ()]


def desired_service(kind: JobKind, job: ParsedJob, replica_type: str, rank: int) -> dict | None:
    """The Service of replica (type, rank), or None when the job wants no Services."""
    ports = kind.service_ports(job, replica_type)
    if ports is None:
        return None
    return _headless(kind, job, replica_name(job.name, replica_type, rank),
                     replica_labels(kind.api, job.name, job.uid, replica_type, rank),
                     service_selector(kind, job, replica_type, rank), ports)


def subdomain_service(kind: JobKind, job: ParsedJob) -> dict | None:
    """The job's own headless Service, named after it and selecting every pod of it (the kind's `subdomain_ports`):
    a pod whose `hostname` is its name and `subdomain` the job's resolves as `[pod].[job].[namespace].svc`, and
    publishing not-ready addresses, from the moment it has an address. None when the kind wants none."""
    ports = kind.subdomain_ports(job)
    if ports is None:
        return None
    return _headless(kind, job, job.name, job_labels(kind.api, job.name, job.uid), {kind.api.uid_label: job.uid},
                     ports)


def _headless(kind: JobKind, job: ParsedJob, name: str, labels: dict, selector: dict, ports: list[dict]) -> dict:
    """A headless Service the job owns, publishing its pods' addresses before they are ready (the module's why)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": job.namespace,
            "labels": labels,
            "ownerReferences": [owner_reference(kind.api, job.name, job.uid)],
        },
        "spec": {"clusterIP": "None", "selector": selector, "ports": ports, "publishNotReadyAddresses": True},
    }
