"""The backoff schedule, on a fake clock."""

from __future__ import annotations

import pytest

from informers import Backoff, BackoffPolicy


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_doubles_to_the_cap_and_resets_after_a_quiet_period():
    clock = Clock()
    backoff = Backoff(BackoffPolicy(), clock=clock, rand=lambda: 0.0)
    delays = []
    for _ in range(8):
        delays.append(backoff.next_delay())
        clock.now += 1
    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0])
    clock.now += 119  # quiet, but not for long enough
    assert backoff.next_delay() == 30.0
    clock.now += 121
    assert backoff.next_delay() == pytest.approx(0.8)


def test_jitter_and_retry_after():
    backoff = Backoff(BackoffPolicy(initial=1.0, jitter=1.0), clock=Clock(), rand=lambda: 0.5)
    assert backoff.next_delay() == 1.5  # jitter 1.0 waits between d and 2d
    assert backoff.next_delay(at_least=10.0) == 10.0  # Retry-After wins when longer
    assert backoff.next_delay(at_least=1.0) == 6.0
