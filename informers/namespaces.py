"""Several namespaces of one resource, seen as one informer: controller-runtime's multi-namespace cache.

A controller told to watch namespaces a and b (and not the whole cluster, which its RBAC may not
allow) runs one informer per namespace; `InformerGroup` gives them the surface of one informer:

    pods = InformerGroup({ns: factory.informer(PODS, ns) for ns in ("team-a", "team-b")})
    pods.add_handler(on_add=...)                            # on each namespace's informer
    pods.lister.get("team-a/web-0")                         # routed by the key's namespace
    pods.lister.controlled_by(job_uid)                      # the union over the namespaces

Each namespace's informer is the factory's own, so the factory starts, stops, syncs and reports
them one by one (health, metrics); the group only routes reads and fans out registrations.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Mapping

from informers.handlers import Handler, HandlerRegistration
from informers.informer import Informer, InformerStatus
from informers.lister import Lister, Selector
from informers.store import IndexFunc


class MultiNamespaceLister:
    """A Lister over one store per namespace: reads by key or namespace touch one store, the others all."""

    def __init__(self, listers: Mapping[str, Lister]) -> None:
        self._listers = dict(listers)
        self._all = tuple(self._listers.values())

    def get(self, key: str) -> dict | None:
        namespace, slash, _ = key.partition("/")
        lister = self._listers.get(namespace) if slash else None
        return lister.get(key) if lister is not None else None

    def get_named(self, namespace: str | None, name: str) -> dict | None:
        lister = self._listers.get(namespace or "")
        return lister.get_named(namespace, name) if lister is not None else None

    def list(self, selector: Selector = None) -> list[dict]:
        return [obj for lister in self._all for obj in lister.list(selector)]

    def in_namespace(self, namespace: str, selector: Selector = None) -> builtins.list[dict]:
        lister = self._listers.get(namespace)
        return lister.in_namespace(namespace, selector) if lister is not None else []

    def by_index(self, index: str, value: str, selector: Selector = None) -> builtins.list[dict]:
        return [obj for lister in self._all for obj in lister.by_index(index, value, selector)]

    def controlled_by(self, owner_uid: str, selector: Selector = None) -> builtins.list[dict]:
        found: builtins.list[dict] = []
        for lister in self._all:
            found += lister.controlled_by(owner_uid, selector)
        return found


class InformerGroup:
    def __init__(self, informers: Mapping[str, Informer]) -> None:
        if len(informers) < 2:
            raise ValueError("an informer group spans two namespaces or more; use the informer itself")
        self.informers = dict(informers)
        self.lister = MultiNamespaceLister({ns: informer.lister for ns, informer in self.informers.items()})

    def __str__(self) -> str:
        first = next(iter(self.informers.values()))
        return f"{first.resource} in namespaces {','.join(self.informers)}"

    @property
    def namespaces(self) -> list[str]:
        return list(self.informers)

    def add_handler(self, on_add: Handler | None = None, on_update: Handler | None = None,
                    on_delete: Handler | None = None) -> list[HandlerRegistration]:
        return [informer.add_handler(on_add, on_update, on_delete) for informer in self.informers.values()]

    def add_index(self, name: str, func: IndexFunc) -> None:
        for informer in self.informers.values():
            informer.add_index(name, func)

    def start(self) -> None:
        for informer in self.informers.values():
            informer.start()

    async def stop(self) -> None:
        await asyncio.gather(*(informer.stop() for informer in self.informers.values()))

    @property
    def has_synced(self) -> bool:
        return all(informer.has_synced for informer in self.informers.values())

    async def wait_for_sync(self) -> None:
        await asyncio.gather(*(informer.wait_for_sync() for informer in self.informers.values()))

    def healthy(self) -> bool:
        return all(informer.healthy() for informer in self.informers.values())

    def status(self) -> list[InformerStatus]:
        return [informer.status() for informer in self.informers.values()]


__all__ = ["InformerGroup", "MultiNamespaceLister"]
