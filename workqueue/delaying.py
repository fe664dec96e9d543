"""`add_after`: keys that join the work queue once a delay has passed.

Waiting keys sit in a heap ordered by ready time, with a single clock timer armed
for the earliest one. When a key is re-delayed to an earlier time, a new heap
entry is pushed and the old one is left in place as stale (recognised because
`_waiting` no longer points at it), which is cheaper than re-heapifying.
"""

from __future__ import annotations

import heapq
import itertools

from prometheus_client import CollectorRegistry

from workqueue.clock import Clock, TimerHandle
from workqueue.queue import K, WorkQueue

# (ready_at, sequence number: FIFO among equal times and keys never compared, key)
_Entry = tuple[float, int, K]


class DelayingQueue(WorkQueue[K]):
    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        super().__init__(name, clock=clock, registry=registry)
        self._heap: list[_Entry[K]] = []
        self._waiting: dict[K, _Entry[K]] = {}  # the live heap entry of each delayed key
        self._seq = itertools.count()
        self._timer: TimerHandle | None = None
        self._timer_at = 0.0

    @property
    def delayed(self) -> int:
        """How many keys wait for their delay to pass (not yet in the queue)."""
        return len(self._waiting)

    def add_after(self, key: K, delay: float) -> None:
        """Add `key` once `delay` seconds have passed (now if `delay <= 0`).

        If `key` is already waiting for a delay, it keeps whichever ready time is
        earlier. Every call counts as a retry in the metrics, as in client-go.
        """
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retried()
        if delay <= 0:
            self.add(key)
            return
        ready_at = self.clock.now() + delay
        current = self._waiting.get(key)
        if current is not None and current[0] <= ready_at:
            return
        entry = (ready_at, next(self._seq), key)
        self._waiting[key] = entry
        heapq.heappush(self._heap, entry)
        if self._timer is None or ready_at < self._timer_at:
            self._arm(ready_at)

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.clock.call_at(when, self._fire)
        self._timer_at = when

    def _fire(self) -> None:
        self._timer = None
        now = self.clock.now()
        heap, waiting = self._heap, self._waiting
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            key = entry[2]
            if waiting.get(key) is entry:
                del waiting[key]
                self.add(key)
        # Drop stale entries at the top so the timer is armed for a live key.
        while heap and waiting.get(heap[0][2]) is not heap[0]:
            heapq.heappop(heap)
        if heap:
            self._arm(heap[0][0])

    def _stop_accepting(self) -> None:
        super()._stop_accepting()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._heap.clear()
        self._waiting.clear()
