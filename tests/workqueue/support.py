"""Synchronisation helpers: every wait is bounded, and nothing depends on wall-clock sleeps."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")

TIMEOUT = 2.0  # generous: anything that passes does so in well under a millisecond


async def within(awaitable: Awaitable[T]) -> T:
    """Await `awaitable`, failing the test instead of hanging if it never completes."""
    return await asyncio.wait_for(awaitable, TIMEOUT)


async def run_ready(turns: int = 10) -> None:
    """Give the loop enough turns to run everything already runnable.

    With one event loop this is deterministic: a task still pending afterwards is
    blocked on something, not merely unscheduled. Used before asserting that
    something has *not* happened.
    """
    for _ in range(turns):
        await asyncio.sleep(0)
