"""Tunables of an informer. The defaults are client-go's; tests shrink the timings."""

from __future__ import annotations

from dataclasses import dataclass, field

from informers.backoff import BackoffPolicy


@dataclass(frozen=True, slots=True)
class InformerOptions:
    page_size: int = 500
    # The server closes each watch after a time drawn from this range, spreading re-watches out.
    watch_timeout: tuple[float, float] = (300.0, 600.0)
    # No byte on a watch for this long means a dead connection (the server bookmarks every minute).
    watchdog_timeout: float = 70.0
    # Bound on every request up to its response headers, and on reading a LIST body.
    request_timeout: float = 60.0
    # A watch that ends sooner than this without a single event counts as a failure.
    min_watch_duration: float = 1.0
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    # A handler this many notifications behind gets them coalesced per object (see handlers.py).
    max_pending: int = 10_000
    # Share equal strings and sub-objects between cached objects (see compact.py).
    compact: bool = True
