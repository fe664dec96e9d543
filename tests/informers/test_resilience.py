"""The reflector against a misbehaving server: drops, 410s, restarts, 500s, 429s, hung watches, crashes."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest

from informers import PODS, InformerFactory
from localcluster.testing import until

from .support import Pods, Recorder, advance_version, requests, watch_down


async def start(factory, informer=None):
    informer = informer or factory.informer(PODS)
    rec = Recorder()
    rec.register(informer)
    factory.start()
    await factory.wait_for_sync(timeout=5)
    await until(lambda: informer.stats.watches >= 1, what="the first watch")
    return informer, rec


async def test_dropped_watch_resumes_without_a_relist(cluster, factory):
    informer, rec = await start(factory)
    assert cluster.drop_watches() == 1
    Pods(cluster).create("after-drop")
    await rec.wait_for_names("add", ["after-drop"])
    assert informer.stats.watches >= 2
    # Closed within a second of opening, before any event: counted as a failure, and backed off.
    assert informer.stats.errors == 1 and informer.stats.last_error.startswith("ShortWatch")
    assert requests(cluster, "list") == 1 and informer.stats.relists == 0


async def test_watch_closed_by_server_timeout_is_reopened_without_a_relist(cluster, rest_client, options):
    factory = InformerFactory(rest_client, options=dataclasses.replace(options, watch_timeout=(1.0, 1.5)))
    try:
        informer, rec = await start(factory)
        await until(lambda: informer.stats.watches >= 3, timeout=10, what="three watches")
        Pods(cluster).create("a")
        await rec.wait_for_names("add", ["a"])
        assert requests(cluster, "list") == 1 and informer.stats.errors == 0
    finally:
        await factory.stop()


def relist_queries(cluster) -> list[dict]:
    """The query of every pod LIST after the first (the informer's relists)."""
    return [record.query for record in cluster.faults.lists if record.resource == "pods"][1:]


async def test_expired_history_makes_the_watch_relist(cluster, factory):
    informer, rec = await start(factory)
    pods = Pods(cluster)
    pods.create("a")
    await rec.wait_for_names("add", ["a"])
    last_seen = informer.resource_version
    async with watch_down(cluster):
        pods.create("b")
        advance_version(cluster)
        cluster.expire_history()
    await rec.wait_for_names("add", ["b"])
    # One relist, at the last version and without a limit: the watch cache serves the latest state
    # (with a limit it would be an etcd read at that compacted revision, and a 410).
    assert informer.stats.relists == 1 and requests(cluster, "list") == 2
    assert relist_queries(cluster) == [{"resourceVersion": last_seen}]
    assert requests(cluster, "list", code=410) == 0
    # The 410 came as an ERROR event in a 200 response, as from the apiserver's watch cache.
    assert "410" in informer.stats.last_error
    pods.create("c")  # and the watch resumes from the relist's version
    await rec.wait_for_names("add", ["c"])


async def test_server_restart_relists_once_at_the_current_state(cluster, factory):
    """Issue 12, fault 1: after an apiserver restart every watch from an older version gets 410 while etcd
    still serves paginated lists at that version; the reflector must come back to the current state at once."""
    pods = Pods(cluster)
    pods.create("a")
    pods.create("b")
    informer, rec = await start(factory)
    last_seen = informer.resource_version
    restart = asyncio.create_task(cluster.restart(downtime=1.0))
    await until(lambda: not cluster.serving, what="the server to stop")
    # Changed during the outage (through etcd, as another apiserver or the kubelet's would be).
    pods.label("a", {"changed": "during-outage"})
    pods.delete("b")
    pods.create("while-down")
    await restart
    # The server is back with its watch cache reset at the latest revision, etcd's history intact: a
    # paginated list at the informer's version would still be answered with the state before the outage.
    assert int(last_seen) < cluster.watch_cache_rv
    await rec.wait_for(lambda r: "a" in r.names("update") and "b" in r.names("delete")
                       and "while-down" in r.names("add"), timeout=5)
    assert informer.lister.get("default/a")["metadata"]["labels"] == {"changed": "during-outage"}
    assert informer.lister.get("default/b") is None
    assert informer.stats.relists == 1
    assert relist_queries(cluster) == [{"resourceVersion": last_seen}]  # one request, served by the watch cache
    # No loop: the watch opened after the relist works, and nothing relists again.
    pods.create("after")
    await rec.wait_for_names("add", ["after"])
    assert informer.stats.relists == 1 and requests(cluster, "list") == 2
    assert informer.healthy()


async def test_a_version_the_server_never_reached_relists_the_latest_state(cluster, factory):
    """etcd restored from a backup: the server is behind the informer. client-go's relist at that version
    is refused (504 too large), so the version is unavailable and it lists the latest state instead."""
    informer, rec = await start(factory)
    ahead = str(cluster.store.rv + 1000)
    informer._reflector.resource_version = ahead
    cluster.drop_watches()
    await until(lambda: informer.stats.relists == 1, what="the relist")
    queries = relist_queries(cluster)
    assert queries == [{"resourceVersion": ahead}, {"limit": str(factory.options.page_size)}]
    assert requests(cluster, "list", code=504) == 1
    Pods(cluster).create("a")
    await rec.wait_for_names("add", ["a"])
    assert informer.stats.relists == 1 and int(informer.resource_version) < int(ahead)


async def test_500s_on_list_and_watch(cluster, factory):
    pods = Pods(cluster)
    for i in range(20):
        pods.create(f"p{i}")
    cluster.faults.configure(error_rate=1.0, verbs=["list"])
    informer = factory.informer(PODS)
    rec = Recorder()
    rec.register(informer)
    factory.start()
    try:
        await until(lambda: cluster.faults.injected["500"] >= 3, what="failed lists")
    finally:
        cluster.faults.clear()
    await factory.wait_for_sync(timeout=10)
    assert len(informer.store) == 20 and informer.stats.errors >= 3 and informer.stats.lists == 1

    async with watch_down(cluster):
        await until(lambda: cluster.faults.injected["500"] >= 4, what="failing watches")
        pods.create("later")
    await rec.wait_for_names("add", ["later"])
    assert informer.stats.relists == 0
    assert "500" in informer.stats.last_error


async def test_429_waits_for_retry_after(cluster, factory):
    informer, rec = await start(factory)
    cluster.faults.configure(error_rate=1.0, error_code=429, retry_after=1, verbs=["watch"])
    cluster.drop_watches()
    try:
        await until(lambda: requests(cluster, "watch", code=429) == 1, what="a 429")
        refused_at = time.monotonic()
    finally:
        cluster.faults.clear()
    watches = informer.stats.watches
    await until(lambda: informer.stats.watches > watches, what="the next watch")
    # The backoff alone would retry within 0.2 s; Retry-After asked for a second.
    assert time.monotonic() - refused_at >= 0.8
    assert requests(cluster, "watch", code=429) == 1
    Pods(cluster).create("a")
    await rec.wait_for_names("add", ["a"])


@pytest.mark.parametrize("watchdog", [1.5])  # bookmarks come every second: the watchdog must allow that
async def test_hung_watch_is_replaced_by_the_watchdog(cluster, rest_client, options, watchdog):
    factory = InformerFactory(rest_client, options=dataclasses.replace(options, watchdog_timeout=watchdog))
    try:
        informer, rec = await start(factory)
        cluster.faults.configure(hang_watches=True)
        cluster.drop_watches()
        Pods(cluster).create("a")  # the hung watch never sends this
        await until(lambda: informer.stats.watchdog_timeouts >= 1, timeout=5, what="the watchdog")
        cluster.faults.clear()
        await rec.wait_for_names("add", ["a"], timeout=5)
        assert informer.stats.relists == 0
        assert "no data on the watch" in informer.stats.last_error
    finally:
        await factory.stop()


async def test_crashed_informer_is_restarted_and_reported(cluster, factory):
    crashes = []

    def transform(obj: dict) -> dict:
        if obj["metadata"]["labels"].get("crash") == "yes" and not crashes:
            crashes.append(obj["metadata"]["name"])
            raise RuntimeError("transform bug")
        return obj

    pods = Pods(cluster)
    pods.create("a")
    informer, rec = await start(factory, factory.informer(PODS, transform=transform))
    pods.create("b", labels={"crash": "yes"})  # the event that kills the reflector task
    await rec.wait_for_names("add", ["b"], timeout=5)
    assert crashes == ["b"]
    status = informer.status()
    assert status.restarts == 1 and status.running and status.synced and status.healthy
    assert status.last_error == "RuntimeError: transform bug"
    assert informer.stats.relists == 1  # the restart relisted: that is how "b" arrived
    assert rec.names("add") == ["a", "b"]  # and nothing was delivered twice
    assert factory.healthy()


async def test_an_informer_that_keeps_crashing_is_not_healthy(cluster, factory):
    def transform(obj: dict) -> dict:
        if obj["metadata"]["name"] == "poison":
            raise ValueError("cannot digest this one")
        return obj

    pods = Pods(cluster)
    pods.create("a")
    informer, rec = await start(factory, factory.informer(PODS, transform=transform))
    pods.create("poison")  # every relist meets it again
    await until(lambda: informer.stats.restarts >= 3, what="repeated crashes")
    assert not informer.healthy() and not factory.healthy()
    assert informer.status().last_error == "ValueError: cannot digest this one"
    pods.delete("poison")
    pods.create("b")
    await rec.wait_for_names("add", ["b"], timeout=5)
    assert informer.healthy()
    assert "poison" not in rec.names("add")
