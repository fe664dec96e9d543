"""etcd's compaction by time, as kube-apiserver drives it (storage/compaction.py): every 5 minutes, to the revision
seen at the previous tick. A continue token or a list at an exact revision outlives it by 5 to 10 minutes, then gets
410; a watch is the watch cache's affair. Time is a fake clock the test moves."""

from __future__ import annotations

from localcluster.storage.compaction import INTERVAL, Compactor

from .test_crud import pod
from .test_list_versions import get_list, names
from .test_watch import PODS, RawWatch


def test_each_tick_compacts_to_the_revision_the_tick_before_saw():
    now = [0.0]
    compactor = Compactor(lambda: now[0])
    assert compactor.tick(10) == 0  # no tick due yet
    now[0] = INTERVAL
    assert compactor.tick(20) == 0  # the first tick only notes 20
    now[0] = 2 * INTERVAL - 1
    assert compactor.tick(30) == 0
    now[0] = 2 * INTERVAL
    assert compactor.tick(30) == 20  # the second compacts to what the first saw
    now[0] = 5 * INTERVAL  # three ticks due at once, with no write between: each saw 40
    assert compactor.tick(40) == 40


async def test_a_continue_token_and_an_exact_list_outlive_a_tick_then_get_410(cluster):
    now = [0.0]
    cluster.store.compactor.use_clock(lambda: now[0])
    pods = cluster.registry.get("", "v1", "pods")
    for name in "abc":
        cluster.api.create(pods, "default", pod(name))
    status, first = await get_list(cluster, limit="1")
    token, then = first["metadata"]["continue"], first["metadata"]["resourceVersion"]
    cluster.api.create(pods, "default", pod("d"))  # the next tick sees a later revision than the token's
    now[0] = INTERVAL
    status, rest = await get_list(cluster, limit="5", **{"continue": token})
    assert status == 200 and names(rest) == ["b", "c"]  # the token's revision: "d" came after it
    status, exact = await get_list(cluster, resourceVersion=then, resourceVersionMatch="Exact")
    assert status == 200 and names(exact) == ["a", "b", "c"]
    now[0] = 2 * INTERVAL  # compacted to the revision the first tick saw: the token's is older
    status, gone = await get_list(cluster, limit="5", **{"continue": token})
    assert status == 410 and gone["reason"] == "Expired"
    assert gone["message"].startswith("The provided continue parameter is too old")
    status, gone = await get_list(cluster, resourceVersion=then, resourceVersionMatch="Exact")
    assert (status, gone["message"]) == (410, "The resourceVersion for the provided list is too old.")
    # A watch from that version is the watch cache's to serve: its window still holds the events.
    async with RawWatch(cluster, PODS, resourceVersion=then) as w:
        assert (await w.next())["object"]["metadata"]["name"] == "d"
