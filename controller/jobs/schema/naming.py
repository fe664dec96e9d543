"""Names, labels and owner references of everything the engine creates for a job of any kind.

Child names are deterministic (`[job]-[type]-[rank]`), so a stale cache can never make a second
pod: a repeated create fails with 409 AlreadyExists instead. Labels carry the kind's own prefix
(`KindApi.label_prefix`), so the children of two kinds never answer to each other's selectors.
"""

from __future__ import annotations

from apimachinery.meta import controller_uid
from controller.jobs.kind import KindApi

__all__ = ["controller_uid", "job_labels", "label", "owner_key", "owner_reference", "replica_labels", "replica_name",
           "replica_of"]


def label(api: KindApi, name: str) -> str:
    """`<prefix>/name`, `/uid`, `/replica-type` or `/rank`."""
    return f"{api.label_prefix}/{name}"



def replica_name(job_name: str, replica_type: str, rank: int) -> str:
    """The pod name and the Service name (the replica's host name) of one replica."""
    return f"{job_name}-{replica_type}-{rank}"


def job_labels(api: KindApi, job_name: str, job_uid: str) -> dict[str, str]:
    return {api.name_label: job_name, api.uid_label: job_uid}


def replica_labels(api: KindApi, job_name: str, job_uid: str, replica_type: str, rank: int) -> dict[str, str]:
    return {api.name_label: job_name, api.uid_label: job_uid, api.type_label: replica_type,
            api.rank_label: str(rank)}


def replica_of(api: KindApi, obj: dict) -> tuple[str, int] | None:
    """(type, rank) of a pod or Service the controller made, from its labels."""
    labels = obj["metadata"].get("labels") or {}
    replica_type, rank = labels.get(api.type_label), labels.get(api.rank_label)
    if replica_type is None or rank is None or not rank.isdigit():
        return None
    return replica_type, int(rank)


def owner_reference(api: KindApi, job_name: str, job_uid: str) -> dict:
    return {"apiVersion": api.api_version, "kind": api.kind, "name": job_name, "uid": job_uid,
            "controller": True, "blockOwnerDeletion": True}


def owner_key(api: KindApi, obj: dict) -> str | None:
    """The `namespace/name` of the job of this kind controlling a pod, Service or PodGroup."""
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller") and api.owns(ref):
            return f"{obj['metadata'].get('namespace', '')}/{ref['name']}"
    return None
