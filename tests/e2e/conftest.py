"""End-to-end fixtures: localcluster with the project's CRDs and the scripted pod runner, the controller in-process."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from controller.controller import Controller, ControllerConfig
from controller.models import GROUP, PLURAL, VERSION
from informers import BackoffPolicy, InformerOptions
from localcluster import LocalCluster
from localcluster.runner import SCRIPT_ANNOTATION

CRDS = Path(__file__).resolve().parents[2] / "manifests" / "crds"
FAST = InformerOptions(watch_timeout=(30.0, 60.0), watchdog_timeout=5.0, request_timeout=5.0,
                       backoff=BackoffPolicy(initial=0.02, cap=0.2, reset_after=5.0))
MERGE = "application/merge-patch+json"


@pytest.fixture
async def cluster():
    async with LocalCluster(runner="scripted", bookmark_interval=1.0) as running:
        running.apply_crds(CRDS)
        yield running


@pytest.fixture
def config() -> ControllerConfig:
    return ControllerConfig(workers=4, qps=0, informer_options=FAST, shutdown_timeout=5.0)


@pytest.fixture
async def controller(api_client, config):
    made = Controller(api_client, config)
    await made.start(sync_timeout=10)
    yield made
    await made.stop()


def genericjob(name: str, replicas: dict[str, int] | None = None, script=None, **spec) -> dict:
    """A GenericJob whose pods follow `script` (localcluster's scripted runner), `{type: count}` replicas."""
    annotations = {SCRIPT_ANNOTATION: json.dumps(script)} if script is not None else {}
    replica_specs = []
    for replica_type, count in (replicas or {"worker": 1}).items():
        replica_specs.append({
            "type": replica_type, "replicas": count,
            "template": {"metadata": {"annotations": annotations},
                         "spec": {"containers": [{"name": "main", "image": "busybox:1.36",
                                                  "command": ["sh", "-c", "echo $(type) $(rank)"]}]}},
        })
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "GenericJob", "metadata": {"name": name},
            "spec": {"replicaSpecs": replica_specs, **spec}}


class Jobs:
    """Submit jobs and wait on their status through the API, as a user with kubectl would."""

    def __init__(self, api_client):
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)

    async def submit(self, job: dict, namespace: str = "default") -> dict:
        return await self.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, job)

    async def get(self, name: str, namespace: str = "default") -> dict:
        return await self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)

    async def patch(self, name: str, body: dict, namespace: str = "default") -> dict:
        return await self.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name, body,
                                                                _content_type=MERGE)

    async def delete(self, name: str, namespace: str = "default") -> None:
        await self.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)

    async def wait(self, name: str, predicate, timeout: float = 10.0, namespace: str = "default") -> dict:
        """Poll the job until `predicate(job)` holds; on timeout, fail showing the last status."""
        job: dict = {}
        try:
            async with asyncio.timeout(timeout):
                while True:
                    job = await self.get(name, namespace)
                    if predicate(job):
                        return job
                    await asyncio.sleep(0.02)
        except TimeoutError:
            pytest.fail(f"job {name} did not reach the expected state in {timeout}s; status: "
                        f"{json.dumps(job.get('status'), indent=1)}")

    async def wait_phase(self, name: str, phase: str, timeout: float = 10.0, namespace: str = "default") -> dict:
        return await self.wait(name, lambda j: (j.get("status") or {}).get("phase") == phase, timeout, namespace)

    async def pods(self, name: str, namespace: str = "default") -> list:
        listed = await self.core.list_namespaced_pod(
            namespace, label_selector=f"genericjob.batch.tensorstack.dev/name={name}")
        return sorted(listed.items, key=lambda p: p.metadata.name)

    async def services(self, name: str, namespace: str = "default") -> list:
        listed = await self.core.list_namespaced_service(
            namespace, label_selector=f"genericjob.batch.tensorstack.dev/name={name}")
        return sorted(listed.items, key=lambda s: s.metadata.name)

    async def events(self, name: str, namespace: str = "default") -> list:
        listed = await self.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}")
        return listed.items


@pytest.fixture
def jobs(api_client) -> Jobs:
    return Jobs(api_client)
