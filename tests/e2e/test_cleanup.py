"""Clean-up once the job has finished: None keeps everything, Unfinished deletes the replicas still
going (with their Services), All deletes every replica; the PodGroup goes with either."""

from __future__ import annotations

import pytest

from .conftest import FAIL, FOREVER, QUICK, finish_pod, genericjob, replicas, scripts, until

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

SERVICE = {"ports": [{"name": "http", "port": 2222}]}
SCHEDULER = {"t9kScheduler": {"queue": "default", "priority": 10}}


def cleanup_job(policy: str | None, **spec) -> dict:
    extra = {"cleanUpPolicy": policy} if policy else {}
    return genericjob("job", {"worker": 3}, successRules=[{"worker": [0]}], failureRules=[{"worker": [2]}],
                      restart={"policy": "Never"}, service=SERVICE, scheduler=SCHEDULER, **extra, **spec)


async def names(listing) -> list[str]:
    return [item.metadata.name for item in await listing]


@pytest.mark.parametrize("policy", [None, "None"])
async def test_none_leaves_every_replica_service_and_the_podgroup(cluster, controller, jobs, policy):
    scripts(cluster, "job", {"worker-0": QUICK, "*": FOREVER})
    await jobs.submit(cleanup_job(policy))
    done = await jobs.wait_phase("job", "Succeeded")
    assert {n: r["phase"] for n, r in replicas(done).items()} == {
        "job-worker-0": "Succeeded", "job-worker-1": "Running", "job-worker-2": "Running"}
    pods = await jobs.pods("job")
    assert [(p.metadata.name, p.metadata.deletion_timestamp) for p in pods] == [
        ("job-worker-0", None), ("job-worker-1", None), ("job-worker-2", None)]
    assert await names(jobs.services("job")) == ["job-worker-0", "job-worker-1", "job-worker-2"]
    assert len(await jobs.podgroups()) == 1


async def test_unfinished_deletes_the_replicas_still_going_and_their_services(cluster, controller, jobs):
    scripts(cluster, "job", {"worker-1": FAIL, "*": FOREVER})
    await jobs.submit(cleanup_job("Unfinished"))
    # worker-1 fails first (outside the failure rules), then worker-0 succeeds: the job succeeds
    await jobs.wait_replica("job", "job-worker-1", lambda r: r["phase"] == "Failed")
    await finish_pod(jobs, "job-worker-0", 0)
    await jobs.wait_phase("job", "Succeeded")
    await jobs.wait_pods("job", lambda pods: [p.metadata.name for p in pods] == ["job-worker-0", "job-worker-1"])
    await until(lambda: names(jobs.services("job")), what="services listed")
    assert await names(jobs.services("job")) == ["job-worker-0", "job-worker-1"]
    await until(lambda: _no_podgroups(jobs), what="PodGroup deleted")
    done = await jobs.wait("job", lambda j: replicas(j)["job-worker-2"]["phase"] == "Deleted")
    assert {n: r["phase"] for n, r in replicas(done).items()} == {
        "job-worker-0": "Succeeded", "job-worker-1": "Failed", "job-worker-2": "Deleted"}
    assert done["status"]["aggregate"]["deleted"] == 1
    events = await jobs.wait_event("job", "SuccessfulDelete")
    assert [e.message for e in events] == ["Deleted pod: job-worker-2"]


@pytest.mark.parametrize("outcome", ["Succeeded", "Failed"])
async def test_all_deletes_every_replica_service_and_the_podgroup(cluster, controller, jobs, outcome):
    ending = {"worker-0": QUICK} if outcome == "Succeeded" else {"worker-2": FAIL}
    scripts(cluster, "job", {**ending, "worker-1": QUICK, "*": FOREVER})
    await jobs.submit(cleanup_job("All"))
    await jobs.wait_phase("job", outcome)
    await jobs.wait_pods("job", lambda pods: pods == [])
    await until(lambda: _gone(jobs), what="services and PodGroup deleted")
    done = await jobs.wait("job", lambda j: all(r["phase"] == "Deleted" for r in replicas(j).values()))
    assert done["status"]["aggregate"]["deleted"] == 3
    assert done["status"]["phase"] == outcome  # clean-up does not change the outcome
    events = await jobs.wait_event("job", "SuccessfulDelete", count=3)
    assert sorted(e.message for e in events) == [f"Deleted pod: job-worker-{rank}" for rank in range(3)]


async def _no_podgroups(jobs) -> bool:
    return await jobs.podgroups() == []


async def _gone(jobs) -> bool:
    return await jobs.services("job") == [] and await jobs.podgroups() == []
