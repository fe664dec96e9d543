"""The client-side rate limit: a token bucket, as client-go's default limiter for a client.

client-go gives every client 5 QPS with a burst of 10 unless told otherwise (training-operator: 20/30);
a request beyond the burst waits for its token. One bucket per limit: `RestClient.with_limit` makes a
client that shares the connections but waits on a bucket of its own (the Event recorder's, so that a
storm of Events never delays a status write). The bucket fills and waits by a `Clock` (clock.py), which a test
drives.
"""

from __future__ import annotations

from .clock import SYSTEM_CLOCK, Clock


class TokenBucket:
    """`qps` tokens a second, at most `burst` saved up; qps <= 0: no limit."""

    def __init__(self, qps: float, burst: int, clock: Clock = SYSTEM_CLOCK) -> None:
        self.qps = qps
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst)
        self._last = clock.monotonic()

    def _refill(self) -> None:
        now = self.clock.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now

    async def take(self) -> None:
        if self.qps <= 0:
            return
        self._refill()
        self._tokens -= 1
        if self._tokens < 0:
            await self.clock.sleep(-self._tokens / self.qps)

    def try_take(self) -> bool:
        """A token now, or False without waiting (client-go's TryAccept): for a caller that refuses instead."""
        if self.qps <= 0:
            return True
        self._refill()
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


__all__ = ["TokenBucket"]
