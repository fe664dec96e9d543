"""Time sources for the queues: the real monotonic clock and a manually stepped fake.

Everything time-dependent in this package (delays, token buckets, duration metrics)
reads time and schedules wake-ups only through a `Clock`, so tests can drive it
with `FakeClock.step()` instead of waiting for real time to pass.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic time in seconds."""
        ...

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        """Run `callback()` once `now() >= when`; must be called from the event loop."""
        ...

    async def sleep_until(self, when: float) -> None: ...


@dataclass(frozen=True)
class RealClock:
    """`time.monotonic`, with timers on the running asyncio loop.

    Stateless, so all instances compare equal (metrics rely on that to tell
    whether two queues share a time base).
    """

    # A staticmethod keeps `clock.now` a plain builtin call on the hot path.
    now = staticmethod(time.monotonic)

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        # call_later rather than loop.call_at: loop.time() need not be time.monotonic (e.g. uvloop).
        return asyncio.get_running_loop().call_later(max(0.0, when - time.monotonic()), callback)

    async def sleep_until(self, when: float) -> None:
        await asyncio.sleep(max(0.0, when - time.monotonic()))


class _FakeTimer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that only moves when `step()` is called.

    Timers fire synchronously inside `step()`, in deadline order, with `now()`
    reading each timer's own deadline while its callback runs, so the code under
    test sees exactly the times it asked for. Sleepers are woken by resolving their
    future; they resume at the test's next await.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()  # keeps equal deadlines in scheduling order

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _FakeTimer(callback)
        heapq.heappush(self._timers, (when, next(self._seq), timer))
        return timer

    async def sleep_until(self, when: float) -> None:
        if when <= self._now:
            return
        fut = asyncio.get_running_loop().create_future()

        def wake() -> None:
            # The sleeper may have been cancelled after step() popped this timer.
            if not fut.done():
                fut.set_result(None)

        timer = self.call_at(when, wake)
        try:
            await fut
        finally:
            timer.cancel()

    def step(self, seconds: float) -> None:
        """Advance time by `seconds`, firing every timer that falls due on the way."""
        if seconds < 0:
            raise ValueError("a monotonic clock cannot go backwards")
        target = self._now + seconds
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.callback()
        self._now = target

    def pending(self) -> int:
        """Number of timers still scheduled (cancelled ones excluded)."""
        return sum(not timer.cancelled for _, _, timer in self._timers)
