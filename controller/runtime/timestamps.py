"""RFC 3339 timestamps to the second in UTC, as the API server writes them (`2026-11-26T09:43:02Z`).

Reconciles and Events ask for the time thousands of times a second in a burst; the text of a second is made
once and handed out until the clock moves on."""

from __future__ import annotations

import time
from datetime import UTC, datetime

_last: list = [None, ""]  # the second last formatted, and its text


def utc_stamp(ns: int | None = None) -> str:
    """The second of `ns` (nanoseconds since the epoch; now by default)."""
    second = (time.time_ns() if ns is None else ns) // 1_000_000_000
    if second != _last[0]:
        _last[:] = [second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")]
    return _last[1]


__all__ = ["utc_stamp"]
