"""Initial sync: pagination, the factory's sharing, and waiting for sync."""

from __future__ import annotations

import dataclasses

import pytest

from informers import PODS, SERVICES, InformerFactory, Resource, SyncTimeoutError
from localcluster.testing import until

from .support import Pods, Recorder, requests


async def test_initial_sync_lists_in_pages_and_delivers_everything(cluster, factory):
    pods = Pods(cluster)
    for i in range(1200):
        pods.create(f"p{i:04}")
    informer = factory.informer(PODS)
    rec = Recorder()
    rec.register(informer)
    factory.start()
    await factory.wait_for_sync(timeout=20)
    # Synced means delivered: every add reached the handler before wait_for_sync returned.
    assert len(rec.names("add")) == 1200 and len(informer.store) == 1200
    assert requests(cluster, "list") == 12  # pages of 100 (InformerOptions.page_size)
    assert informer.store.get("default/p0042")["metadata"]["name"] == "p0042"
    # The watch starts at the list's version, so a later write is seen exactly once.
    pods.create("late")
    await rec.wait_for_names("add", ["late"])
    assert len(rec.names("add")) == 1201 and informer.stats.lists == 1


async def test_namespace_and_label_selector(cluster, factory, core):
    await core.create_namespace({"metadata": {"name": "other"}})
    pods = Pods(cluster)
    pods.create("web", labels={"app": "web"}, namespace="other")
    pods.create("db", labels={"app": "db"}, namespace="other")
    pods.create("web", labels={"app": "web"})  # same name, other namespace
    informer = factory.informer(PODS, namespace="other", label_selector="app=web")
    rec = Recorder()
    rec.register(informer)
    factory.start()
    await factory.wait_for_sync(timeout=5)
    assert informer.store.keys() == ["other/web"]
    pods.label("db", {"app": "web"}, namespace="other")  # starts matching: an add
    await rec.wait_for_names("add", ["db"])
    pods.label("web", {"app": "gone"}, namespace="other")  # stops matching: a delete
    await rec.wait_for_names("delete", ["web"])
    assert informer.store.keys() == ["other/db"]
    assert str(informer) == "pods in namespace other with labels app=web"


async def test_factory_shares_one_informer_per_resource_namespace_and_selector(cluster, factory):
    first = factory.informer(PODS)
    assert factory.informer(PODS) is first
    assert factory.informer(Resource("", "v1", "pods")) is first
    assert factory.informer(PODS, namespace="default") is not first
    assert factory.informer(PODS, label_selector="app=x") is not first
    assert factory.lister(PODS) is first.lister
    with pytest.raises(ValueError, match="another transform"):
        factory.informer(PODS, transform=lambda obj: obj)
    small = dataclasses.replace(factory.options, compact=False)
    services = factory.informer(SERVICES, options=small)
    assert services.options is small and factory.informer(SERVICES) is services
    with pytest.raises(ValueError, match="other options"):
        factory.informer(SERVICES, options=factory.options)

    one, two = Recorder(), Recorder()
    one.register(factory.informer(PODS))
    two.register(factory.informer(PODS))
    factory.start()
    await factory.wait_for_sync(timeout=5)
    Pods(cluster).create("a")
    await one.wait_for_names("add", ["a"])
    await two.wait_for_names("add", ["a"])
    # Three pod informers (cluster-wide, one namespace, one selector): one list each.
    assert requests(cluster, "list") == 3
    assert len(factory.informers) == 4


async def test_wait_for_sync_names_the_resource_that_did_not_sync(cluster, factory):
    factory.informer(PODS)
    widgets = factory.informer(Resource("example.com", "v1", "widgets"), namespace="default")
    factory.start()
    with pytest.raises(SyncTimeoutError) as caught:
        await factory.wait_for_sync(timeout=0.5)
    assert caught.value.resources == ["widgets.example.com in namespace default"]
    message = str(caught.value)
    assert "widgets.example.com in namespace default" in message and "404" in message
    assert not widgets.healthy() and not factory.healthy()


async def test_informer_asked_for_after_start_starts_with_the_next_start(cluster, factory):
    factory.start()
    late = factory.informer(PODS)
    with pytest.raises(SyncTimeoutError):
        await factory.wait_for_sync(timeout=0.2)
    factory.start()
    await factory.wait_for_sync(timeout=5)
    assert late.has_synced


async def test_expired_continue_token_falls_back_to_one_full_list(cluster, rest_client, options):
    pods = Pods(cluster)
    for i in range(50):
        pods.create(f"p{i:02}")
    factory = InformerFactory(rest_client, options=dataclasses.replace(options, page_size=10))
    informer = factory.informer(PODS)
    cluster.faults.configure(latency=0.3, verbs=["list"])
    factory.start()
    try:
        # The first page is served; the token expires while the second request is on its way.
        await until(lambda: requests(cluster, "list", code=200) == 1, what="the first page")
        cluster.expire_history()
        await factory.wait_for_sync(timeout=10)
    finally:
        cluster.faults.clear()
        await factory.stop()
    assert len(informer.store) == 50
    assert requests(cluster, "list", code=410) == 1
    assert requests(cluster, "list", code=200) == 2  # the first page, then everything at once


async def test_a_listed_page_is_trimmed_then_copied_then_compacted(cluster, rest_client, options):
    """The cache holds fresh copies of what the transform kept (so that a page's memory is freed whole, see
    Reflector._prepare_page), equal to it, and compacted after the copy: siblings, across pages too,
    share their equal parts."""
    pods = Pods(cluster)
    for i in range(25):
        pods.create(f"p{i:02}", labels={"app": "x", "tier": "web"})
    returned: list[dict] = []

    def keep_metadata(obj: dict) -> dict:
        kept = {"kind": obj["kind"], "metadata": obj["metadata"]}
        returned.append(kept)
        return kept

    factory = InformerFactory(rest_client, options=dataclasses.replace(options, page_size=10))
    informer = factory.informer(PODS, transform=keep_metadata)
    try:
        factory.start()
        await factory.wait_for_sync(timeout=10)
    finally:
        await factory.stop()
    assert requests(cluster, "list") == 3  # 10 + 10 + 5
    cached = [informer.store.get(f"default/p{i:02}") for i in range(25)]
    assert cached == returned  # what the transform kept, no more and no less
    assert not any(c is r or c["metadata"] is r["metadata"] for c, r in zip(cached, returned, strict=True))
    labels = {id(c["metadata"]["labels"]) for c in cached}
    assert len(labels) == 1, "equal label sets, in every page, are one shared dict"
    assert "managedFields" not in cached[0]["metadata"]
