"""Services (headless, one per replica, selecting exactly that replica's pod) and T9k Scheduler
(one PodGroup per job, pods pointing at it)."""

from __future__ import annotations

import pytest

from .conftest import genericjob, until

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

GROUP_KEY = "scheduler.tensorstack.dev/group-name"


async def test_one_headless_service_per_replica_selecting_exactly_its_pod(cluster, controller, jobs):
    ports = [{"name": "http", "port": 2222}, {"name": "grpc", "port": 50051, "targetPort": 9000},
             {"name": "dns", "port": 53, "protocol": "UDP"}]
    await jobs.submit(genericjob("job", {"master": 1, "worker": 3}, service={"ports": ports}))
    running = await jobs.wait_phase("job", "Running")
    services = await jobs.services("job")
    assert [s.metadata.name for s in services] == ["job-master-0", "job-worker-0", "job-worker-1", "job-worker-2"]
    pods = await jobs.pods("job")
    for service in services:
        assert service.spec.cluster_ip == "None"
        assert [(p.name, p.port, str(p.target_port), p.protocol) for p in service.spec.ports] == [
            ("http", 2222, "2222", "TCP"), ("grpc", 50051, "9000", "TCP"), ("dns", 53, "53", "UDP")]
        [owner] = service.metadata.owner_references
        assert (owner.kind, owner.uid, owner.controller) == ("GenericJob", running["metadata"]["uid"], True)
        selector = ",".join(f"{k}={v}" for k, v in service.spec.selector.items())
        selected = await jobs.core.list_namespaced_pod("default", label_selector=selector)
        assert [p.metadata.name for p in selected.items] == [service.metadata.name]
    assert len(pods) == 4


async def test_no_service_without_spec_service(cluster, controller, jobs):
    await jobs.submit(genericjob("job", {"worker": 2}))
    await jobs.wait_phase("job", "Running")
    assert await jobs.services("job") == []


async def test_a_service_deleted_by_hand_comes_back(cluster, controller, jobs):
    await jobs.submit(genericjob("job", {"worker": 2}, service={"ports": [{"name": "http", "port": 80}]}))
    await jobs.wait_phase("job", "Running")
    [first, _] = await jobs.services("job")
    await jobs.core.delete_namespaced_service(first.metadata.name, "default")
    back = await jobs.wait_pods("job", lambda _: True)  # the pods are untouched
    assert len(back) == 2

    async def recreated():
        found = {s.metadata.name: s.metadata.uid for s in await jobs.services("job")}
        return found.get(first.metadata.name) not in (None, first.metadata.uid)

    await until(recreated, what="service recreated")


async def test_t9k_scheduler_podgroup_and_pods(cluster, controller, jobs):
    job = genericjob("job", {"master": 1, "worker": 3}, scheduler={"t9kScheduler": {"queue": "gpu", "priority": 7}})
    await jobs.submit(job)
    running = await jobs.wait_phase("job", "Running")
    [group] = await jobs.podgroups()
    assert group["metadata"]["name"] == "job"
    assert group["spec"] == {"minMember": 4, "queue": "gpu", "priority": 7}
    [owner] = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("GenericJob", running["metadata"]["uid"], True)
    for pod in await jobs.pods("job"):
        assert pod.spec.scheduler_name == "t9k-scheduler"
        assert pod.metadata.labels[GROUP_KEY] == "job"
        assert pod.metadata.annotations[GROUP_KEY] == "job"


async def test_t9k_scheduler_priority_defaults_to_zero(cluster, controller, jobs):
    await jobs.submit(genericjob("job", {"worker": 2}, scheduler={"t9kScheduler": {"queue": "default"}}))
    await jobs.wait_phase("job", "Running")
    [group] = await jobs.podgroups()
    assert group["spec"] == {"minMember": 2, "queue": "default", "priority": 0}
