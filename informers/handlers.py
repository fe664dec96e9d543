"""Event handlers, each fed through its own queue and task.

The informer only appends to a handler's queue, so a slow handler delays nobody but itself.
A handler that falls more than `max_pending` notifications behind gets its backlog coalesced
per object: what it has not seen yet collapses to the net change (an add, an update from the
state it last saw, or a delete), so the backlog is bounded by the number of objects while a
level-triggered handler (one that computes a key and enqueues it) loses nothing.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

ADD, UPDATE, DELETE, SYNCED = "add", "update", "delete", "synced"
# Sync handlers run back to back; yield to the loop after this many so the reflector keeps up.
_BATCH = 64

Handler = Callable[..., Any]  # a function or a coroutine function
Notification = tuple[str, str, dict | None, dict | None]  # (kind, key, old, new)


class Tombstone(dict):
    """The last known state of an object found gone by a relist (client-go's DeletedFinalStateUnknown).

    The watch was down when the object was deleted, so its final state is unknown; this dict holds
    the state the cache last saw, so delete handlers read it like any object. `isinstance(obj,
    Tombstone)` tells the two cases apart; `key` is the object's cache key.
    """

    __slots__ = ("key",)

    def __init__(self, key: str, last_state: dict) -> None:
        super().__init__(last_state)
        self.key = key


class HandlerRegistration:
    """One `add_handler` call: the handler's queue, its task, and whether it has synced."""

    def __init__(self, on_add: Handler | None, on_update: Handler | None, on_delete: Handler | None,
                 max_pending: int, on_synced: Callable[[], None], name: str) -> None:
        self._calls = {ADD: on_add, UPDATE: on_update, DELETE: on_delete}
        self._max_pending = max_pending
        self._high_water = max_pending
        self._on_synced = on_synced
        self.name = name
        self._queue: deque[Notification] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.synced = False
        self.delivered = 0
        self.errors = 0
        self.coalesced = 0

    @property
    def pending(self) -> int:
        return len(self._queue)

    def push(self, kind: str, key: str, old: dict | None, new: dict | None) -> None:
        self._queue.append((kind, key, old, new))
        if len(self._queue) > self._high_water:
            self._coalesce()
        self._wake.set()

    def push_synced_marker(self) -> None:
        self.push(SYNCED, "", None, None)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"handler {self.name}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        queue = self._queue
        since_yield = 0
        while True:
            if not queue:
                self._wake.clear()
                await self._wake.wait()
                since_yield = 0
                continue
            kind, _, old, new = queue.popleft()
            if kind == SYNCED:
                self.synced = True
                self._on_synced()
                continue
            call = self._calls[kind]
            if call is None:
                continue
            try:
                result = call(old, new) if kind == UPDATE else call(new if kind == ADD else old)
                if result is not None and inspect.isawaitable(result):
                    await result
                    since_yield = 0
            except Exception:
                self.errors += 1
                log.exception("%s handler of %s failed", kind, self.name)
            self.delivered += 1
            since_yield += 1
            if since_yield >= _BATCH:
                since_yield = 0
                await asyncio.sleep(0)

    def _coalesce(self) -> None:
        """Collapse the backlog to one net change per object, in order of first appearance."""
        # key -> [state before the backlog, state after it, last deleted state]
        net: dict[str, list] = {}
        synced_marker = False
        for kind, key, old, new in self._queue:
            if kind == SYNCED:
                synced_marker = True
                continue
            entry = net.get(key)
            if entry is None:
                entry = net[key] = [None if kind == ADD else old, None, None]
            if kind == DELETE:
                entry[1], entry[2] = None, old
            else:
                entry[1] = new
        before_len = len(self._queue)
        queue = self._queue  # in place: the handler task holds a reference to it
        queue.clear()
        for key, (before, after, deleted) in net.items():
            if before is None:
                if after is not None:
                    queue.append((ADD, key, None, after))
            elif after is None:
                queue.append((DELETE, key, deleted, None))
            elif _uid(before) != _uid(after):  # deleted and created again: two objects, not one
                queue.append((DELETE, key, deleted if deleted is not None else before, None))
                queue.append((ADD, key, None, after))
            elif _rv(before) != _rv(after):
                queue.append((UPDATE, key, before, after))
        if synced_marker:
            # Only ever later than it was: "synced" still means everything listed was delivered.
            queue.append((SYNCED, "", None, None))
        self.coalesced += before_len - len(queue)
        self._high_water = max(self._max_pending, 2 * len(queue))


def _uid(obj: dict) -> str | None:
    uid: str | None = obj["metadata"].get("uid")  # (a JSON value: typed here)
    return uid


def _rv(obj: dict) -> str | None:
    version: str | None = obj["metadata"].get("resourceVersion")
    return version
