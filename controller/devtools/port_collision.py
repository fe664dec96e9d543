"""A replica of a local run that failed because the port it listens on was taken, said in its failure line.

Where pods of a local run share this machine's network (no pod network here: docs/local.md, "Networking";
or `hostNetwork: true`), their `status.podIP` is 127.0.0.1 and two replicas that listen on the same port
collide, the second failing with `Address already in use` (EADDRINUSE, errno 98) in its log. Every
TensorFlow task listens on its own TF_CONFIG address, so any TensorFlowTrainingJob with two tasks on one
port meets it. A cluster gives each pod its own IP, so this is a limit of such runs, not of the job:

    worker-1 Failed (port 2222 is already in use on this machine: local runs share one network, so replicas
                     listening on the same port collide; exit 1)

A pod with an address of its own collides only with what listens on that port at every address of this
machine (a program of yours, a pod on the host's network) or inside the pod itself, and is told so.

The port named is one the pod declares (a container port, or its own address in TF_CONFIG) that another pod
of the run declares too, else the pod's first declared port.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

IN_USE = re.compile(r"address already in use|EADDRINUSE|errno 98\b", re.IGNORECASE)
LOG_LINES = 50  # the tail of the failed container's log that is searched
LIMIT = "local runs share one network, so replicas listening on the same port collide"
OWN_ADDRESS = "a program of this machine listens on it at every address, or another container of the pod does"
HOST_IP = "127.0.0.1"


def failed_container(pod: dict) -> str | None:
    """The name of the first container of the pod that terminated with a non-zero exit code."""
    status = pod.get("status") or {}
    for entry in (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())):
        terminated = (entry.get("state") or {}).get("terminated") or {}
        if terminated.get("exitCode") not in (None, 0):
            return entry.get("name")
    return None


def declared_ports(pod: dict) -> list[int]:
    """The ports the pod says it listens on: its containers' ports, then its own address in TF_CONFIG."""
    ports: list[int] = []
    for container in (pod.get("spec") or {}).get("containers") or ():
        ports += [p["containerPort"] for p in container.get("ports") or () if isinstance(p.get("containerPort"), int)]
        for env in container.get("env") or ():
            if env.get("name") == "TF_CONFIG" and (own := _tf_config_port(env.get("value") or "")) is not None:
                ports.append(own)
    return list(dict.fromkeys(ports))


def _tf_config_port(value: str) -> int | None:
    try:
        config = json.loads(value)
        task = config["task"]
        address = config["cluster"][task["type"]][int(task["index"])]
        return int(address.rsplit(":", 1)[1])
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None


def collision(pod: dict, log: str, others: Iterable[dict]) -> str:
    """The phrase for a pod whose log says a port was in use ("" when it does not)."""
    if not IN_USE.search(log):
        return ""
    own = declared_ports(pod)
    uid = pod["metadata"].get("uid")
    theirs = {p for other in others if other["metadata"].get("uid") != uid for p in declared_ports(other)}
    port = next((p for p in own if p in theirs), own[0] if own else None)
    what = f"port {port}" if port is not None else "a port it listens on"
    if ((pod.get("status") or {}).get("podIP") or HOST_IP) != HOST_IP:
        return f"{what} is already in use: {OWN_ADDRESS}"
    return f"{what} is already in use on this machine: {LIMIT}"
