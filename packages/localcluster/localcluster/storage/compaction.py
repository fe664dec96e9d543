"""etcd's compaction as kube-apiserver drives it: which revisions a read at a past revision may still ask for.

The apiserver compacts etcd every 5 minutes (--etcd-compaction-interval), each time to the revision it saw at the
previous tick (storage/etcd3/compact.go; the first tick only notes one). So etcd keeps between 5 and 10 minutes of
history: a list at an older exact revision, or a continue token issued before, gets 410. Watches are not bounded by
it: the watch cache (watch_cache.py) serves them from events it kept itself.

Ticks are taken when they are due, at the next write or read that asks: the revision seen at a tick passed unseen
is the store's before the write that notices it, since no write came between. `clock` is monotonic seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

INTERVAL = 300.0  # kube-apiserver's --etcd-compaction-interval default


class Compactor:
    def __init__(self, clock: Callable[[], float] = time.monotonic, interval: float = INTERVAL) -> None:
        self.clock = clock
        self.interval = interval
        self.next_tick = clock() + interval
        self.seen: int | None = None  # the revision noted at the last tick (None: no tick yet)
        self.compacted = 0  # revisions below it are gone

    def tick(self, rv: int) -> int:
        """Take the ticks due by now (`rv`: the store's revision now, before any write in progress); the revision
        etcd is compacted to."""
        now = self.clock()
        while now >= self.next_tick:
            if self.seen is not None:
                self.compacted = max(self.compacted, self.seen)
            self.seen = rv
            self.next_tick += self.interval
        return self.compacted

    def use_clock(self, clock: Callable[[], float]) -> None:
        """Go by another clock (a test's), the next tick an interval from its now."""
        self.clock = clock
        self.next_tick = clock() + self.interval
