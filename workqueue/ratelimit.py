"""Rate limiters deciding how long a failed key waits before it is retried (client-go's)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from workqueue.clock import Clock, RealClock


class RateLimiter(Protocol):
    def when(self, key: Hashable) -> float:
        """Seconds `key` should wait before its next try; records the try."""
        ...

    def forget(self, key: Hashable) -> None:
        """Stop tracking `key` (it succeeded, or was given up on)."""
        ...

    def num_requeues(self, key: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    """Per key: `base * 2**failures`, capped at `max` seconds."""

    # `max` shadows the builtin inside __init__ only; kept to match client-go's parameter names.
    def __init__(self, base: float = 0.005, max: float = 1000.0) -> None:
        self._base = base
        self._max = max
        self._failures: dict[Hashable, int] = {}

    def when(self, key: Hashable) -> float:
        exp = self._failures.get(key, 0)
        self._failures[key] = exp + 1
        # Float arithmetic saturates to inf instead of overflowing, and min() then caps it.
        return min(self._base * 2.0 ** min(exp, 1023), self._max)

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: Hashable) -> int:
        return self._failures.get(key, 0)


class BucketRateLimiter:
    """Overall token bucket: `burst` tries at once, then `qps` per second, for all keys together.

    Like golang.org/x/time/rate's `Reserve()`, a call always takes a token, borrowing
    from the future when the bucket is empty; the delay returned is when that token
    will exist, so it grows by 1/qps with every call made ahead of the refill.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be > 0 and burst >= 1")
        self._qps = qps
        self._burst = burst
        self._clock: Clock = clock if clock is not None else RealClock()
        self._tokens = float(burst)  # starts full
        self._last = self._clock.now()

    def when(self, key: Hashable) -> float:
        now = self._clock.now()
        elapsed = max(0.0, now - self._last)
        tokens = min(self._tokens + elapsed * self._qps, self._burst) - 1
        self._tokens, self._last = tokens, now
        return -tokens / self._qps if tokens < 0 else 0.0

    def forget(self, key: Hashable) -> None:
        """Nothing per key to forget."""

    def num_requeues(self, key: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay any of `limiters` asks for; every limiter records each try."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, key: Hashable) -> float:
        # max() consumes the whole generator, so every limiter records the try.
        return max(limiter.when(key) for limiter in self._limiters)

    def forget(self, key: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(key)

    def num_requeues(self, key: Hashable) -> int:
        return max(limiter.num_requeues(key) for limiter in self._limiters)


def default_controller_rate_limiter(clock: Clock | None = None) -> MaxOfRateLimiter:
    """client-go's default: per-key exponential 5 ms .. 1000 s, overall 10 qps with a burst of 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(base=0.005, max=1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )
