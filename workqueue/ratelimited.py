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
        self._parked: dict[K, str] = {}  # key -> the version it waits to see replaced

    def park(self, key: K, version: str) -> None:
        """Hold `key` until a version other than `version` is offered (`offer`): a worker whose write lost
        to a newer version of its object waits for that version, which is on its way through a watch.
        The rate-limited requeue alone would not do: its bucket is shared by every key, so after a burst
        of conflicts a key would wait seconds for a version that arrives in milliseconds."""
        self._parked[key] = version

    def offer(self, key: K, version: str) -> bool:
        """A version of `key` has arrived: if the key is parked for an older one, add it now. True if it was
        parked (then it has been added, or the version offered is the one it already had)."""
        parked = self._parked.get(key)
        if parked is None:
            return False
        if parked != version:
            del self._parked[key]
            self.add(key)
        return True

    @property
    def parked(self) -> dict[K, str]:
        """The parked keys and the version each waits to see replaced (a copy)."""
        return dict(self._parked)

    def unpark(self, key: K) -> None:
        """Forget a parked key (its object is gone)."""
        self._parked.pop(key, None)

    def add_rate_limited(self, key: K) -> None:
        """Add `key` after the delay the rate limiter gives it (which counts one more requeue)."""
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: K) -> None:
        """Reset `key`'s backoff. Only clears the rate limiter: `done(key)` is still needed."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self.rate_limiter.num_requeues(key)
