"""Listers and indexes over the cache, filled over HTTP; the store and compactor on their own."""

from __future__ import annotations

import pytest

from apimachinery.selectors import parse_label_selector
from informers import CONTROLLER_INDEX, NAMESPACE_INDEX, PODS, Store

from .support import Pods, Recorder


def node_index(obj: dict) -> list[str]:
    node = obj.get("spec", {}).get("nodeName")
    return [node] if node else []


async def test_lister_queries(cluster, factory, core):
    await core.create_namespace({"metadata": {"name": "team"}})
    pods = Pods(cluster)
    job_a, job_b = pods.owner("a"), pods.owner("b", namespace="team")
    uid_a, uid_b = job_a["metadata"]["uid"], job_b["metadata"]["uid"]
    pods.create("a0", labels={"job": "a", "role": "worker"}, owner=job_a)
    pods.create("a1", labels={"job": "a", "role": "master"}, owner=job_a, nodeName="n1")
    pods.create("b0", labels={"job": "b", "role": "worker"}, owner=job_b, namespace="team", nodeName="n1")
    pods.create("loose", labels={"role": "worker"})
    informer = factory.informer(PODS)
    informer.add_index("node", node_index)
    rec = Recorder()
    rec.register(informer)
    factory.start()
    await factory.wait_for_sync(timeout=5)
    lister = informer.lister

    def names(objs):
        return sorted(o["metadata"]["name"] for o in objs)

    assert lister.get("team/b0")["metadata"]["namespace"] == "team"
    assert lister.get_named("default", "a0") is lister.get("default/a0") is not None
    assert lister.get("default/b0") is None
    assert names(lister.list()) == ["a0", "a1", "b0", "loose"]
    assert names(lister.list("role=worker,job")) == ["a0", "b0"]
    assert names(lister.list(parse_label_selector("job notin (a)"))) == ["b0", "loose"]
    assert names(lister.in_namespace("default")) == ["a0", "a1", "loose"]
    assert names(lister.in_namespace("default", "role=worker")) == ["a0", "loose"]
    assert names(lister.controlled_by(uid_a)) == ["a0", "a1"]
    assert names(lister.controlled_by(uid_a, "role=master")) == ["a1"]
    assert names(lister.by_index(CONTROLLER_INDEX, uid_b)) == ["b0"]
    assert names(lister.by_index("node", "n1")) == ["a1", "b0"]
    assert sorted(index_keys(informer.store, NAMESPACE_INDEX)) == ["default", "team"]

    # An index added after the sync covers what is already cached, and every index follows changes.
    informer.add_index("role", lambda obj: [obj["metadata"]["labels"].get("role", "")])
    assert names(lister.by_index("role", "worker")) == ["a0", "b0", "loose"]
    pods.label("a0", {"role": "master"})
    pods.delete("a1")
    await rec.wait_for_names("delete", ["a1"])
    assert names(lister.by_index("role", "worker")) == ["b0", "loose"]
    assert names(lister.by_index("role", "master")) == ["a0"]
    assert names(lister.controlled_by(uid_a)) == ["a0"]
    assert lister.by_index("node", "n1") == [lister.get("team/b0")]
    with pytest.raises(KeyError, match="no index named 'nope'"):
        lister.by_index("nope", "x")
    with pytest.raises(ValueError, match="already exists"):
        informer.add_index("node", node_index)


def index_keys(store, name: str) -> list[str]:
    """The values an index holds an entry for: none is left behind once its last object goes."""
    return list(store._index(name))


def meta(name: str, rv: str = "1", **extra) -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, **extra}}


def test_store_keeps_indexes_in_step():
    store = Store()
    owned = meta("a", ownerReferences=[{"uid": "o1", "controller": False}, {"uid": "o2", "controller": True}])
    store.upsert("ns/a", owned)
    store.upsert("b", {"metadata": {"name": "b"}})  # cluster-scoped
    assert store.by_index(CONTROLLER_INDEX, "o2") == [owned]
    assert store.by_index(CONTROLLER_INDEX, "o1") == []
    assert sorted(index_keys(store, NAMESPACE_INDEX)) == ["", "ns"]
    store.upsert("ns/a", meta("a", "2"))  # no owner any more
    assert index_keys(store, CONTROLLER_INDEX) == []
    assert store.delete("ns/a")["metadata"]["resourceVersion"] == "2"
    assert store.delete("ns/a") is None
    assert index_keys(store, NAMESPACE_INDEX) == [""] and len(store) == 1


def test_store_is_untouched_when_an_index_function_raises():
    store = Store()
    store.add_index("picky", lambda obj: [obj["metadata"]["labels"]["x"]])
    with pytest.raises(KeyError):
        store.upsert("ns/a", meta("a", labels={}))
    assert len(store) == 0 and index_keys(store, NAMESPACE_INDEX) == []
