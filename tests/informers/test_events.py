"""What handlers are told: adds, updates, deletes, tombstones, and nothing for unchanged objects."""

from __future__ import annotations

import pytest

from informers import PODS, Tombstone
from localcluster.testing import until

from .support import Pods, Recorder, advance_version, requests, watch_down


@pytest.fixture
async def watched(cluster, factory):
    """An informer on pods with a recorder, synced and watching."""
    informer = factory.informer(PODS)
    rec = Recorder()
    rec.register(informer)
    factory.start()
    await factory.wait_for_sync(timeout=5)
    await until(lambda: informer.stats.watches >= 1, what="the first watch")
    return informer, rec


async def test_add_update_delete(cluster, watched):
    informer, rec = watched
    pods = Pods(cluster)
    created = pods.create("a", labels={"v": "1"})
    await rec.wait_for_names("add", ["a"])
    cached_meta = {k: v for k, v in created["metadata"].items() if k != "managedFields"}  # stripped by the informer
    assert rec.seen[-1].obj == {**created, "metadata": cached_meta}

    updated = pods.label("a", {"v": "2"})
    await rec.wait_for_names("update", ["a"])
    change = rec.seen[-1]
    assert change.old["metadata"]["labels"] == {"v": "1"} and change.obj["metadata"]["labels"] == {"v": "2"}
    assert change.obj["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]
    assert informer.lister.get("default/a") is change.obj

    final = pods.delete("a")
    await rec.wait_for_names("delete", ["a"])
    gone = rec.seen[-1].obj
    assert not isinstance(gone, Tombstone)  # the watch saw it: the real final state
    assert gone["metadata"]["resourceVersion"] == final["metadata"]["resourceVersion"]
    assert informer.lister.get("default/a") is None
    # The deletion is seen twice: the pod marked with no grace left (MODIFIED), then removed.
    assert gone["metadata"]["deletionGracePeriodSeconds"] == 0
    assert (informer.stats.added, informer.stats.modified, informer.stats.deleted) == (1, 2, 1)


async def test_relist_without_changes_delivers_nothing(cluster, watched):
    informer, rec = watched
    pods = Pods(cluster)
    for name in ("a", "b", "c"):
        pods.create(name)
    await rec.wait_for_names("add", ["a", "b", "c"])
    before = len(rec.seen)
    async with watch_down(cluster):
        advance_version(cluster)
        cluster.expire_history()  # the informer's version is now too old: 410, then a relist
    await until(lambda: informer.stats.relists == 1, what="the relist")
    # Handlers get notifications in order: once the sentinel arrives, the relist's would have too.
    pods.create("sentinel")
    await rec.wait_for_names("add", ["sentinel"])
    assert [(s.kind, s.name) for s in rec.seen[before:]] == [("add", "sentinel")]


async def test_objects_deleted_while_the_watch_was_down_arrive_as_tombstones(cluster, watched):
    informer, rec = watched
    pods = Pods(cluster)
    for name in ("keep", "change", "drop1", "drop2"):
        pods.create(name, labels={"state": "before"})
    await rec.wait_for_names("add", ["keep", "change", "drop1", "drop2"])
    pods.label("drop1", {"state": "last-seen"})
    await rec.wait_for(lambda r: r.names("update") == ["drop1"])

    # The watch fails while things change, and by the time it is back the history is gone.
    async with watch_down(cluster):
        pods.delete("drop1")
        pods.delete("drop2")
        pods.label("change", {"state": "after"})
        pods.create("new")
        cluster.expire_history()

    await rec.wait_for_names("delete", ["drop1", "drop2"])
    await rec.wait_for_names("update", ["change"])
    await rec.wait_for_names("add", ["new"])
    tombstones = {s.name: s.obj for s in rec.tombstones()}
    assert set(tombstones) == {"drop1", "drop2"}
    assert tombstones["drop1"].key == "default/drop1"
    assert tombstones["drop1"]["metadata"]["labels"] == {"state": "last-seen"}  # the last state the cache knew
    assert informer.stats.relists == 1
    assert sorted(informer.store.keys()) == ["default/change", "default/keep", "default/new"]


async def test_deletes_while_down_are_replayed_from_history_without_a_relist(cluster, watched):
    informer, rec = watched
    pods = Pods(cluster)
    pods.create("a")
    await rec.wait_for_names("add", ["a"])
    async with watch_down(cluster):
        pods.delete("a")
    await rec.wait_for_names("delete", ["a"])
    assert rec.tombstones() == []
    assert informer.stats.relists == 0 and requests(cluster, "list") == 1
