"""TF_CONFIG: how each replica of a TensorFlowTrainingJob finds the others (TensorFlow's cluster spec).

    {"cluster": {TYPE: ["JOB-TYPE-I.NAMESPACE.svc:PORT", ...], ...},
     "task": {"type": TYPE, "index": I}, "environment": "cloud"}

`cluster` lists the chief, worker and ps replicas in rank order, never the evaluator (TensorFlow's
rule: it is not part of the training cluster), and no type without replicas; the evaluator still
gets its own `task`. PORT is the `tensorflow` container's port named `tfjob-port`, else 2222. Every
replica has a headless Service named like its pod, so these host names resolve.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

CONTAINER = "tensorflow"  # the training container: every template has one
PORT_NAME = "tfjob-port"
DEFAULT_PORT = 2222
EVALUATOR = "evaluator"
ENV = "TF_CONFIG"


def cluster(job_name: str, namespace: str, replicas: Iterable[tuple[str, int, int]]) -> dict[str, list[str]]:
    """The cluster spec from (type, count, port) per replica type, in the order given."""
    return {replica_type: [f"{job_name}-{replica_type}-{rank}.{namespace}.svc:{type_port}" for rank in range(count)]
            for replica_type, count, type_port in replicas if replica_type != EVALUATOR and count > 0}


def tf_config(spec: dict[str, list[str]], replica_type: str, rank: int) -> str:
    """The value for one replica, spelled as the specification writes it (json.dumps's `, ` and `: `)."""
    return json.dumps({"cluster": spec, "task": {"type": replica_type, "index": rank}, "environment": "cloud"})
