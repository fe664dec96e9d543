"""FIFO work queue with client-go's dedup and one-worker-per-key guarantees.

A key is in at most one of three states besides absent:
  waiting     in `_queue` and `_dirty`;
  processing  in `_processing` (handed to a worker, `done()` not yet called);
  both        in `_processing` and `_dirty`: added again while being processed;
              it joins `_queue` only when its worker calls `done()`.
So a waiting key is never queued twice, and no key is handed to two workers at once.

Single event loop, no threads: every mutation happens between awaits, so no locks.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from contextlib import suppress
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry

from workqueue.clock import Clock, RealClock
from workqueue.metrics import queue_metrics

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """Raised by `get()` once the queue is shut down and has nothing left to hand out."""


class WorkQueue(Generic[K]):
    """Deduplicating FIFO of keys for a pool of worker coroutines.

    Worker loop::

        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            try:
                await reconcile(key)
            finally:
                queue.done(key)

    `name` labels the metrics; metrics are kept only when a `registry` is given.
    """

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.name = name
        self.clock: Clock = clock if clock is not None else RealClock()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        # Futures of blocked get() calls / shutdown_with_drain() calls; created only when
        # someone actually has to wait.
        self._getters: deque[asyncio.Future[None]] = deque()
        self._drainers: set[asyncio.Future[bool]] = set()
        self._shutting_down = False
        self._metrics = queue_metrics(registry, name, self.clock) if registry is not None else None

    def __len__(self) -> int:
        """Keys waiting to be handed out (not those being processed)."""
        return len(self._queue)

    def __bool__(self) -> bool:
        # Without this an empty queue would be falsy, and `queue or default` would misfire.
        return True

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, key: K) -> None:
        """Mark `key` as needing processing; a no-op if it is already waiting or after shutdown."""
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if self._metrics is not None:
            self._metrics.added(key, self.clock.now())
        if key in self._processing:
            return  # done() queues it, so it is never handed to a second worker
        self._queue.append(key)
        if self._getters:
            self._wake_getter()

    async def get(self) -> K:
        """Wait for a key and mark it as processing; the caller must call `done(key)`.

        Keys already queued are still handed out after `shutdown()`; once none are
        left, raises `ShutDown`.
        """
        queue = self._queue
        while not queue:
            if self._shutting_down:
                raise ShutDown
            await self._wait_for_key()
        key = queue.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        if self._metrics is not None:
            self._metrics.got(key, self.clock.now())
        return key

    def done(self, key: K) -> None:
        """Mark `key` as processed, queueing it again if it was added meanwhile.

        Raises ValueError if `key` is not being processed: a second done() for one
        get() could otherwise release a key another worker holds.
        """
        try:
            self._processing.remove(key)
        except KeyError:
            raise ValueError(f"done({key!r}) for a key that is not being processed") from None
        if self._metrics is not None:
            self._metrics.finished(key, self.clock.now())
        if key in self._dirty:
            self._queue.append(key)
            if self._getters:
                self._wake_getter()
        if self._drainers and not self._processing:
            self._release_drainers(drained=True)

    def shutdown(self) -> None:
        """Stop accepting keys and wake every blocked `get()`.

        Also ends any `shutdown_with_drain()` still waiting, as client-go's ShutDown does.
        """
        self._stop_accepting()
        self._release_drainers()

    # A timeout parameter (not asyncio.timeout around the call) because running out of time is
    # a normal outcome reported as False, and the queue stays shut down either way.
    async def shutdown_with_drain(self, timeout: float | None = None) -> bool:
        """Stop accepting keys, then wait until every key handed out has been `done()`.

        Returns True once nothing is being processed, False if `timeout` seconds pass
        first or `shutdown()` is called meanwhile. Keys still waiting in the queue are
        not waited for (as in client-go); `get()` keeps handing them out.
        """
        self._stop_accepting()
        if not self._processing:
            return True
        drained: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._drainers.add(drained)
        try:
            async with asyncio.timeout(timeout):
                # The answer is fixed when the drainer is released: a worker may take a queued key the
                # moment after, which does not undo the drain that happened.
                return await drained
        except TimeoutError:
            return False
        finally:
            self._drainers.discard(drained)

    def _stop_accepting(self) -> None:
        """Refuse new keys and wake all getters; subclasses also cancel what they scheduled."""
        self._shutting_down = True
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)

    async def _wait_for_key(self) -> None:
        getter = asyncio.get_running_loop().create_future()
        self._getters.append(getter)
        try:
            await getter
        except asyncio.CancelledError:
            if not getter.cancelled():
                # Woken for a key but cancelled before taking it: pass the wake-up on.
                if self._queue:
                    self._wake_getter()
            else:
                # Drop it now rather than at the next wake-up, so an idle queue polled with
                # timeouts does not pile up dead futures. It may already be gone.
                with suppress(ValueError):
                    self._getters.remove(getter)
            raise

    def _wake_getter(self) -> None:
        # One key, one wake-up: getters that lose the race for it simply wait again.
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def _release_drainers(self, drained: bool = False) -> None:
        drainers, self._drainers = self._drainers, set()
        for drainer in drainers:
            if not drainer.done():
                drainer.set_result(drained)
