"""Pods stuck terminating (a lost node: the kubelet never confirms the deletion) do not hang the
job: once overdue, the controller force-deletes them."""

from __future__ import annotations

import pytest

from controller.jobs.execution.config import JobConfig
from localcluster.testing import until

from .conftest import FAST, genericjob, replicas, scripts

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

STUCK = {"stuck_terminating": True}


@pytest.fixture
def config() -> JobConfig:
    return JobConfig(workers=4, qps=0, informer_options=FAST, shutdown_timeout=5.0,
                            stuck_terminating_after=0.2, restart_backoff=0)


async def force_deleted(jobs, pod: str) -> list:
    return [e for e in await jobs.events("job") if e.reason == "ForceDeleted" and pod in e.message]


def stuck_job(**spec) -> dict:
    job = genericjob("job", {"worker": 2}, **spec)
    for replica_spec in job["spec"]["replicaSpecs"]:
        replica_spec["template"]["spec"]["terminationGracePeriodSeconds"] = 1
    return job


async def test_a_pause_is_not_held_up_by_a_pod_stuck_terminating(cluster, controller, jobs, history):
    scripts(cluster, "job", {"worker-0": STUCK})
    await jobs.submit(stuck_job())
    await jobs.wait_phase("job", "Running")
    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await jobs.wait_pods("job", lambda pods: pods == [])
    await jobs.wait_phase("job", "Paused")
    # The stuck pod's Event. The other worker's deletion is confirmed by its kubelet: on a loaded machine perhaps
    # later than its grace period (1 s) and the 0.2 s after it, and then it is force-deleted too, an Event of its own.
    [event] = await until(lambda: force_deleted(jobs, "job-worker-0"), 30, "job-worker-0 force-deleted")
    assert event.type == "Warning"
    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    await jobs.wait_phase("job", "Running")
    assert history.total() == 4


async def test_a_replica_whose_pod_is_stuck_terminating_is_replaced(cluster, controller, jobs, history):
    scripts(cluster, "job", {"worker-0": [STUCK, {}]})
    await jobs.submit(stuck_job(restart={"policy": "OnFailure", "limit": 1}))
    running = await jobs.wait_phase("job", "Running")
    first = replicas(running)["job-worker-0"]["uid"]
    await jobs.core.delete_namespaced_pod("job-worker-0", "default")  # its node is lost: never confirmed
    again = await jobs.wait("job", lambda j: replicas(j)["job-worker-0"]["uid"] not in ("", first)
                            and replicas(j)["job-worker-0"]["phase"] == "Running")
    assert len(history.uids("job-worker-0")) == 2
    assert again["status"]["phase"] == "Running" and again["status"]["backoffCount"] == 1
