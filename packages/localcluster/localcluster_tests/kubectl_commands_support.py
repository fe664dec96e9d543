"""The manifests and helpers the kubectl command tests share: pods, jobs, raw HTTP, watches."""

from __future__ import annotations

from pathlib import Path

import orjson

from .jobs import genericjob

ROOT = Path(__file__).resolve().parents[3]
GROUP, VERSION, PLURAL = "batch.tensorstack.dev", "v1beta1", "genericjobs"
GJ = f"genericjob.{GROUP}"
MERGE = "application/merge-patch+json"
CONTAINER = {"name": "c", "image": "busybox:1.36"}


def pod(name: str, labels: dict | None = None, **meta) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}, **meta},
            "spec": {"containers": [dict(CONTAINER)]}}


def job(name: str, replicas: int = 1) -> dict:
    return genericjob(name, replicas, template={"spec": {"containers": [dict(CONTAINER)]}})


async def http(cluster, method: str, path: str, body=None, content_type: str = "application/json") -> tuple[int, dict]:
    async with cluster.session(base_url=True) as session:
        data = orjson.dumps(body) if body is not None else None
        async with session.request(method, path, data=data, headers={"Content-Type": content_type}) as resp:
            return resp.status, await resp.json()


async def set_job_status(cluster, namespace: str, name: str, status: dict) -> None:
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/{name}/status"
    code, body = await http(cluster, "PATCH", path, {"status": status}, MERGE)
    assert code == 200, body


def stored(cluster, namespace: str, resource: tuple[str, str], name: str) -> dict | None:
    return cluster.store.get(resource, (namespace, name))


PODS, JOBS = ("", "pods"), (GROUP, PLURAL)


def new_watch(cluster, resource: tuple[str, str], namespace: str):
    """A predicate: has a watch of `resource` in `namespace` opened since this call (kubectl's, as each test has a
    namespace of its own; a watch of an earlier command may linger until the server notices it closed)."""
    before = set(cluster.hub.watchers.get(resource, ()))
    return lambda: any(w.namespace == namespace and w not in before and not w.closed
                       for w in cluster.hub.watchers.get(resource, ()))
