"""Names, labels and owner references of everything a GenericJob creates.

Child names are deterministic (`[job]-[type]-[rank]`), so a stale cache can never make a second
pod: a repeated create fails with 409 AlreadyExists instead.
"""

from __future__ import annotations

from controller.kinds.genericjob.models import API_VERSION, KIND

LABEL_PREFIX = "genericjob.batch.tensorstack.dev"
LABEL_JOB_NAME = f"{LABEL_PREFIX}/name"
LABEL_JOB_UID = f"{LABEL_PREFIX}/uid"
LABEL_REPLICA_TYPE = f"{LABEL_PREFIX}/replica-type"
LABEL_RANK = f"{LABEL_PREFIX}/rank"


def replica_name(job_name: str, replica_type: str, rank: int) -> str:
    """The pod name and the Service name (the replica's host name) of one replica."""
    return f"{job_name}-{replica_type}-{rank}"


def job_labels(job_name: str, job_uid: str) -> dict[str, str]:
    return {LABEL_JOB_NAME: job_name, LABEL_JOB_UID: job_uid}


def replica_labels(job_name: str, job_uid: str, replica_type: str, rank: int) -> dict[str, str]:
    return {**job_labels(job_name, job_uid), LABEL_REPLICA_TYPE: replica_type, LABEL_RANK: str(rank)}


def replica_of(obj: dict) -> tuple[str, int] | None:
    """(type, rank) of a pod or Service the controller made, from its labels."""
    labels = obj["metadata"].get("labels") or {}
    replica_type, rank = labels.get(LABEL_REPLICA_TYPE), labels.get(LABEL_RANK)
    if replica_type is None or rank is None or not rank.isdigit():
        return None
    return replica_type, int(rank)


def owner_reference(job_name: str, job_uid: str) -> dict:
    return {"apiVersion": API_VERSION, "kind": KIND, "name": job_name, "uid": job_uid,
            "controller": True, "blockOwnerDeletion": True}


def controller_uid(obj: dict) -> str | None:
    """The uid of the object's controlling owner, if any."""
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return ref.get("uid")
    return None
