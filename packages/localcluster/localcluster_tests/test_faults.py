"""Fault injection: failing requests, latency, dropped watches, expired history, restarts, accounting."""

from __future__ import annotations

import json
import time

import aiohttp
import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from .test_crud import pod
from .test_watch import PODS, RawWatch


async def test_every_request_fails_with_500(cluster, core):
    cluster.faults.configure(error_rate=1.0, error_code=500)
    with pytest.raises(ApiException) as exc:
        await core.list_namespaced_pod("default")
    assert exc.value.status == 500
    assert json.loads(exc.value.body)["reason"] == "InternalError"
    cluster.faults.clear()
    await core.list_namespaced_pod("default")
    assert cluster.faults.injected["500"] == 1


async def test_429_carries_retry_after(cluster, core):
    cluster.faults.configure(error_rate=1.0, error_code=429, retry_after=3)
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod("default", pod("a"))
    assert exc.value.status == 429
    assert exc.value.headers["Retry-After"] == "3"
    assert json.loads(exc.value.body)["details"]["retryAfterSeconds"] == 3


async def test_410_as_a_watch_from_before_a_restart_gets(cluster):
    cluster.faults.configure(error_rate=1.0, error_code=410, verbs=["watch"])
    async with cluster.session() as session, session.get(
            cluster.url + PODS, params={"watch": "true", "resourceVersion": str(cluster.store.rv)}) as answer:
        body = await answer.json()
    assert answer.status == 410 and body["reason"] == "Expired" and "too old resource version" in body["message"]


async def test_a_share_of_requests_fail(cluster, core):
    cluster.faults.configure(error_rate=0.5)
    outcomes = []
    for _ in range(200):
        try:
            await core.list_namespaced_pod("default")
            outcomes.append(True)
        except ApiException:
            outcomes.append(False)
    failed = outcomes.count(False)
    assert 50 < failed < 150  # binomial(200, 0.5): far outside 5 sigma otherwise


async def test_faults_filter_by_verb_and_resource(cluster, core):
    cluster.faults.configure(error_rate=1.0, verbs=["create"], resources=["services"])
    await core.create_namespaced_pod("default", pod("a"))  # other resource: fine
    await core.list_namespaced_service("default")  # other verb: fine
    with pytest.raises(ApiException):
        await core.create_namespaced_service("default", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 1}]}})


async def test_discovery_is_never_faulted(cluster, core):
    cluster.faults.configure(error_rate=1.0)
    resources = await core.get_api_resources()
    assert resources.resources


async def test_latency(cluster, core):
    cluster.faults.configure(latency=0.2)
    started = time.monotonic()
    await core.list_namespaced_pod("default")
    assert time.monotonic() - started >= 0.2


async def test_drop_watches_closes_streams(cluster, core):
    async with RawWatch(cluster, PODS, resourceVersion=str(cluster.store.rv)) as w:
        await core.create_namespaced_pod("default", pod("a"))
        assert (await w.next())["type"] == "ADDED"
        assert cluster.drop_watches() == 1
        assert await w.closed() == []


async def test_hung_watch_sends_nothing(cluster, core):
    cluster.faults.configure(hang_watches=True)
    async with RawWatch(cluster, PODS, resourceVersion=str(cluster.store.rv), allowWatchBookmarks=True,
                        timeoutSeconds=1) as w:
        await core.create_namespaced_pod("default", pod("a"))
        assert await w.closed(timeout=5) == []


async def test_restart_keeps_state_and_versions(cluster, core):
    created = await core.create_namespaced_pod("default", pod("a"))
    async with RawWatch(cluster, PODS, resourceVersion=created.metadata.resource_version) as w:
        await cluster.restart(downtime=0.1)
        assert await w.closed() == []
    again = await core.read_namespaced_pod("a", "default")
    assert again.metadata.resource_version == created.metadata.resource_version
    later = await core.create_namespaced_pod("default", pod("b"))
    assert int(later.metadata.resource_version) > int(created.metadata.resource_version)


async def test_server_down_refuses_connections(cluster):
    await cluster._unlisten()
    try:
        async with cluster.session() as session:
            with pytest.raises(aiohttp.ClientConnectionError):
                await session.get(cluster.url + "/api/v1/namespaces/default/pods")
    finally:
        await cluster._listen()


async def test_admin_endpoints(cluster, core):
    async with cluster.session() as session:
        async with session.post(cluster.url + "/_localcluster/faults", json={"error_rate": 1.0}) as r:
            assert (await r.json())["config"]["error_rate"] == 1.0
        with pytest.raises(ApiException):
            await core.list_namespaced_pod("default")
        async with session.post(cluster.url + "/_localcluster/faults", json={}) as r:
            assert r.status == 200
        await core.list_namespaced_pod("default")
        async with session.post(cluster.url + "/_localcluster/expire-history") as r:
            assert (await r.json())["compactedResourceVersion"] == cluster.store.rv
        async with session.post(cluster.url + "/_localcluster/drop-watches") as r:
            assert "dropped" in await r.json()
        async with session.get(cluster.url + "/_localcluster/requests") as r:
            rows = (await r.json())["requests"]
        assert {"verb": "list", "resource": "pods", "code": 200} in [
            {k: row[k] for k in ("verb", "resource", "code")} for row in rows]
        async with session.post(cluster.url + "/_localcluster/restart", json={"downtime": 0.05}) as r:
            assert (await r.json())["restarting"] is True


async def test_request_accounting(cluster, core):
    await core.create_namespaced_pod("default", pod("a"))
    await core.read_namespaced_pod("a", "default")
    await core.patch_namespaced_pod_status("a", "default", {"status": {"phase": "Running"}})
    with pytest.raises(ApiException):
        await core.read_namespaced_pod("missing", "default")
    seen = cluster.faults.requests
    assert seen[("create", "pods", 201)] == 1
    assert seen[("get", "pods", 200)] == 1
    assert seen[("patch", "pods/status", 200)] == 1
    assert seen[("get", "pods", 404)] == 1


async def test_open_watches_are_counted_when_they_start(cluster, core):
    async with RawWatch(cluster, PODS, resourceVersion=str(cluster.store.rv)) as w:
        await core.create_namespaced_pod("default", pod("a"))
        await w.next()
        assert cluster.faults.requests[("watch", "pods", 200)] == 1
