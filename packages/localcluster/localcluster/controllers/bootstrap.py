"""The objects a kube-apiserver makes itself when it starts (besides RBAC's, in access.py).

- The system PriorityClasses (the scheduling API's post-start hook): system-node-critical and
  system-cluster-critical.
- The `kubernetes` Service in `default` (the apiserver's bootstrap controller): the first address of
  the service range, port 443 (`https`) to the apiserver's secure port, 6443 by convention.
Each is made when missing, never changed afterwards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from ..api import Api

SYSTEM_PRIORITY_CLASSES = (
    ("system-node-critical", 2000001000, "Used for system critical pods that must not be moved from their current "
                                         "node."),
    ("system-cluster-critical", 2000000000, "Used for system critical pods that must run in the cluster, but can "
                                            "be moved to another node if necessary."),
)
KUBERNETES_SERVICE = {
    "apiVersion": "v1", "kind": "Service",
    "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
    "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "protocol": "TCP",
                                                  "targetPort": 6443}]},
}


def create_system_objects(api: Api) -> None:
    """Make those of the objects above that are missing."""
    classes = api.registry.builtin("scheduling.k8s.io", "v1", "priorityclasses")
    for name, value, description in SYSTEM_PRIORITY_CLASSES:
        if api.store.get(classes.storage_key, ("", name)) is None:
            api.create(classes, None, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                       "metadata": {"name": name}, "value": value, "description": description})
    services = api.registry.builtin("", "v1", "services")
    if api.store.get(services.storage_key, ("default", "kubernetes")) is None:
        api.create(services, "default", orjson.loads(orjson.dumps(KUBERNETES_SERVICE)))  # defaulting writes in it
