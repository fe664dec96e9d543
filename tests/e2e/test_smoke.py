"""The smallest job, end to end."""

from __future__ import annotations

import pytest

from .conftest import QUICK, genericjob

pytestmark = pytest.mark.servers("local", "real")


async def test_job_succeeds_when_its_pods_do(server, controller, jobs):
    await jobs.submit(genericjob("hello", {"worker": 2}, script=QUICK))
    done = await jobs.wait_phase("hello", "Succeeded")
    assert done["status"]["aggregate"]["succeeded"] == 2
