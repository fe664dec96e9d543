"""Watch semantics over HTTP: resourceVersions, history, 410, bookmarks, timeouts, selectors."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from kubernetes_asyncio import watch

from .test_crud import pod


class RawWatch:
    """A watch stream read line by line with aiohttp, to see exactly what the server sends."""

    def __init__(self, cluster, path: str, **params):

        self.session = cluster.session()
        self.url = cluster.url + path
        self.params = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items()}
        self.params["watch"] = "true"
        self.response = None

    async def __aenter__(self):
        self.response = await self.session.get(self.url, params=self.params)
        return self

    async def __aexit__(self, *exc):
        self.response.close()
        await self.session.close()

    async def next(self, timeout: float = 5.0) -> dict:
        line = await asyncio.wait_for(self.response.content.readline(), timeout)
        if not line:
            raise EOFError("watch closed")
        return orjson.loads(line)

    async def until(self, predicate, timeout: float = 5.0) -> dict:
        async with asyncio.timeout(timeout):
            while True:
                ev = await self.next(timeout)
                if predicate(ev):
                    return ev

    async def closed(self, timeout: float = 5.0) -> list[dict]:
        seen = []
        async with asyncio.timeout(timeout):
            while True:
                try:
                    seen.append(await self.next(timeout))
                except EOFError:
                    return seen


PODS = "/api/v1/namespaces/default/pods"


async def test_watch_from_resource_version_replays_history(cluster, core):
    first = await core.create_namespaced_pod("default", pod("a"))
    await core.create_namespaced_pod("default", pod("b"))
    await core.delete_namespaced_pod("b", "default")
    async with RawWatch(cluster, PODS, resourceVersion=first.metadata.resource_version) as w:
        seen = [await w.next() for _ in range(3)]
        # An unscheduled pod is marked for deletion with no grace period, then removed.
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [
            ("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "b")]
        await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"x": "y"}}})
        live = await w.next()
        assert live["type"] == "MODIFIED" and live["object"]["metadata"]["labels"] == {"x": "y"}


async def test_watch_without_version_starts_with_current_state(cluster, core):
    await core.create_namespaced_pod("default", pod("a"))
    async with RawWatch(cluster, PODS) as w:
        ev = await w.next()
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "a"


async def test_send_initial_events_ends_with_marked_bookmark(cluster, core):
    await core.create_namespaced_pod("default", pod("a"))
    async with RawWatch(cluster, PODS, sendInitialEvents=True, allowWatchBookmarks=True,
                        resourceVersionMatch="NotOlderThan") as w:
        assert (await w.next())["type"] == "ADDED"
        mark = await w.next()
        assert mark["type"] == "BOOKMARK"
        assert mark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_too_old_resource_version_gets_410_error_event(cluster, core):
    first = await core.create_namespaced_pod("default", pod("a"))
    await core.create_namespaced_pod("default", pod("b"))
    cluster.expire_history()
    async with RawWatch(cluster, PODS, resourceVersion=first.metadata.resource_version) as w:
        ev = await w.next()
        assert ev["type"] == "ERROR"
        assert ev["object"]["code"] == 410 and ev["object"]["reason"] == "Expired"
        assert ev["object"]["message"].startswith("too old resource version")


async def test_a_fresh_server_replays_from_version_1_and_a_restarted_one_refuses_what_came_before(core):
    """A watch cache starts with its server, before the server's own first writes: a fresh server holds every event
    (a real 1.35 kube-apiserver on a new etcd replays a watch from resourceVersion 1, even once etcd is compacted:
    measured, tests/real's corpus_admission.py). A restarted one starts its cache afresh at the current revision."""
    from localcluster import LocalCluster

    async with LocalCluster() as fresh:
        created = fresh.api.create(fresh.registry.get("", "v1", "pods"), "default", pod("a"))
        async with RawWatch(fresh, PODS, resourceVersion="1") as w:
            ev = await w.next()
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["uid"] == created["metadata"]["uid"]
        await fresh.restart()
        started = fresh.watch_cache_rv
        assert started == fresh.store.rv > 1
        async with RawWatch(fresh, PODS, resourceVersion="1") as w:
            ev = await w.next()
        assert ev["type"] == "ERROR" and ev["object"]["code"] == 410 and ev["object"]["reason"] == "Expired"
        assert ev["object"]["message"] == f"too old resource version: 1 ({started})"
        created = fresh.api.create(fresh.registry.get("", "v1", "pods"), "default", pod("b"))
        async with RawWatch(fresh, PODS, resourceVersion=str(started)) as w:  # the window's start is served
            ev = await w.next()
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["uid"] == created["metadata"]["uid"]


async def test_bounded_history_compacts_old_versions(core):
    from localcluster import LocalCluster

    async with LocalCluster(history_size=5) as small:
        first = small.api.create(small.registry.get("", "v1", "pods"), "default", pod("p0"))
        for i in range(1, 10):
            small.api.create(small.registry.get("", "v1", "pods"), "default", pod(f"p{i}"))
        async with RawWatch(small, PODS, resourceVersion=first["metadata"]["resourceVersion"]) as w:
            assert (await w.next())["object"]["code"] == 410
        recent = str(small.store.rv - 2)
        async with RawWatch(small, PODS, resourceVersion=recent) as w:
            assert [(await w.next())["object"]["metadata"]["name"] for _ in range(2)] == ["p8", "p9"]


async def test_timeout_closes_with_a_bookmark(cluster, core):
    created = await core.create_namespaced_pod("default", pod("a"))
    async with RawWatch(cluster, PODS, resourceVersion=created.metadata.resource_version,
                        timeoutSeconds=1, allowWatchBookmarks=True) as w:
        events = await w.closed(timeout=5)
    assert events and events[-1]["type"] == "BOOKMARK"
    assert int(events[-1]["object"]["metadata"]["resourceVersion"]) >= int(created.metadata.resource_version)


async def test_periodic_bookmarks(cluster, core):
    created = await core.create_namespaced_pod("default", pod("a"))
    async with RawWatch(cluster, PODS, resourceVersion=created.metadata.resource_version,
                        allowWatchBookmarks=True) as w:
        ev = await w.next(timeout=5)  # bookmark_interval is 1 s in the test cluster
        assert ev["type"] == "BOOKMARK"


async def test_no_bookmarks_unless_asked(cluster, core):
    created = await core.create_namespaced_pod("default", pod("a"))
    async with RawWatch(cluster, PODS, resourceVersion=created.metadata.resource_version,
                        timeoutSeconds=2) as w:
        assert await w.closed(timeout=5) == []


async def test_selector_transitions_are_added_and_deleted(cluster, core):
    created = await core.create_namespaced_pod("default", pod("a", {"app": "x"}))
    async with RawWatch(cluster, PODS, resourceVersion=created.metadata.resource_version,
                        labelSelector="app=y") as w:
        await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"app": "y"}}})
        assert (await w.next())["type"] == "ADDED"
        await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"app": "z"}}})
        gone = await w.next()
        assert gone["type"] == "DELETED" and gone["object"]["metadata"]["labels"] == {"app": "y"}


async def test_namespace_scoped_watch(cluster, core):
    await core.create_namespace({"metadata": {"name": "other"}})
    async with RawWatch(cluster, PODS, resourceVersion=str(cluster.store.rv)) as w:
        await core.create_namespaced_pod("other", pod("elsewhere"))
        await core.create_namespaced_pod("default", pod("here"))
        assert (await w.next())["object"]["metadata"]["name"] == "here"


async def test_kubernetes_asyncio_watch_stream(core):
    created = await core.create_namespaced_pod("default", pod("a"))
    w = watch.Watch()
    seen = []

    async def consume():
        async for ev in w.stream(core.list_namespaced_pod, "default",
                                 resource_version=created.metadata.resource_version, timeout_seconds=5):
            seen.append((ev["type"], ev["object"].metadata.name))
            if len(seen) == 3:
                w.stop()

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)
    await core.create_namespaced_pod("default", pod("b"))
    await core.delete_namespaced_pod("b", "default")
    await asyncio.wait_for(task, 5)
    assert seen == [("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "b")]


async def test_slow_watcher_is_closed_not_buffered_forever(core):
    from localcluster import LocalCluster

    async with LocalCluster(watch_buffer=3) as small:
        async with RawWatch(small, PODS, resourceVersion=str(small.store.rv)) as w:
            await asyncio.sleep(0.05)
            rt = small.registry.get("", "v1", "pods")
            for i in range(10):  # written synchronously: the watcher cannot keep up
                small.api.create(rt, "default", pod(f"p{i}"))
            events = await w.closed(timeout=5)
        assert len(events) <= 4


@pytest.mark.parametrize("bad", ["abc", "-1"])
async def test_a_resource_version_that_is_not_a_number_is_the_cachers_500(cluster, bad):
    """As 1.35 answers it (tests/real's corpus compares it): the cacher's parse error, an internal error to the
    watch handler, with no reason (a list's is a 400)."""
    async with cluster.session() as s, s.get(cluster.url + PODS,
                                                   params={"watch": "1", "resourceVersion": bad}) as r:
        status = await r.json()
    assert (r.status, "reason" in status) == (500, False)
    assert status["message"] == f'resourceVersion: Invalid value: "{bad}": strconv.ParseUint: parsing "{bad}": ' \
                                "invalid syntax"


def test_the_history_keeps_past_versions_serialised_not_alive():
    """Superseded versions must not stay alive as dicts: the cyclic GC would walk every one of them."""
    import weakref

    from localcluster.storage.store import Store

    class Version(dict):  # a dict that can be weakly referenced
        pass

    store = Store(history_size=100)
    key = ("", "pods")
    first = Version(pod("p"), metadata={"name": "p", "namespace": "default", "resourceVersion": "1"})
    alive = weakref.ref(first)
    store.put(key, first, 1)
    del first
    store.put(key, {**pod("p"), "metadata": {"name": "p", "namespace": "default", "resourceVersion": "2"}}, 2)
    assert alive() is None
    replay = store.events_since(0, key)
    assert [(e.type, e.obj["metadata"]["resourceVersion"]) for e in replay] == [("ADDED", "1"), ("MODIFIED", "2")]
    assert replay[1].old["metadata"]["resourceVersion"] == "1"
