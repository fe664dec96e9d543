"""localcluster's one Node: what its kubelet registers, and what `kubectl get nodes` prints of a Node.

A cluster whose pod runner runs pods (scripted, process) has a kubelet: at start it registers the
Node `localnode` (runner.NODE), Ready, as a kubelet's node status sets it (conditions, addresses,
capacity and allocatable of this host, nodeInfo with the kubelet's version), and the runner binds
every pod to it. With the `none` runner there is no kubelet and so no Node, as a cluster with no
nodes: pods stay Pending. Pods whose `spec.nodeName` names any other node stay Pending too: the
scheduler never looks at a bound pod and no kubelet claims it. (A real cluster's PodGC deletes such
a pod some 40 s later, once it sees the node does not exist; localcluster keeps it.)
"""

from __future__ import annotations

import os
import platform
import uuid
from typing import TYPE_CHECKING

from ..discovery.documents import SERVER_VERSION
from ..errors import ApiError

if TYPE_CHECKING:
    from ..api import Api

NODE = "localnode"  # the one node, which the pod runners bind pods to

NODES = ("", "nodes")
ROLE_PREFIX = "node-role.kubernetes.io/"
CONDITIONS = (  # the kubelet's node conditions when all is well: type, status, reason, message
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def _memory_ki() -> str:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return line.split()[1] + "Ki"
    except OSError:
        pass
    return "8Gi"


def _arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def node_object(name: str = NODE) -> dict:
    """The Node a kubelet on this host registers and then reports on, Ready."""
    from ..api import now_rfc3339

    now = now_rfc3339()
    arch, system = _arch(), platform.system().lower()
    capacity = {"cpu": str(os.cpu_count() or 1), "ephemeral-storage": "100Gi", "hugepages-1Gi": "0",
                "hugepages-2Mi": "0", "memory": _memory_ki(), "pods": "110"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"beta.kubernetes.io/arch": arch, "beta.kubernetes.io/os": system, "kubernetes.io/arch": arch,
                       "kubernetes.io/hostname": name, "kubernetes.io/os": system},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
        },
        "spec": {},
        "status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
            "allocatable": dict(capacity),
            "capacity": capacity,
            "conditions": [{"type": t, "status": s, "lastHeartbeatTime": now, "lastTransitionTime": now,
                            "reason": r, "message": m} for t, s, r, m in CONDITIONS],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": uuid.uuid4().hex, "systemUUID": str(uuid.uuid4()), "bootID": str(uuid.uuid4()),
                         "kernelVersion": platform.release(), "osImage": "localcluster",
                         "containerRuntimeVersion": "localcluster://" + SERVER_VERSION["gitVersion"].lstrip("v"),
                         "kubeletVersion": SERVER_VERSION["gitVersion"], "kubeProxyVersion": "",
                         "operatingSystem": system, "architecture": arch},
        },
    }


def register(api: Api, name: str = NODE) -> None:
    """As a kubelet registers its node at start: create it, or report on it again if it exists."""
    rt = api.registry.builtin("", "v1", "nodes")
    node = node_object(name)
    try:
        created = api.create(rt, None, {k: v for k, v in node.items() if k != "status"})
    except ApiError as err:
        if err.code != 409:
            raise
        created = api.get(rt, None, name)
    api.system_write(rt, {**created, "status": node["status"]}, "kubelet", "status")


# --- kubectl get nodes: printNode of kubernetes/pkg/printers/internalversion ---------------------


def status_cell(node: dict) -> str:
    conditions = {c.get("type"): c.get("status") for c in (node.get("status") or {}).get("conditions") or ()}
    ready = conditions.get("Ready")
    out = ["Unknown" if ready is None else "Ready" if ready == "True" else "NotReady"]
    if (node.get("spec") or {}).get("unschedulable"):
        out.append("SchedulingDisabled")
    return ",".join(out)


def roles_cell(node: dict) -> str:
    roles = set()
    for key, value in (node["metadata"].get("labels") or {}).items():
        if key.startswith(ROLE_PREFIX) and key != ROLE_PREFIX:
            roles.add(key[len(ROLE_PREFIX):])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def address_cell(kind: str):
    def cell(node: dict) -> str:
        found = [a.get("address") for a in (node.get("status") or {}).get("addresses") or () if a.get("type") == kind]
        return found[0] if found else "<none>"
    return cell


def info_cell(field: str):
    """OS-Image, Kernel-Version, Container-Runtime: `<unknown>` when the kubelet did not say."""
    def cell(node: dict) -> str:
        value = ((node.get("status") or {}).get("nodeInfo") or {}).get(field)
        return value if value else "<unknown>"
    return cell
