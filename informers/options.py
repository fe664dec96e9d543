"""Tunables of an informer. The defaults are client-go's but for the page size; tests shrink the timings."""

from __future__ import annotations

from dataclasses import dataclass, field

from informers.backoff import BackoffPolicy


@dataclass(frozen=True, slots=True)
class InformerOptions:
    # Objects per page of a first list. client-go's pager asks for 500, but its reflector's first list (at
    # resourceVersion "0") is answered whole from the watch cache, which ignores the limit; ours reads the
    # latest state (resourceVersion "") and really is paginated. A page of 500 pods with their specs is
    # 2.5 MB of JSON and some 10 MB of Python objects before trimming: buffers that size fragment the
    # heap for good (10,000 cached pods: 114 MiB peak at 500, 103 at 100, 102 at 50). At 100, 10,000 pods
    # take 100 requests instead of 20, each a fifth of the work.
    page_size: int = 100
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
