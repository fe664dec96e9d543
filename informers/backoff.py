"""Exponential backoff with jitter that forgets past failures after a quiet period.

The reflector's policy in client-go: 0.8 s doubling to 30 s, each wait stretched by a random
share of itself (jitter 1.0 waits between d and 2d) so that many clients do not retry in step,
and back to 0.8 s once two minutes have passed without a failure.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    reset_after: float = 120.0


class Backoff:
    def __init__(self, policy: BackoffPolicy, clock: Callable[[], float] = time.monotonic,
                 rand: Callable[[], float] = random.random) -> None:
        self.policy = policy
        self._clock = clock
        self._rand = rand
        self._next = policy.initial
        self._last: float | None = None

    def next_delay(self, at_least: float = 0.0) -> float:
        """The wait before the next attempt; `at_least` is a server's Retry-After."""
        policy = self.policy
        now = self._clock()
        if self._last is not None and now - self._last > policy.reset_after:
            self._next = policy.initial
        self._last = now
        delay = self._next
        self._next = min(delay * policy.factor, policy.cap)
        return max(delay * (1 + policy.jitter * self._rand()), at_least)
