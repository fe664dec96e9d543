"""The watch cache's window per resource (storage/watch_cache.py), as the apiserver's cacher keeps it: a busy
resource keeps at least 75 s of events, any resource its last 100, and a watch from before the window is answered
410. Time is a fake clock the test moves: no test waits 75 s."""

from __future__ import annotations

import asyncio
import contextlib
import time

from localcluster import LocalCluster
from localcluster.storage.watch import channel_size
from localcluster.storage.watch_cache import FRESH, LOWER, UPPER, Window
from localcluster.validation import parse_field_selector as fields

from .test_watch import RawWatch

PODS = "/api/v1/namespaces/default/pods"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"


def filled(window: Window, count: int, at: float, first_rv: int = 1) -> int:
    for rv in range(first_rv, first_rv + count):
        window.add(rv, at)
    return first_rv + count


def test_a_full_window_of_fresh_events_doubles_instead_of_dropping_one():
    window = Window()
    following = filled(window, LOWER, at=0.0)
    assert (window.capacity, window.oldest_start()) == (LOWER, 0)
    window.add(following, FRESH - 1)
    assert window.capacity == 2 * LOWER and not window.removed and window.oldest_start() == 0


def test_a_full_window_whose_oldest_event_is_stale_drops_it():
    window = Window()
    following = filled(window, LOWER, at=0.0)
    window.add(following, FRESH + 1)
    assert window.capacity == LOWER and window.removed
    assert window.oldest_start() == 1  # the second event kept: a watch from version 1 has seen the first
    window.add(following + 1, FRESH + 1)
    assert window.oldest_start() == 2


def test_a_window_shrinks_once_its_newest_quarter_is_stale_and_never_below_its_bounds():
    window = Window()
    following = filled(window, 4 * LOWER, at=0.0)  # grew: 100, 200, 400
    assert window.capacity == 4 * LOWER
    window.add(following, FRESH + 1)  # the newest quarter (events at 0) is stale: halves, then drops one
    assert window.capacity == 2 * LOWER and len(window.records) == 2 * LOWER
    assert window.oldest_start() == following - 2 * LOWER
    quiet = Window()
    following = filled(quiet, LOWER, at=0.0)
    quiet.add(following, 10 * FRESH)  # stale throughout: it would halve, but not below the lower bound
    assert quiet.capacity == len(quiet.records) == LOWER and quiet.oldest_start() == 1
    busy = Window()
    busy.capacity = UPPER
    filled(busy, UPPER + 1, at=0.0)
    assert busy.capacity == UPPER and busy.removed  # nor above the upper one: the oldest goes


async def test_a_busy_resource_keeps_75_s_of_events_and_a_watch_from_before_the_window_gets_410():
    async with LocalCluster() as cluster:
        now = [time.monotonic()]  # the events the server wrote at its start were recorded on the real clock
        cluster.api.watch_cache.clock = lambda: now[0]
        secrets, configmaps = cluster.registry.get("", "v1", "secrets"), cluster.registry.get("", "v1", "configmaps")
        quiet = cluster.api.get(configmaps, "default", "kube-root-ca.crt")  # written at the server's start

        def secret(name: str) -> dict:
            return cluster.api.create(secrets, "default", {"metadata": {"name": name}})

        made = [secret(f"s-{i}") for i in range(150)]  # no Secret before: the window holds just these
        first = int(made[0]["metadata"]["resourceVersion"])
        async with RawWatch(cluster, SECRETS, resourceVersion=str(first - 1)) as w:  # all fresh: the window grew
            assert (await w.next())["object"]["metadata"]["name"] == "s-0"
        now[0] += FRESH + 1
        for i in range(60):  # 50 fill the window of 200; each of the next 10 drops the oldest, now stale
            secret(f"late-{i}")
        kept = int(made[10]["metadata"]["resourceVersion"])
        async with RawWatch(cluster, SECRETS, resourceVersion=str(kept - 2)) as w:
            ev = await w.next()
        assert ev["type"] == "ERROR" and ev["object"]["code"] == 410 and ev["object"]["reason"] == "Expired"
        assert ev["object"]["message"] == f"too old resource version: {kept - 2} ({kept - 1})"
        async with RawWatch(cluster, SECRETS, resourceVersion=str(kept - 1)) as w:
            assert (await w.next())["object"]["metadata"]["name"] == "s-10"
        # Another resource's window is its own: the quiet ConfigMap's version, older than every Secret, still serves.
        async with RawWatch(cluster, CONFIGMAPS, resourceVersion=quiet["metadata"]["resourceVersion"]) as w:
            cluster.api.create(configmaps, "default", {"metadata": {"name": "next"}})
            assert (await w.next())["object"]["metadata"]["name"] == "next"


async def test_a_watcher_whose_client_stops_reading_is_closed_once_its_channel_stays_full():
    """The cacher's channel (10 events on a fresh server) full for its time budget (0.1 s) while the stream's writer
    waits on a client that does not read: the watch ends; what was written before is still read, then the end."""
    async with LocalCluster() as cluster:
        configmaps = cluster.registry.get("", "v1", "configmaps")
        payload = "x" * 100_000
        async with RawWatch(cluster, CONFIGMAPS, resourceVersion=str(cluster.store.rv)) as w:
            made = 0
            watcher = next(iter(cluster.hub.watchers[("", "configmaps")]))
            async with asyncio.timeout(30):
                while not watcher.closed:  # the socket's buffers fill, then the channel, then the budget runs out
                    cluster.api.create(configmaps, "default", {"metadata": {"name": f"cm-{made}"},
                                                               "data": {"big": payload}})
                    made += 1
                    await asyncio.sleep(0.002)
            seen = [e["object"]["metadata"]["name"] for e in await w.closed(timeout=10)]
        assert 0 < len(seen) < made and seen == [f"cm-{i}" for i in range(len(seen))]


async def test_a_burst_written_at_once_to_a_client_that_reads_closes_no_watcher():
    """One request writing far more than the channel holds (here: 500 objects between two awaits, as a cascade of
    the garbage collector) is no slow client: every event arrives on the same stream."""
    async with LocalCluster() as cluster:
        configmaps = cluster.registry.get("", "v1", "configmaps")
        async with RawWatch(cluster, CONFIGMAPS, resourceVersion=str(cluster.store.rv)) as w:
            for i in range(500):
                cluster.api.create(configmaps, "default", {"metadata": {"name": f"cm-{i}"}})
            seen = [(await w.next())["object"]["metadata"]["name"] for _ in range(500)]
            assert seen == [f"cm-{i}" for i in range(500)] and cluster.hub.count() == 1


def test_a_watchers_channel_is_bounded_by_its_resources_index_and_its_trigger():
    """suggestedWatchChannelSize: a second of the window's events, at least 10; at most 100 for a resource without an
    indexed trigger, 1000 for one with (pods by spec.nodeName, Secrets and ConfigMaps by metadata.name), 10 for a
    watch that selects one value of the trigger's field (the kubelet's)."""
    pods, secrets, jobs = ("", "pods"), ("", "secrets"), ("batch.tensorstack.dev", "genericjobs")
    assert channel_size(LOWER, pods, None) == channel_size(LOWER, jobs, None) == 10  # a fresh window: the floor
    assert channel_size(UPPER, jobs, None) == 100
    assert channel_size(UPPER, pods, None) == channel_size(UPPER, pods, fields("spec.nodeName!=node-1")) == 1000
    assert channel_size(UPPER, pods, fields("status.phase=Running")) == 1000  # selects, but not by the trigger
    assert channel_size(UPPER, pods, fields("spec.nodeName=node-1")) == 10
    assert channel_size(UPPER, secrets, fields("metadata.name=token")) == 10
    assert channel_size(30_000, secrets, None) == 400  # between the bounds: 30,000 events over 75 s


async def test_each_watch_over_http_gets_the_channel_of_its_resource_and_selector():
    async with LocalCluster() as cluster:
        for key in (("", "pods"), ("", "configmaps")):
            window = cluster.api.watch_cache.windows.setdefault(key, Window())
            window.capacity = UPPER  # as a busy resource's window grows
        watches = [(PODS, {"fieldSelector": "spec.nodeName=node-1"}), (PODS, {"labelSelector": "app=x"}),
                   (CONFIGMAPS, {"fieldSelector": "metadata.name=x"}),
                   (SECRETS, {})]  # the Secrets' window is as a fresh server left it
        async with contextlib.AsyncExitStack() as open_:
            for path, selector in watches:
                await open_.enter_async_context(RawWatch(cluster, path, **selector))
            channels = {(key[1], w.fields is not None): w.channel
                        for key, kept in cluster.hub.watchers.items() for w in kept}
        assert channels == {("pods", True): 10, ("pods", False): 1000, ("configmaps", True): 10, ("secrets", False): 10}
