"""Names that are taken, end to end (the spec's "Live jobs, settled further"; issue 33's defects 6 and 9): a
child (pod, Service, PodGroup) whose name already belongs to an object the job does not control is never
adopted and never skipped in silence. The job waits with a ChildConflict condition naming the object and its
owner, says so in one Warning Event (counted, not repeated each second), retries with back-off, and goes on
once the name is free; a job whose PodGroup name is taken creates no pod that would join the other's gang."""

from __future__ import annotations

import pytest

from .conftest import FOREVER, Jobs, condition, genericjob, phase, until
from .test_pytorch import pjob

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

T9K = {"t9kScheduler": {"queue": "default", "priority": 7}}


def conflict(job: dict) -> dict | None:
    return condition(job, "ChildConflict")


def taken(job: dict, *words: str) -> bool:
    found = conflict(job)
    return bool(found and found["status"] == "True" and all(w in found["message"] for w in words))


async def warnings(jobs: Jobs, name: str, kind: str) -> list:
    return [e for e in await jobs.events(name) if e.reason == "FailedCreate" and e.involved_object.kind == kind]


async def test_a_pod_name_taken_by_another_job_is_shown_counted_and_released(cluster, controller, jobs):
    # Job `a-worker` type `x` and job `a` type `worker-x` both want the pod a-worker-x-0.
    await jobs.submit(genericjob("a-worker", {"x": 1}, script=FOREVER))
    await jobs.wait_phase("a-worker", "Running")
    await jobs.submit(genericjob("a", {"worker-x": 1}, script=FOREVER))
    waiting = await jobs.wait("a", lambda j: taken(j, "pod a-worker-x-0", "GenericJob a-worker"))
    assert phase(waiting) == "Pending" and waiting["status"]["observedGeneration"] == 1
    [event] = await until(lambda: warnings(jobs, "a", "GenericJob"), what="the Warning Event")
    assert event.type == "Warning" and "a-worker-x-0" in event.message and "GenericJob a-worker" in event.message
    # Back-off, not a retry each second: after some seconds, still one Event, counted a few times at most.
    await until(lambda: _counted(jobs, 3), timeout=15, what="three attempts")
    [event] = await warnings(jobs, "a", "GenericJob")
    assert event.count <= 4
    # The other job's pod was never touched, nor adopted.
    [pod] = await jobs.pods("a-worker")
    assert pod.metadata.owner_references[0].name == "a-worker" and pod.metadata.deletion_timestamp is None
    await jobs.delete("a-worker")
    running = await jobs.wait("a", lambda j: phase(j) == "Running", timeout=40)
    assert (conflict(running)["status"], conflict(running)["reason"]) == ("False", "NamesFree")
    [mine] = await jobs.pods("a")
    assert mine.metadata.name == "a-worker-x-0" and mine.metadata.owner_references[0].name == "a"


async def _counted(jobs: Jobs, count: int):
    found = await warnings(jobs, "a", "GenericJob")
    return found if found and sum(e.count or 1 for e in found) >= count else None


async def test_a_service_name_taken_by_a_stranger_is_shown_and_released(cluster, controller, jobs):
    owner = await jobs.core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid, "controller": True}
    await jobs.core.create_namespaced_service("default", {
        "metadata": {"name": "s-worker-0", "ownerReferences": [ref]},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "stranger"}}})
    await jobs.submit(genericjob("s", {"worker": 1}, script=FOREVER, service={"ports": [{"name": "http", "port": 80}]}))
    await jobs.wait("s", lambda j: taken(j, "Service s-worker-0", "ConfigMap owner"))
    [event] = await until(lambda: warnings(jobs, "s", "GenericJob"), what="the Warning Event")
    assert "Service s-worker-0" in event.message
    stranger = await jobs.core.read_namespaced_service("s-worker-0", "default")
    assert stranger.metadata.owner_references[0].uid == owner.metadata.uid  # never adopted
    await jobs.core.delete_namespaced_service("s-worker-0", "default")
    freed = await jobs.wait("s", lambda j: (conflict(j) or {}).get("status") == "False", timeout=40)
    assert conflict(freed)["reason"] == "NamesFree"
    [service] = await jobs.services("s")
    assert service.metadata.owner_references[0].name == "s" and service.spec.selector.get("app") is None


@pytest.mark.usefixtures("pj_controller")
async def test_a_podgroup_taken_by_a_job_of_another_kind_holds_the_pods_back(cluster, controller, jobs, pjobs):
    # A GenericJob `a` and a PyTorchTrainingJob `a`: the same PodGroup name. The second must not join the first's
    # gang (its queue, priority and minMember): it waits, with no pod at all, until the name is free.
    await jobs.submit(genericjob("a", {"worker": 2}, script=FOREVER, scheduler=T9K))
    await jobs.wait_phase("a", "Running")
    [group] = await jobs.podgroups()
    await pjobs.submit(pjob("a", {"master": 1, "worker": 1}, scheduler={"t9kScheduler": {"queue": "other"}}))
    waiting = await pjobs.wait("a", lambda j: taken(j, "PodGroup a", "GenericJob a"))
    assert phase(waiting) in (None, "Pending")
    [event] = await until(lambda: warnings(jobs, "a", "PyTorchTrainingJob"), what="the Warning Event")
    assert "PodGroup a" in event.message and event.type == "Warning"
    assert await pjobs.pods("a") == []  # no pod joined the GenericJob's gang
    [still] = await jobs.podgroups()
    assert still["spec"] == group["spec"] and still["metadata"]["uid"] == group["metadata"]["uid"]
    await jobs.delete("a")
    running = await pjobs.wait("a", lambda j: (conflict(j) or {}).get("status") == "False", timeout=40)
    assert conflict(running)["reason"] == "NamesFree"
    [mine] = await jobs.podgroups()
    assert mine["spec"]["queue"] == "other" and mine["metadata"]["ownerReferences"][0]["kind"] == "PyTorchTrainingJob"
    await pjobs.wait_pods("a", lambda pods: len(pods) == 2, timeout=20)
