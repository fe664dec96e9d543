"""The user guide's first example, end to end."""

from __future__ import annotations


async def test_job_succeeds_when_its_pods_do(controller, jobs):
    await jobs.submit(__import__("tests.e2e.conftest", fromlist=["genericjob"]).genericjob(
        "hello", {"worker": 2}, script={"run_for": 0.05, "exit_code": 0}))
    done = await jobs.wait_phase("hello", "Succeeded")
    assert done["status"]["aggregate"]["succeeded"] == 2
