"""Helpers for the `process` pod runner's tests: pod manifests, waits on pods and processes, logs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kubernetes_asyncio.client.exceptions import ApiException

from localcluster import LocalCluster
from localcluster.testing import until

PY = sys.executable


def process_pod(name: str, *command: str, restart: str = "Never", env: list | None = None,
                init: list[dict] | None = None, grace: int | None = None, **meta) -> dict:
    spec: dict = {"restartPolicy": restart,
                  "containers": [{"name": "main", "image": "ignored", "command": list(command), "env": env or []}]}
    if init:
        spec["initContainers"] = init
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **meta}, "spec": spec}


def python(code: str, *args: str) -> list[str]:
    return [PY, "-c", code, *args]


async def wait_phase(core, name: str, *phases: str, timeout: float = 10.0):
    async def check():
        pod = await core.read_namespaced_pod(name, "default")
        return pod if pod.status.phase in phases else None

    return await until(check, timeout=timeout)


async def wait_pod(core, name: str, predicate, timeout: float = 10.0):
    async def check():
        pod = await core.read_namespaced_pod(name, "default")
        return pod if predicate(pod) else None

    return await until(check, timeout=timeout)


def running(pod) -> bool:
    statuses = pod.status.container_statuses or []
    return bool(statuses) and statuses[0].state.running is not None


def pid_of(pod, index: int = 0) -> int:
    return int(pod.status.container_statuses[index].container_id.removeprefix("process://"))


def alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def dead(pid: int, timeout: float = 5.0) -> None:
    async def check():
        return not alive(pid)

    await until(check, timeout=timeout)


async def log_text(core, name: str, **kwargs) -> str:
    """The pods/log subresource as raw text (the generated client would json-decode a numeric log)."""
    response = await core.read_namespaced_pod_log(name, "default", _preload_content=False, **kwargs)
    try:
        return (await response.read()).decode()
    finally:
        response.release()


async def log_contains(core, name: str, text: str, timeout: float = 10.0, **kwargs) -> str:
    async def check():
        try:
            out = await log_text(core, name, **kwargs)
        except ApiException as exc:
            if exc.status == 400:  # not started yet
                return None
            raise
        return out if text in out else None

    return await until(check, timeout=timeout)


def final_states(cluster: LocalCluster) -> dict[str, dict]:
    """Each pod's last stored state, captured as it is deleted."""
    finals: dict[str, dict] = {}

    def listen(ev) -> None:
        if ev.key == ("", "pods") and ev.type == "DELETED":
            finals[ev.obj["metadata"]["name"]] = ev.obj

    cluster.store.subscribe(listen)
    return finals


def config_error(pod) -> bool:
    statuses = pod.status.container_statuses or []
    return bool(statuses) and bool(statuses[0].state.waiting) and \
        statuses[0].state.waiting.reason == "CreateContainerConfigError"
