"""A shared informer: one reflector feeding one cache and any number of handlers.

The reflector runs in a supervised task: if it ever raises (a bug, or a transform or index
function failing), the crash is logged and counted, and a fresh reflector relists after a
backoff, so the cache and the handlers converge again through the relist's diff.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from apimachinery.resource import Resource
from informers.backoff import Backoff
from informers.compact import Compactor
from informers.handlers import ADD, DELETE, UPDATE, Handler, HandlerRegistration, Tombstone
from informers.lister import Lister
from informers.options import InformerOptions
from informers.reflector import Reflector
from informers.stats import InformerStats
from informers.store import IndexFunc, Store, object_key
from kubeclient.rest import RestClient

log = logging.getLogger(__name__)

Transform = Callable[[dict], dict]


@dataclass(frozen=True, slots=True)
class InformerStatus:
    """What a health endpoint reports for one informer."""

    resource: str
    running: bool
    synced: bool
    healthy: bool
    objects: int
    resource_version: str
    restarts: int
    last_error: str | None
    last_error_time: float | None
    last_event_time: float | None
    last_sync_age: float | None  # seconds since the last completed list, watch answered 200 or watch event


class Informer:
    def __init__(self, client: RestClient, resource: Resource, *, namespace: str | None = None,
                 label_selector: str | None = None, transform: Transform | None = None,
                 options: InformerOptions | None = None) -> None:
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector or None
        self.transform = transform
        self.options = options or InformerOptions()
        self.store = Store()
        self.lister = Lister(self.store)
        self.stats = InformerStats()
        self._client = client
        self._compact = Compactor() if self.options.compact else None
        self._handlers: list[HandlerRegistration] = []
        self._listed = False  # the first list has been applied to the store
        self._synced = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._reflector: Reflector | None = None

    def __str__(self) -> str:
        where = f" in namespace {self.namespace}" if self.namespace else ""
        selected = f" with labels {self.label_selector}" if self.label_selector else ""
        return f"{self.resource}{where}{selected}"

    # --- handlers and indexes -------------------------------------------------------------

    def add_handler(self, on_add: Handler | None = None, on_update: Handler | None = None,
                    on_delete: Handler | None = None) -> HandlerRegistration:
        """Call `on_add(obj)`, `on_update(old, new)`, `on_delete(obj)`: functions or coroutine functions.

        `on_delete` may get a `Tombstone` (see handlers.py). A handler added after the first list
        is first fed the whole cache as adds, as if it had been there from the start.
        """
        registration = HandlerRegistration(on_add, on_update, on_delete, self.options.max_pending,
                                           self._check_synced, str(self))
        self._handlers.append(registration)
        if self._listed:
            for key, obj in self.store.items():
                registration.push(ADD, key, None, obj)
            registration.push_synced_marker()
            self._synced.clear()
        if self._task is not None:
            registration.start()
        return registration

    def add_index(self, name: str, func: IndexFunc) -> None:
        """Index the cache by `func(obj)`, a list of strings; query with `lister.by_index(name, value)`."""
        self.store.add_index(name, func)

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is not None:
            return
        for registration in self._handlers:
            registration.start()
        self._task = asyncio.get_running_loop().create_task(self._supervise(), name=f"informer {self}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await asyncio.gather(*(registration.stop() for registration in self._handlers))

    @property
    def has_synced(self) -> bool:
        """The first list is in the cache and every handler has been handed all of it."""
        return self._listed and all(registration.synced for registration in self._handlers)

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    @property
    def handler_backlog(self) -> int:
        """Notifications handed to handlers and not yet processed by them."""
        return sum(registration.pending for registration in self._handlers)

    @property
    def resource_version(self) -> str:
        return self._reflector.resource_version if self._reflector is not None else ""

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def healthy(self) -> bool:
        """Running, and listed since its last crash: an informer that keeps crashing is not healthy."""
        return self.running and self._reflector is not None and self._reflector.listed

    def status(self) -> InformerStatus:
        stats = self.stats
        return InformerStatus(
            resource=str(self), running=self.running, synced=self.has_synced,
            healthy=self.healthy(), objects=len(self.store), resource_version=self.resource_version,
            restarts=stats.restarts, last_error=stats.last_error, last_error_time=stats.last_error_time,
            last_event_time=stats.last_event_time, last_sync_age=stats.sync_age())

    async def _supervise(self) -> None:
        backoff = Backoff(self.options.backoff)
        path = self.resource.path(self.namespace)
        while True:
            self._reflector = Reflector(self._client, path, self.label_selector, self.options, self.stats,
                                        str(self), trim=self._trimmed, compact=self._compacted,
                                        replace=self._replace, apply=self._apply)
            try:
                await self._reflector.run()
            except Exception as exc:
                self.stats.restarts += 1
                self.stats.record_error(exc)
                log.exception("informer for %s crashed; restarting it with a fresh list", self)
                await asyncio.sleep(backoff.next_delay())

    # --- the reflector's side: synchronous, so the store never changes mid-await ---------

    def _trimmed(self, obj: dict) -> dict:
        meta = obj.get("metadata")
        if meta is not None:
            meta.pop("managedFields", None)  # large, and no controller reads it
        if self.transform is not None:
            obj = self.transform(obj)
        return obj

    def _compacted(self, obj: dict) -> dict:
        if self._compact is not None:
            obj = self._compact(obj, self.store.get(object_key(obj)))
        return obj

    def _apply(self, kind: str, obj: dict) -> None:
        key = object_key(obj)
        if kind == "DELETED":
            if self.store.delete(key) is not None:
                self._dispatch(DELETE, key, obj, None)
            return
        old = self.store.upsert(key, obj)
        if old is None:
            self._dispatch(ADD, key, None, obj)
        elif old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
            self._dispatch(UPDATE, key, old, obj)

    def _replace(self, objects: list[dict], resource_version: str) -> None:
        """Make the cache the list: adds, updates, and deletes (as tombstones) for what is gone."""
        store = self.store
        listed = set()
        for obj in objects:
            key = object_key(obj)
            listed.add(key)
            old = store.get(key)
            if old is not None and old["metadata"].get("resourceVersion") == obj["metadata"].get("resourceVersion"):
                continue  # unchanged: keep the cached object, tell nobody
            store.upsert(key, obj)
            if old is None:
                self._dispatch(ADD, key, None, obj)
            else:
                self._dispatch(UPDATE, key, old, obj)
        if len(store) > len(listed):
            for key in store.keys():
                if key not in listed:
                    last_state = store.delete(key)
                    assert last_state is not None  # a key the store just gave
                    self._dispatch(DELETE, key, Tombstone(key, last_state), None)
        if not self._listed:
            self._listed = True
            for registration in self._handlers:
                registration.push_synced_marker()
            self._check_synced()

    def _dispatch(self, kind: str, key: str, old: dict | None, new: dict | None) -> None:
        for registration in self._handlers:
            registration.push(kind, key, old, new)

    def _check_synced(self) -> None:
        if self.has_synced:
            self._synced.set()
