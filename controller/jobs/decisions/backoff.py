"""Restart back-off: a replica that keeps failing is not replaced in a tight loop.

As the kubelet's CrashLoopBackOff: the replacement of a replica waits `base` seconds after its first
quick restart, twice as long after each further one, at most five minutes; a pod that ran ten
minutes or more resets the streak. The wait is measured from the restart's `lastRestartTime` in the
replica's record (the status), so a controller restarted meanwhile keeps to it, and the plan asks
for a wake-up when it ends. `base` 0 turns back-off off.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

MAX_DELAY = 300.0  # seconds: the kubelet's cap
RESET_AFTER = 600.0  # seconds a pod must have run for its replica's streak to start again
DEFAULT_BASE = 10.0


@dataclass(frozen=True, slots=True)
class RestartBackoff:
    base: float = DEFAULT_BASE

    def delay(self, streak: int) -> float:
        """The wait before the replacement after the `streak`-th quick restart in a row (1, 2, ...)."""
        if self.base <= 0 or streak <= 0:
            return 0.0
        return min(self.base * 2 ** (streak - 1), MAX_DELAY)

    def streak(self, previous: int, pod: dict | None, now: float) -> int:
        """The streak a restart counted at `now` makes: 1 when the pod ran RESET_AFTER seconds or more
        (its startTime), one more than before otherwise (a lost pod of unknown age counts as quick)."""
        started = ((pod or {}).get("status") or {}).get("startTime")
        if started and now - epoch(started) >= RESET_AFTER:
            return 1
        return previous + 1

    def remaining(self, last_restart_time: str, streak: int, now: float) -> float:
        """Seconds until a replacement counted at `last_restart_time` may be created (0: now)."""
        if not last_restart_time:
            return 0.0
        return max(epoch(last_restart_time) + self.delay(streak) - now, 0.0)


NO_BACKOFF = RestartBackoff(0.0)


def stamp(seconds: float) -> str:
    """An RFC 3339 timestamp in UTC with milliseconds: the back-off's waits are shorter than a second."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def epoch(timestamp: str) -> float:
    """Seconds since the epoch of an RFC 3339 timestamp (`...Z` or with an offset)."""
    return datetime.fromisoformat(timestamp).timestamp()
