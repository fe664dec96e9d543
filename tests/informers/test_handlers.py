"""Handlers: each on its own queue, synced only when delivered, coalesced when far behind."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from informers import PODS, HandlerRegistration, InformerFactory, SyncTimeoutError
from informers.handlers import ADD, DELETE, UPDATE
from localcluster.testing import until

from .support import Pods, Recorder


class Blocked:
    """An async handler stuck until the test releases it; it counts what it got."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.seen: list[tuple[str, str]] = []

    async def on_add(self, obj):
        await self.release.wait()
        self.seen.append(("add", obj["metadata"]["name"]))

    async def on_update(self, old, new):
        await self.release.wait()
        self.seen.append(("update", new["metadata"]["name"]))

    async def on_delete(self, obj):
        await self.release.wait()
        self.seen.append(("delete", obj["metadata"]["name"]))


async def test_a_slow_handler_does_not_hold_up_the_others(cluster, factory):
    informer = factory.informer(PODS)
    slow = Blocked()
    slow.release.set()  # let the (empty) initial sync through
    informer.add_handler(slow.on_add, slow.on_update, slow.on_delete)
    fast = Recorder()
    fast.register(informer)
    factory.start()
    await factory.wait_for_sync(timeout=5)
    slow.release.clear()

    pods = Pods(cluster)
    names = [f"p{i}" for i in range(50)]
    for name in names:
        pods.create(name)
    await fast.wait_for_names("add", names, timeout=2)
    assert slow.seen == []
    assert informer.handler_backlog >= 49  # the slow handler's queue holds them; nothing else waits
    slow.release.set()
    await until(lambda: len(slow.seen) == 50, what="the slow handler to catch up")
    assert [name for _, name in slow.seen] == names


async def test_synced_waits_until_every_handler_has_the_first_list(cluster, factory):
    pods = Pods(cluster)
    for i in range(10):
        pods.create(f"p{i}")
    informer = factory.informer(PODS)
    slow = Blocked()
    informer.add_handler(slow.on_add)
    factory.start()
    await until(lambda: len(informer.store) == 10, what="the list in the cache")
    with pytest.raises(SyncTimeoutError):
        await factory.wait_for_sync(timeout=0.2)
    assert not informer.has_synced
    slow.release.set()
    await factory.wait_for_sync(timeout=5)
    assert len(slow.seen) == 10


async def test_handler_errors_are_logged_and_delivery_goes_on(cluster, factory, caplog):
    informer = factory.informer(PODS)
    rec = Recorder()

    def failing_add(obj):
        if obj["metadata"]["name"] == "bad":
            raise ValueError("handler bug")
        rec.on_add(obj)

    registration = informer.add_handler(on_add=failing_add)
    factory.start()
    await factory.wait_for_sync(timeout=5)
    pods = Pods(cluster)
    pods.create("bad")
    pods.create("good")
    await rec.wait_for_names("add", ["good"])
    assert registration.errors == 1
    assert "add handler of pods failed" in caplog.text


async def test_a_handler_added_late_gets_the_cache_first(cluster, factory):
    pods = Pods(cluster)
    pods.create("a")
    informer = factory.informer(PODS)
    factory.start()
    await factory.wait_for_sync(timeout=5)
    late = Recorder()
    registration = late.register(informer)
    await late.wait_for_names("add", ["a"])
    await informer.wait_for_sync()
    assert registration.synced and informer.has_synced
    pods.create("b")
    await late.wait_for_names("add", ["b"])
    pods.create("c")
    other = Recorder()
    other.register(informer)
    await other.wait_for_names("add", ["a", "b", "c"])


async def test_a_handler_far_behind_gets_its_backlog_coalesced(cluster, rest_client, options):
    factory = InformerFactory(rest_client, options=dataclasses.replace(options, max_pending=10))
    pods = Pods(cluster)
    pods.create("changing", labels={"n": "0"})
    pods.create("doomed")
    informer = factory.informer(PODS)
    slow = Recorder()
    gate = asyncio.Event()

    async def on_update(old, new):
        await gate.wait()
        slow.on_update(old, new)

    async def on_add(obj):
        await gate.wait()
        slow.on_add(obj)

    async def on_delete(obj):
        await gate.wait()
        slow.on_delete(obj)

    registration = informer.add_handler(on_add, on_update, on_delete)
    factory.start()
    try:
        gate.set()
        await factory.wait_for_sync(timeout=5)
        gate.clear()
        for n in range(1, 21):
            pods.label("changing", {"n": str(n)})
        pods.create("brief")
        pods.delete("brief")
        pods.delete("doomed")
        # 20 label changes, and each pod deleted is first marked (MODIFIED), then removed.
        await until(lambda: (informer.stats.modified, informer.stats.deleted) == (22, 2), what="the events")
        gate.set()
        await slow.wait_for(lambda r: "doomed" in r.names("delete"))
        await until(lambda: registration.pending == 0, what="the backlog to drain")
    finally:
        await factory.stop()
    assert registration.coalesced > 0
    updates = [s for s in slow.seen if s.kind == "update" and s.name == "changing"]
    assert len(updates) < 20 and updates[-1].obj["metadata"]["labels"] == {"n": "20"}
    assert slow.names("delete")[-1] == "doomed"
    assert informer.lister.get("default/changing") is updates[-1].obj


def obj(name: str, rv: int, uid: str = "u1") -> dict:
    return {"metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": str(rv)}}


async def test_coalescing_keeps_the_net_change_per_object():
    rec = Recorder()
    synced = []
    registration = HandlerRegistration(rec.on_add, rec.on_update, rec.on_delete, max_pending=4,
                                       on_synced=lambda: synced.append(True), name="test")
    a1, a2, a3 = obj("a", 1), obj("a", 2), obj("a", 3)
    registration.push(UPDATE, "default/a", a1, a2)
    registration.push(UPDATE, "default/a", a2, a3)
    registration.push(ADD, "default/brief", None, obj("brief", 4))
    registration.push(DELETE, "default/brief", obj("brief", 5), None)
    registration.push_synced_marker()
    registration.push(DELETE, "default/old", obj("old", 6), None)
    registration.push(ADD, "default/old", None, obj("old", 7, uid="u2"))  # the same name, a new object
    registration.push(ADD, "default/new", None, obj("new", 8))
    registration.push(UPDATE, "default/new", obj("new", 8), obj("new", 9))
    # Five notifications went over the limit of four: the two updates of "a" merged, "brief" vanished.
    assert registration.coalesced == 3
    registration.start()
    try:
        await rec.wait_for(lambda r: len(r.seen) == 5)
        await until(lambda: synced == [True], what="the synced marker")
    finally:
        await registration.stop()
    assert [(s.kind, s.name, s.obj["metadata"]["resourceVersion"]) for s in rec.seen] == [
        ("update", "a", "3"), ("delete", "old", "6"), ("add", "old", "7"), ("add", "new", "8"), ("update", "new", "9")]
    assert rec.seen[0].old is a1  # from the state the handler last saw
