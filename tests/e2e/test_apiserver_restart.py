"""An API server restart (issue 12, fault 1): the controller must see what changed and act within seconds.

After a restart the apiserver's watch cache starts afresh, so every watch from before gets 410,
while etcd still serves paginated lists at the old versions. A pod failure made during the outage,
or just after it, must be acted on within seconds, with one relist per informer, not a loop.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from .conftest import FOREVER, MERGE, QUICK, finish_pod, genericjob, replicas, scripts, until

POD = "job-worker-0"
FAILED = {"status": {"phase": "Failed", "containerStatuses": [
    {"name": "main", "image": "busybox:1.36", "imageID": "", "ready": False, "restartCount": 0,
     "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}}


def fail_pod(cluster, name: str) -> None:
    """Play the kubelet, writing through etcd (in-process): the HTTP API may be down."""
    cluster.api.patch(cluster.registry.get("", "v1", "pods"), "default", name, MERGE, FAILED, "status")


@pytest.mark.parametrize("when", ["during", "just after"])
async def test_a_pod_failure_around_an_apiserver_restart_is_acted_on_within_seconds(cluster, controller, jobs,
                                                                                     when):
    await jobs.submit(genericjob("job", restart={"policy": "Never"}))
    await jobs.wait_phase("job", "Running")
    restart = asyncio.create_task(cluster.restart(downtime=1.0))
    await until(lambda: not cluster.serving, what="the server to stop")
    # Some write while it is down (other clients use other apiservers): every watch's version is now older
    # than the restarted watch cache, as in a real cluster, where writes never stop.
    configmaps = cluster.registry.get("", "v1", "configmaps")
    cluster.api.create(configmaps, "default", {"metadata": {"name": "elsewhere"}, "data": {}})
    if when == "during":
        fail_pod(cluster, POD)
    await restart
    back = time.monotonic()
    if when == "just after":
        fail_pod(cluster, POD)
    await jobs.wait_phase("job", "Failed", timeout=10)
    assert time.monotonic() - back < 5
    # Each informer relists once after its watch's 410 (the idle ones whenever their backoff lets them
    # re-watch), and its watch works again: no relist loop.
    informers = controller.factory.informers
    await until(lambda: all(informer.stats.relists >= 1 for informer in informers), what="every informer relisted")
    await jobs.submit(genericjob("next"))
    await jobs.wait_phase("next", "Running")
    relists = {str(informer): informer.stats.relists for informer in informers}
    assert relists == dict.fromkeys(relists, 1)


@pytest.mark.servers("local", "real")  # kube-apiserver stopped and started on the same etcd (tests/real)
async def test_after_an_apiserver_restart_the_informers_resume_and_a_job_still_finishes(cluster, controller, jobs):
    scripts(cluster, "job", {"worker-0": FOREVER, "worker-1": QUICK})
    await jobs.submit(genericjob("job", {"worker": 2}))
    await jobs.wait("job", lambda j: replicas(j).get("job-worker-1", {}).get("phase") == "Succeeded"
                    and replicas(j).get("job-worker-0", {}).get("phase") == "Running")
    await cluster.restart(downtime=0.5)
    # after the restart: a pod ends (its kubelet writes to the new server), the controller must see it
    await finish_pod(jobs, "job-worker-0", 0)
    await jobs.wait_phase("job", "Succeeded", timeout=60)
    await jobs.submit(genericjob("next", script=QUICK))
    await jobs.wait_phase("next", "Succeeded", timeout=60)  # the jobs' and pods' informers both resumed
