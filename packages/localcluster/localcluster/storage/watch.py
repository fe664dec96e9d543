"""Watchers: the per-request view of the event stream, with the cacher's filtering rules.

A watcher is fed synchronously by the store listener, so no event can slip between the
history replay and the live stream. A watcher whose client falls too far behind is closed,
as the apiserver's cacher closes slow watchers; the client re-watches from its last version.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque

from apimachinery.selectors import LabelSelector

from ..validation import FieldSelector
from .store import ADDED, DELETED, MODIFIED, Event, StorageKey


class Watcher:
    def __init__(self, key: StorageKey, namespace: str | None, labels: LabelSelector | None,
                 fields: FieldSelector | None, start_rv: int, max_buffer: int) -> None:
        self.key = key
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.start_rv = start_rv
        self.max_buffer = max_buffer
        self.buffer: deque[tuple[str, dict]] = deque()
        self.wake = asyncio.Event()
        self.closed = False

    def matches(self, obj: dict) -> bool:
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        if self.labels is not None and not self.labels.matches(meta.get("labels")):
            return False
        return self.fields is None or self.fields.matches(obj)

    def offer(self, ev: Event) -> None:
        if self.closed or ev.rv <= self.start_rv:
            return
        item = self.translate(ev)
        if item is None:
            return
        self.buffer.append(item)
        if len(self.buffer) > self.max_buffer:
            self.close()
        self.wake.set()

    def translate(self, ev: Event) -> tuple[str, dict] | None:
        """An object that starts or stops matching the selectors is seen as added or deleted."""
        now = ev.type != DELETED and self.matches(ev.obj)
        old = ev.old
        before = old is not None and self.matches(old)
        if ev.type == DELETED:
            return (DELETED, ev.obj) if before else None
        if now:
            return (MODIFIED if before else ADDED, ev.obj)
        if old is not None and before:  # stopped matching: the previous state, at this event's version
            return (DELETED, {**old, "metadata": {**old["metadata"], "resourceVersion": str(ev.rv)}})
        return None

    def close(self) -> None:
        self.closed = True
        self.wake.set()


class WatchHub:
    """Routes store events to the watchers of their resource."""

    def __init__(self) -> None:
        self.watchers: dict[StorageKey, set[Watcher]] = defaultdict(set)

    def on_event(self, ev: Event) -> None:
        watchers = self.watchers.get(ev.key)
        if watchers:
            for watcher in tuple(watchers):
                watcher.offer(ev)

    def add(self, watcher: Watcher) -> None:
        self.watchers[watcher.key].add(watcher)

    def discard(self, watcher: Watcher) -> None:
        self.watchers[watcher.key].discard(watcher)

    def close_all(self) -> int:
        count = 0
        for watchers in self.watchers.values():
            for watcher in tuple(watchers):
                watcher.close()
                count += 1
        return count

    def count(self) -> int:
        return sum(len(w) for w in self.watchers.values())
