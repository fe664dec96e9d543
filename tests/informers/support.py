"""Helpers for informer tests: a recording handler, waits with timeouts, fast in-process writes."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from informers import Tombstone
from localcluster.testing import until


@dataclass
class Seen:
    kind: str  # add, update, delete
    name: str
    obj: dict
    old: dict | None = None


class Recorder:
    """A handler that records what it is given and lets a test wait for it."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self._changed = asyncio.Event()

    def register(self, informer):
        return informer.add_handler(self.on_add, self.on_update, self.on_delete)

    def on_add(self, obj: dict) -> None:
        self._record(Seen("add", obj["metadata"]["name"], obj))

    def on_update(self, old: dict, new: dict) -> None:
        self._record(Seen("update", new["metadata"]["name"], new, old))

    def on_delete(self, obj: dict) -> None:
        self._record(Seen("delete", obj["metadata"]["name"], obj))

    def _record(self, seen: Seen) -> None:
        self.seen.append(seen)
        self._changed.set()

    def names(self, kind: str) -> list[str]:
        return [s.name for s in self.seen if s.kind == kind]

    def tombstones(self) -> list[Seen]:
        return [s for s in self.seen if s.kind == "delete" and isinstance(s.obj, Tombstone)]

    async def wait_for(self, predicate: Callable[[Recorder], bool], timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate(self):
                self._changed.clear()
                await self._changed.wait()

    async def wait_for_names(self, kind: str, names, timeout: float = 5.0) -> None:
        wanted = set(names)
        await self.wait_for(lambda r: wanted <= set(r.names(kind)), timeout)


def pod(name: str, labels: dict | None = None, namespace: str = "default", owner: dict | None = None,
        **spec) -> dict:
    meta: dict = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                    "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}], **spec}}


class Pods:
    """Fast in-process writes to the cluster's pods (no HTTP), for setting the scene."""

    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.api = cluster.api
        self.rt = cluster.registry.get("", "v1", "pods")

    def owner(self, name: str, namespace: str = "default") -> dict:
        """An object to own pods (a ConfigMap: the collector deletes pods whose owner does not exist)."""
        rt = self.cluster.registry.get("", "v1", "configmaps")
        return self.api.create(rt, namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})

    def create(self, name: str, **kw) -> dict:
        body = pod(name, **kw)
        return self.api.create(self.rt, body["metadata"]["namespace"], body)

    def label(self, name: str, labels: dict, namespace: str = "default") -> dict:
        return self.api.patch(self.rt, namespace, name, "application/merge-patch+json",
                              {"metadata": {"labels": labels}})

    def delete(self, name: str, namespace: str = "default") -> dict:
        # Grace 0: a pod bound to a node would otherwise wait for a kubelet that is not running.
        return self.api.delete(self.rt, namespace, name, {"gracePeriodSeconds": 0})[0]


def requests(cluster, verb: str, resource: str = "pods", code: int | None = None) -> int:
    """How many `verb` requests for `resource` the server answered (with `code`, if given)."""
    return sum(n for (v, r, c), n in cluster.faults.requests.items()
               if v == verb and r == resource and (code is None or c == code))


@contextlib.asynccontextmanager
async def watch_down(cluster):
    """Within the block every watch request fails (500); the open watch is dropped on entry."""
    failed_before = cluster.faults.injected["500"]
    cluster.faults.configure(error_rate=1.0, verbs=["watch"])
    try:
        cluster.drop_watches()
        await until(lambda: cluster.faults.injected["500"] > failed_before, what="a failed watch")
        yield
    finally:
        cluster.faults.clear()


_configmaps = itertools.count()


def advance_version(cluster) -> None:
    """Write something that is not a pod: the global resourceVersion moves on, pods stay the same."""
    rt = cluster.registry.get("", "v1", "configmaps")
    cluster.api.create(rt, "default", {"metadata": {"name": f"bump-{next(_configmaps)}"}, "data": {}})
