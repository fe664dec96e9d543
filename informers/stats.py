"""Plain counters of an informer: cheap to bump, read by the health check and metrics exporters."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(slots=True)
class InformerStats:
    added: int = 0  # watch events by type
    modified: int = 0
    deleted: int = 0
    bookmarks: int = 0
    lists: int = 0  # completed LISTs, the first one included
    relists: int = 0  # completed LISTs after the first
    watches: int = 0  # watch requests that got a response
    errors: int = 0  # failed requests, ERROR events, stalled and short watches
    watchdog_timeouts: int = 0
    restarts: int = 0  # crashes of the informer task
    last_error: str | None = None
    last_error_time: float | None = None  # wall clock, seconds
    last_event_time: float | None = None  # any watch event, bookmarks included
    # Monotonic time of the last proof that the cache is current: a watch event (bookmarks included),
    # a completed list or a watch answered 200 (withdrawn by the reflector if the watch they lead to
    # fails before its first event). None until the first list.
    last_sync_monotonic: float | None = None

    def synced_now(self) -> None:
        self.last_sync_monotonic = time.monotonic()

    def sync_age(self, now: float | None = None) -> float | None:
        """Seconds since the last proof that the cache is current; None before the first list."""
        if self.last_sync_monotonic is None:
            return None
        return (time.monotonic() if now is None else now) - self.last_sync_monotonic

    def record_error(self, error: BaseException) -> None:
        self.errors += 1
        self.last_error = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        self.last_error_time = time.time()
