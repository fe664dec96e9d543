"""Waiting, in a test, for a condition that no event reports (a process's output file, a server's counter, an
elector's state): the one polling helper every test uses. A stream read until a line or an event matches
(localcluster.testing's kubectl.py, `Lines.until`, test_watch.py's `Watch.until`) is not polling, and stays with its
stream."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest


async def until(check: Callable[[], Any | Awaitable[Any]], timeout: float = 10.0, what: str = "condition",
                interval: float = 0.02) -> Any:
    """Call `check()` (sync or async) every `interval` seconds until it returns something truthy, and return that;
    fail the test after `timeout` seconds, saying `what` was awaited and the last value seen."""
    last = None
    try:
        async with asyncio.timeout(timeout):
            while True:
                last = check()
                if asyncio.iscoroutine(last):
                    last = await last
                if last:
                    return last
                await asyncio.sleep(interval)
    except TimeoutError:
        pytest.fail(f"{what} not reached in {timeout}s (last: {last!r})")
