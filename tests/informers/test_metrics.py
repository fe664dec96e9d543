"""Counters and health as the health endpoint and Prometheus see them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from informers import PODS, InformerFactory
from localcluster.testing import until

from .support import Pods, Recorder, watch_down


async def test_prometheus_metrics_read_the_counters(cluster, rest_client, options):
    registry = CollectorRegistry()
    factory = InformerFactory(rest_client, options=options, registry=registry)
    pods = Pods(cluster)
    pods.create("a")
    informer = factory.informer(PODS, namespace="default")
    rec = Recorder()
    rec.register(informer)
    factory.start()
    try:
        await factory.wait_for_sync(timeout=5)
        pods.create("b")
        pods.label("a", {"x": "y"})
        await rec.wait_for_names("update", ["a"])
    finally:
        await factory.stop()
    labels = {"resource": "pods", "namespace": "default", "label_selector": ""}

    def sample(name, **extra):
        return registry.get_sample_value(name, {**labels, **extra})

    assert sample("informer_events_total", type="ADDED") == 1
    assert sample("informer_events_total", type="MODIFIED") == 1
    assert sample("informer_lists_total") == 1 and sample("informer_relists_total") == 0
    assert sample("informer_watches_total") >= 1
    assert sample("informer_synced") == 1 and sample("informer_objects") == 2
    assert sample("informer_handler_backlog") == 0
    assert sample("informer_last_event_timestamp_seconds") == informer.stats.last_event_time


async def test_status_before_and_after_start(cluster, factory):
    informer = factory.informer(PODS)
    before = informer.status()
    assert (before.running, before.synced, before.healthy, before.objects) == (False, False, False, 0)
    factory.start()
    await factory.wait_for_sync(timeout=5)
    after = factory.status()[0]
    assert (after.running, after.synced, after.healthy, after.restarts, after.last_error) == (
        True, True, True, 0, None)
    assert int(after.resource_version) > 0
    await factory.stop()
    assert not informer.healthy() and not factory.healthy()


async def test_managed_fields_are_stripped_before_caching(cluster, factory):
    # The server sends managedFields with every object, listed ("a") or watched ("b"); the cache (and
    # the transform, which runs after the strip) never sees them.
    seen: list[list[str]] = []
    pods = Pods(cluster)
    pods.create("a")
    informer = factory.informer(PODS, transform=lambda obj: seen.append(sorted(obj["metadata"])) or obj)
    factory.start()
    await factory.wait_for_sync(timeout=5)
    pods.create("b")
    await until(lambda: informer.lister.get("default/b") is not None, what="the watched pod")
    assert all("managedFields" in pods.api.get(pods.rt, "default", name)["metadata"] for name in ("a", "b"))
    assert len(seen) == 2 and not any("managedFields" in keys for keys in seen)
    assert not any("managedFields" in obj["metadata"] for _, obj in informer.store.items())


async def test_last_sync_age_is_absent_before_the_first_list_and_grows_while_watches_fail(cluster, rest_client,
                                                                                           options):
    registry = CollectorRegistry()
    factory = InformerFactory(rest_client, options=options, registry=registry)
    informer = factory.informer(PODS)
    labels = {"resource": "pods", "namespace": "", "label_selector": ""}

    def age():
        return registry.get_sample_value("informer_last_sync_age_seconds", labels)

    assert age() is None  # no proof yet: readiness covers an informer that never listed
    factory.start()
    try:
        await factory.wait_for_sync(timeout=5)
        assert 0 <= age() < 1
        async with watch_down(cluster):
            # No list, no watch answered 200, no event: the age only grows.
            await until(lambda: age() > 1.0, what="a growing age")
            assert informer.stats.errors >= 1
        watches = informer.stats.watches
        await until(lambda: informer.stats.watches > watches, what="a watch answered again")
        assert age() < 1.0
    finally:
        await factory.stop()


async def test_a_relist_loop_ages_though_every_list_succeeds(cluster, rest_client, options):
    """Lists that succeed, each followed by a watch refused with 410 (issue 12's blind loop): the lists
    and the watches' 200s prove nothing, as the watch they lead to never works."""
    registry = CollectorRegistry()
    factory = InformerFactory(rest_client, options=options, registry=registry)
    informer = factory.informer(PODS)
    factory.start()
    try:
        await factory.wait_for_sync(timeout=5)
        await until(lambda: informer.stats.bookmarks >= 1, what="a bookmark")  # a working watch
        cluster.faults.configure(error_rate=1.0, error_code=410, verbs=["watch"])
        cluster.drop_watches()
        await until(lambda: informer.stats.relists >= 3, what="a relist loop")
        await until(lambda: informer.stats.sync_age() > 1.0, what="a growing age")
        assert informer.stats.relists >= 3
        cluster.faults.clear()
        await until(lambda: informer.stats.sync_age() < 1.0, what="a working watch again")
    finally:
        await factory.stop()
