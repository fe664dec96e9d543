"""Which past events a watch may still start from: the API server's watch cache window, one per resource.

A kube-apiserver serves watches from a cacher per resource, whose window of past events is a ring buffer
(apiserver's storage/cacher/watch_cache.go): it starts at 100 events; when full, it doubles (up to 102,400) if
its oldest event is younger than 75 s, halves (down to 100) if even its newest quarter is older than that, and
otherwise drops its oldest event. A watch from a version before the oldest event kept (less one) gets 410 "too
old resource version". So a busy resource keeps at least 75 s of events, a quiet one its last 100 however old,
and a client that stays away longer than that from a busy resource must list again.

The store's own history (store.py) is etcd's: global and bounded by count, it still holds the events a watch
replays; a watch is refused when either has let its version go. `clock` is monotonic seconds, a test's to drive.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from .store import Event, StorageKey

FRESH = 75.0  # eventFreshDuration: the bookmark frequency (60 s) plus a margin
LOWER, UPPER = 100, 100 * 1024  # the buffer's bounds (defaultLowerBoundCapacity, defaultUpperBoundCapacity)


class Window:
    """One resource's ring buffer: the (resourceVersion, time recorded) of the events it still holds."""

    __slots__ = ("capacity", "records", "removed")

    def __init__(self) -> None:
        self.capacity = LOWER
        self.records: deque[tuple[int, float]] = deque()
        self.removed = False  # some event left the buffer: its oldest one bounds a watch's start

    def add(self, rv: int, now: float) -> None:
        if len(self.records) >= self.capacity:
            self._resize(now)
        while len(self.records) >= self.capacity:
            self.records.popleft()
            self.removed = True
        self.records.append((rv, now))

    def _resize(self, now: float) -> None:
        """Grow while the whole buffer is fresh; shrink once even its newest quarter is stale."""
        if now - self.records[0][1] < FRESH:
            self.capacity = min(self.capacity * 2, UPPER)
        elif now - self.records[-(self.capacity // 4)][1] > FRESH:
            self.capacity = max(self.capacity // 2, LOWER)

    def oldest_start(self) -> int:
        """The oldest version a watch may start from (0: any, as far as this window goes)."""
        return self.records[0][0] - 1 if self.removed and self.records else 0


class WatchCache:
    """Every resource's window, fed by the store's events, and where each cacher started: a watch from a version
    older than either is answered 410, as on a real server."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.windows: dict[StorageKey, Window] = {}
        # The server's caches start empty at the latest revision each time it restarts, whatever etcd's history
        # still holds. The first start's hold everything (a real server's cachers start before its own first
        # writes: a fresh 1.35 kube-apiserver replays a watch from resourceVersion 1, measured by tests/real).
        self.server_start = 0
        # A custom resource's cacher is made (listing at the then-latest revision) when the apiextensions server
        # serves its CRD, and anew whenever the CRD's spec changes.
        self.resource_starts: dict[StorageKey, int] = {}

    def on_event(self, ev: Event) -> None:
        window = self.windows.get(ev.key)
        if window is None:
            window = self.windows[ev.key] = Window()
        window.add(ev.rv, self.clock())

    def oldest_start(self, key: StorageKey) -> int:
        """The oldest version a watch of `key` may start from."""
        window = self.windows.get(key)
        return max(self.server_start, self.resource_starts.get(key, 0),
                   window.oldest_start() if window is not None else 0)

    def capacity(self, key: StorageKey) -> int:
        window = self.windows.get(key)
        return window.capacity if window is not None else LOWER

    def restart_server(self, rv: int) -> None:
        self.server_start = rv
        self.windows.clear()

    def restart_resource(self, key: StorageKey, rv: int) -> None:
        self.resource_starts[key] = rv
        self.windows.pop(key, None)
