"""A GenericJob as kubectl would send it: the repository's CRDs (manifests/crds) are localcluster's largest real
schemas, so its tests store such jobs, written here as plain objects (localcluster knows no controller)."""

from __future__ import annotations

import copy
from typing import Any


def genericjob(name: str, workers: int, *, template: dict | None = None,
               labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A GenericJob named `name` with one replica type, `worker`, of `workers` replicas."""
    replica: dict[str, Any] = {"type": "worker", "replicas": workers}
    if template is not None:
        replica["template"] = copy.deepcopy(template)
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "metadata": metadata,
            "spec": {"replicaSpecs": [replica]}}
