"""A status write that loses to a newer version (409) is retried when that version reaches the cache,
not when the shared rate limiter gets round to it."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from controller.kinds.genericjob.models import GROUP, PLURAL, VERSION
from workqueue import ItemExponentialFailureRateLimiter

from .conftest import FOREVER, MERGE, finish_pod, genericjob, phase, until

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)


def lose_the_succeeded_write(made, api_client) -> list[str]:
    """Before the controller's first write of phase Succeeded, someone else writes the job's status:
    the controller's write then carries a stale resourceVersion and gets 409."""
    custom = client.CustomObjectsApi(api_client)
    write = made.client.replace_status
    conflicts: list[str] = []

    async def replace_status(resource, job: dict, status: dict) -> dict:
        if status.get("phase") == "Succeeded" and not conflicts:
            conflicts.append(job["metadata"]["resourceVersion"])
            meta = job["metadata"]
            await custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, meta["namespace"], PLURAL, meta["name"], {"status": {"backoffCount": 7}},
                _content_type=MERGE)
        return await write(resource, job, status)

    made.client.replace_status = replace_status
    return conflicts


async def test_a_lost_status_write_is_retried_when_the_newer_version_arrives(cluster, api_client, controller, jobs):
    # A fallback retry 60 s away: only the newer version's arrival can bring the job to Succeeded in time.
    controller.queue.rate_limiter = ItemExponentialFailureRateLimiter(base=60.0, max=60.0)
    conflicts = lose_the_succeeded_write(controller, api_client)
    await jobs.submit(genericjob("job", {"worker": 1}, FOREVER))
    await jobs.wait_phase("job", "Running")
    await finish_pod(jobs, "job-worker-0", 0)
    job = await jobs.wait("job", lambda j: phase(j) == "Succeeded", timeout=5.0)
    assert len(conflicts) == 1 and job["status"]["backoffCount"] == 0  # the controller's status, written over
    assert controller.client.requests[("update", "genericjobs/status", 409)] == 1
    assert controller.echoes.parked == {}


async def test_a_newer_version_already_cached_is_reconciled_at_once(cluster, controller, controllers, jobs):
    await jobs.submit(genericjob("job", {"worker": 1}, FOREVER))
    await jobs.wait_phase("job", "Running")
    await until(controllers.idle, what="idle")
    cached = controller.jobs.lister.get("default/job")["metadata"]["resourceVersion"]
    before = controllers.reconciles["default/job"]
    controller.runtime._await_newer("default/job", "1")  # the cache holds a version newer than the one that lost
    await until(lambda: controllers.reconciles["default/job"] == before + 1, what="reconciled at once")
    assert controller.echoes.parked == {}
    controller.runtime._await_newer("default/job", cached)  # not yet: waits for the next version
    assert controller.echoes.parked == {"default/job": cached}
    await jobs.patch("job", {"metadata": {"annotations": {"a": "b"}}})  # not a generation or label change
    await until(lambda: controllers.reconciles["default/job"] == before + 2, what="reconciled on the new version")
    assert controller.echoes.parked == {}


async def test_a_wait_for_a_version_certain_to_come_parks_the_job_without_a_retry(cluster, controller, controllers,
                                                                                     jobs):
    """A reconcile that finds the job cache behind its own status write waits for the echo only
    (`Result(lost_at=...)` without requeue_after): parked, with no fallback retry and no backoff counted."""
    from controller.runtime.result import Result

    await jobs.submit(genericjob("job", {"worker": 1}, FOREVER))
    await jobs.wait_phase("job", "Running")
    await until(controllers.idle, what="idle")
    cached = controller.jobs.lister.get("default/job")["metadata"]["resourceVersion"]
    before = controllers.reconciles["default/job"]
    reconcile = controller.reconciler.reconcile  # counted by `controllers`
    waits: list[str] = []

    async def behind_once(key: str) -> Result:
        if not waits:
            waits.append(key)
            return Result(lost_at=cached)
        return await reconcile(key)

    controller.reconciler.reconcile = behind_once
    controller.queue.add("default/job")
    await until(lambda: controller.echoes.parked == {"default/job": cached}, what="parked")
    assert controller.queue.num_requeues("default/job") == 0  # no retry with backoff besides the wait
    await jobs.patch("job", {"metadata": {"annotations": {"a": "b"}}})  # a newer version: the echo's stand-in
    await until(lambda: controllers.reconciles["default/job"] == before + 1, what="reconciled on the new version")
    assert controller.echoes.parked == {} and waits == ["default/job"]
