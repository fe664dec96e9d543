"""The time the credentials and the rate limit go by, as an object that can be replaced: client-go's clock.Clock
(k8s.io/utils/clock), which its exec plugin, cert rotation and rate limiter take so that their tests drive the time.

Two readings, because the credentials need both: the wall clock (`time()`, seconds since the epoch) is what an
exec plugin's expirationTimestamp and an id-token's exp are compared with; the monotonic clock (`monotonic()`)
measures intervals (a token file's minute, the certificate files' stat checks) that a stepped wall clock must not
stretch or shorten. The time module itself reads both; `SYSTEM_CLOCK` is it, the default everywhere. A test hands
the token sources and the TLS material a clock it advances (tests/kubeclient/clock.py): a token expires when the
test moves the time past its expiry, not after real seconds.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Wall-clock seconds since the epoch (time.time())."""
        ...

    def monotonic(self) -> float:
        """Seconds that only go forward, from an arbitrary origin (time.monotonic())."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` of this clock's time (asyncio.sleep): the rate limit's wait for its next token."""
        ...


class SystemClock:
    """The real time."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK: Clock = SystemClock()

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock"]
