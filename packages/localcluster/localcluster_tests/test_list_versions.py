"""LIST at a resourceVersion, and the watch cache across a restart, as kube-apiserver (1.24+) serves them.

A paginated (or Exact) list at an explicit version is read from etcd at exactly that revision; one
without a limit, or at "0", is served by the watch cache with the latest state. A restart keeps etcd
(objects, versions, history) and starts the watch cache afresh at the latest revision.
"""

from __future__ import annotations

import pytest

from localcluster.testing import until

from .test_crud import pod
from .test_watch import PODS, RawWatch


async def get_list(cluster, **params) -> tuple[int, dict]:
    async with cluster.session() as session, session.get(cluster.url + PODS, params=params) as answer:
        return answer.status, await answer.json()


def names(body: dict) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


@pytest.fixture
def pods(cluster):
    """In-process writes to pods; each returns the new resourceVersion as a string."""
    rt = cluster.registry.get("", "v1", "pods")

    class Writes:
        def create(self, name: str, labels: dict | None = None) -> str:
            return cluster.api.create(rt, "default", pod(name, labels))["metadata"]["resourceVersion"]

        def label(self, name: str, labels: dict) -> str:
            return cluster.api.patch(rt, "default", name, "application/merge-patch+json",
                                     {"metadata": {"labels": labels}})["metadata"]["resourceVersion"]

        def delete(self, name: str) -> None:
            cluster.api.delete(rt, "default", name, {"gracePeriodSeconds": 0})

    return Writes()


async def test_paginated_list_at_a_version_is_the_state_at_that_revision(cluster, pods):
    pods.create("a", {"app": "x"})
    pods.create("b")
    pods.create("c")
    then = pods.label("a", {"app": "x", "v": "1"})
    pods.create("d")  # created, changed and deleted after `then`: all undone in the snapshot
    pods.label("a", {"app": "y"})
    pods.delete("b")

    status, first = await get_list(cluster, resourceVersion=then, limit="2")
    assert status == 200 and first["metadata"]["resourceVersion"] == then
    assert names(first) == ["a", "b"] and first["items"][0]["metadata"]["labels"] == {"app": "x", "v": "1"}
    assert first["metadata"]["remainingItemCount"] == 1
    status, rest = await get_list(cluster, limit="2", **{"continue": first["metadata"]["continue"]})
    assert status == 200 and names(rest) == ["c"] and rest["metadata"]["resourceVersion"] == then

    # Selectors apply to the objects as they were: "a" matched app=x then, not now.
    status, selected = await get_list(cluster, resourceVersion=then, limit="10", labelSelector="app=x")
    assert names(selected) == ["a"]
    # resourceVersionMatch=Exact reads at that revision too, with or without a limit.
    status, exact = await get_list(cluster, resourceVersion=then, resourceVersionMatch="Exact")
    assert status == 200 and names(exact) == ["a", "b", "c"] and "continue" not in exact["metadata"]


async def test_list_at_a_version_without_limit_is_served_by_the_watch_cache(cluster, pods):
    then = pods.create("a")
    pods.create("b")
    latest = str(cluster.store.rv)
    for params in ({"resourceVersion": then},
                   {"resourceVersion": then, "resourceVersionMatch": "NotOlderThan"}):
        status, body = await get_list(cluster, **params)
        assert status == 200 and names(body) == ["a", "b"] and body["metadata"]["resourceVersion"] == latest
    # NotOlderThan with a limit: etcd's latest state, paginated.
    status, body = await get_list(cluster, resourceVersion=then, resourceVersionMatch="NotOlderThan", limit="1")
    assert names(body) == ["a"] and body["metadata"]["resourceVersion"] == latest and body["metadata"]["continue"]


async def test_list_at_version_0_is_the_latest_state_whole(cluster, pods):
    for name in "abc":
        pods.create(name)
    status, body = await get_list(cluster, resourceVersion="0", limit="1")  # the watch cache ignores the limit
    assert status == 200 and names(body) == ["a", "b", "c"] and "continue" not in body["metadata"]
    status, body = await get_list(cluster, limit="1")  # "" is a consistent read from etcd: paginated
    assert names(body) == ["a"] and body["metadata"]["continue"]


async def test_paginated_list_at_a_compacted_version_is_410_expired(cluster, pods):
    then = pods.create("a")
    pods.create("b")
    cluster.expire_history()
    for params in ({"limit": "10"}, {"resourceVersionMatch": "Exact"}):
        status, body = await get_list(cluster, resourceVersion=then, **params)
        assert status == 410 and body["reason"] == "Expired"
        assert body["message"] == "The resourceVersion for the provided list is too old."
    status, body = await get_list(cluster, resourceVersion=then)  # the watch cache still answers
    assert status == 200 and names(body) == ["a", "b"]


async def test_a_version_the_server_has_not_reached_is_504_too_large(cluster, pods):
    pods.create("a")
    ahead = str(cluster.store.rv + 10)
    for params in ({}, {"limit": "10"}, {"resourceVersionMatch": "Exact"}):
        status, body = await get_list(cluster, resourceVersion=ahead, **params)
        assert status == 504 and body["reason"] == "Timeout"
        assert body["message"].startswith("Too large resource version")
        assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    async with RawWatch(cluster, PODS, resourceVersion=ahead) as w:
        event = await w.next()
        assert event["type"] == "ERROR" and event["object"]["code"] == 504
        assert await w.closed() == []


async def test_invalid_list_options(cluster, pods):
    then = pods.create("a")
    status, body = await get_list(cluster, resourceVersionMatch="NotOlderThan")
    assert status == 422 and "resourceVersionMatch is forbidden unless resourceVersion is provided" in body["message"]
    status, body = await get_list(cluster, resourceVersion="0", resourceVersionMatch="Exact")
    assert status == 422 and 'forbidden for resourceVersion "0"' in body["message"]
    status, body = await get_list(cluster, resourceVersion=then, resourceVersionMatch="Newest")
    assert status == 422 and "Unsupported value" in body["message"]
    pods.create("b")
    _, first = await get_list(cluster, limit="1")
    status, body = await get_list(cluster, resourceVersion=then, **{"continue": first["metadata"]["continue"]})
    assert status == 400 and body["message"] == "specifying resource version is not allowed when using continue"


async def test_restart_resets_the_watch_cache_and_keeps_etcd(cluster, pods):
    then = pods.create("a")
    pods.create("b")
    async with RawWatch(cluster, PODS, resourceVersion=then) as w:
        assert (await w.next())["object"]["metadata"]["name"] == "b"
        await cluster.restart(downtime=0.1)
        assert await w.closed() == []
    pods.label("a", {"after": "restart"})  # a change after the restart: the watch cache has it
    latest = str(cluster.store.rv)
    assert cluster.watch_cache_rv == int(latest) - 1

    # Any watch from before the restart: 410, though etcd's history still has every event.
    async with RawWatch(cluster, PODS, resourceVersion=then) as w:
        event = await w.next()
        assert event["type"] == "ERROR" and event["object"]["code"] == 410
        assert event["object"]["message"] == f"too old resource version: {then} ({cluster.watch_cache_rv})"
    # From the cache's first version on, the watch replays what followed.
    async with RawWatch(cluster, PODS, resourceVersion=str(cluster.watch_cache_rv)) as w:
        event = await w.next()
        assert event["type"] == "MODIFIED" and event["object"]["metadata"]["labels"] == {"after": "restart"}

    # etcd still serves a paginated list at the old version - the state before the change - ...
    status, body = await get_list(cluster, resourceVersion=then, limit="10")
    assert status == 200 and body["metadata"]["resourceVersion"] == then
    assert names(body) == ["a"] and body["items"][0]["metadata"]["labels"] == {}
    # ... the watch cache the latest state without a limit ...
    status, body = await get_list(cluster, resourceVersion=then)
    assert body["metadata"]["resourceVersion"] == latest and names(body) == ["a", "b"]
    assert body["items"][0]["metadata"]["labels"] == {"after": "restart"}
    # ... until compaction: then the paginated list at that version is 410 too.
    cluster.expire_history()
    status, body = await get_list(cluster, resourceVersion=then, limit="10")
    assert status == 410


async def test_restart_over_http_resets_the_watch_cache(cluster, pods):
    then = pods.create("a")
    pods.create("b")
    async with cluster.session() as session:
        async with session.post(cluster.url + "/_localcluster/restart", json={"downtime": 0.1}) as answer:
            assert answer.status == 200
    await until(lambda: cluster.serving and cluster.watch_cache_rv == cluster.store.rv, what="the restart")
    async with cluster.session() as session, session.get(cluster.url + "/_localcluster/stats") as answer:
        stats = await answer.json()
    assert stats["watchCacheResourceVersion"] == stats["resourceVersion"] > int(then)
    async with RawWatch(cluster, PODS, resourceVersion=then) as w:
        event = await w.next()
        assert event["type"] == "ERROR" and event["object"]["code"] == 410
    status, body = await get_list(cluster, resourceVersion=then, limit="10")
    assert status == 200 and names(body) == ["a"]  # etcd at that revision: "b" did not exist yet
