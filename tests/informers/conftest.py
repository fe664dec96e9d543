"""Fixtures for informer tests: fast timings, a factory that is always stopped, pod helpers."""

from __future__ import annotations

import pytest

from informers import BackoffPolicy, InformerFactory, InformerOptions

# client-go's timings shrunk so that failures and recoveries take milliseconds, not seconds.
FAST = InformerOptions(
    watch_timeout=(30.0, 60.0),
    watchdog_timeout=5.0,
    request_timeout=5.0,
    backoff=BackoffPolicy(initial=0.02, cap=0.2, reset_after=5.0),
)


@pytest.fixture
def options() -> InformerOptions:
    return FAST


@pytest.fixture
async def factory(rest_client, options):
    made = InformerFactory(rest_client, options=options)
    yield made
    await made.stop()
