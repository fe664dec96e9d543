"""The queue controllers use: a delaying queue that backs off failed keys through a rate limiter."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from workqueue.clock import Clock
from workqueue.delaying import DelayingQueue
from workqueue.queue import K
from workqueue.ratelimit import RateLimiter, default_controller_rate_limiter


class RateLimitingQueue(DelayingQueue[K]):
    """`add_rate_limited(key)` after a failure, `forget(key)` after a success, `done(key)` always.

    Without a `rate_limiter`, uses `default_controller_rate_limiter()` on the queue's clock.
    """

    def __init__(
        self,
        rate_limiter: RateLimiter | None = None,
        name: str = "",
        *,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        super().__init__(name, clock=clock, registry=registry)
        self.rate_limiter: RateLimiter = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(self.clock)
        )

    def add_rate_limited(self, key: K) -> None:
        """Add `key` after the delay the rate limiter gives it (which counts one more requeue)."""
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: K) -> None:
        """Reset `key`'s backoff. Only clears the rate limiter: `done(key)` is still needed."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self.rate_limiter.num_requeues(key)
