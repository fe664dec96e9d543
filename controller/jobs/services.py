"""The Service of one replica: the replica's stable host name `[job]-[type]-[rank]`.

Headless (`clusterIP: None`): the name resolves straight to the pod's IP, with no proxying, which
is what peers of a distributed job need; and `publishNotReadyAddresses`, because peers must find
each other while starting up, before any readiness probe passes. The selector pins exactly one
pod: the job's uid (not its name, so a re-created job never selects an old job's pods), the type
and the rank.
"""

from __future__ import annotations

from controller.jobs.naming import (
    LABEL_JOB_UID,
    LABEL_RANK,
    LABEL_REPLICA_TYPE,
    owner_reference,
    replica_labels,
    replica_name,
)
from controller.kinds.genericjob.models import GenericJob


def service_selector(job: GenericJob, replica_type: str, rank: int) -> dict[str, str]:
    return {LABEL_JOB_UID: job.uid, LABEL_REPLICA_TYPE: replica_type, LABEL_RANK: str(rank)}


def service_ports(job: GenericJob) -> list[dict]:
    """spec.service.ports with the API server's defaults filled in (targetPort = port, TCP), so the
    desired object compares equal to the stored one."""
    ports = []
    for port in job.spec.service.ports if job.spec.service else ():
        entry: dict = {"name": port.name} if port.name else {}
        entry["port"] = port.port
        entry["targetPort"] = port.target_port if port.target_port is not None else port.port
        entry["protocol"] = str(port.protocol or "TCP")
        ports.append(entry)
    return ports


def stored_ports(svc: dict) -> list[dict]:
    """A stored Service's ports, reduced to the fields service_ports() sets, to compare the two."""
    return [{k: port[k] for k in ("name", "port", "targetPort", "protocol") if k in port}
            for port in (svc.get("spec") or {}).get("ports") or ()]


def desired_service(job: GenericJob, replica_type: str, rank: int) -> dict | None:
    """The Service of replica (type, rank), or None when the job has no spec.service."""
    if job.spec.service is None:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": replica_name(job.name, replica_type, rank),
            "namespace": job.namespace,
            "labels": replica_labels(job.name, job.uid, replica_type, rank),
            "ownerReferences": [owner_reference(job.name, job.uid)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": service_selector(job, replica_type, rank),
            "ports": service_ports(job),
            "publishNotReadyAddresses": True,
        },
    }
