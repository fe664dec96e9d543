"""localcluster's schedulers with the controller: T9k Scheduler's pods are bound as a gang (all of a PodGroup's
`minMember` pods at once, none before), and a pod naming a scheduler the cluster does not run stays Pending with
no condition and no Event, as on a real cluster."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from localcluster import LocalCluster
from tests.builders import JobBuilder

from .conftest import CRDS, FOREVER, condition, genericjob, template, until

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)
GROUP_KEY = "scheduler.tensorstack.dev/group-name"
PODGROUP = ("scheduler.tensorstack.dev", "v1beta1", "podgroups")


class Bindings:
    """When each pod was created and when it was bound (resourceVersions), seen from inside the store (on the real
    server: what its test kubelet watches)."""

    def __init__(self, cluster) -> None:
        self.created: dict[str, int] = {}
        self.bound: dict[str, int] = {}
        cluster.store.subscribe(self.on_event)

    def on_event(self, ev) -> None:
        if ev.key != ("", "pods"):
            return
        name, rv = ev.obj["metadata"]["name"], int(ev.obj["metadata"]["resourceVersion"])
        if ev.type == "ADDED":
            self.created.setdefault(name, rv)
        if ev.obj["spec"].get("nodeName"):
            self.bound.setdefault(name, rv)


def gang_pod(name: str, group: str, scheduler: str = "t9k-scheduler") -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {GROUP_KEY: group}, "annotations": {GROUP_KEY: group}},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "main", "image": "busybox"}]}}


async def running(core, name: str) -> None:
    async def check():
        return (await core.read_namespaced_pod(name, "default")).status.phase == "Running"

    await until(check, what=f"pod {name} Running")


async def assert_untouched(core, name: str) -> None:
    """Pending, bound to no node, no condition, no Event: what a pod no scheduler has looked at shows."""
    pod = await core.read_namespaced_pod(name, "default")
    assert (pod.status.phase, pod.spec.node_name, pod.status.conditions) == ("Pending", None, None)
    events = await core.list_namespaced_event("default", field_selector=f"involvedObject.name={name}")
    assert events.items == []


async def test_a_t9k_scheduler_job_runs_its_pods_only_once_all_exist(cluster, controller, jobs):
    seen = Bindings(cluster)
    await jobs.submit(genericjob("job", {"master": 1, "worker": 3}, scheduler={"t9kScheduler": {"queue": "default"}}))
    await jobs.wait_phase("job", "Running")
    await until(lambda: len(seen.bound) == 4, what="the gang's four pods bound")
    assert set(seen.bound) == set(seen.created) == {"job-master-0", "job-worker-0", "job-worker-1", "job-worker-2"}
    assert min(seen.bound.values()) > max(seen.created.values())  # none bound before the last one existed


async def test_a_podgroup_named_like_the_job_but_not_its_own_is_never_joined(cluster, controller, jobs, api_client):
    """A PodGroup named like the job, made beforehand by someone else (minMember 5), is not the job's: the job
    makes no pod that would join it, and says why (ChildConflict, the spec's "Names that are taken"); once it
    is deleted, the job makes its own group (minMember 3) and runs."""
    custom = client.CustomObjectsApi(api_client)
    group, version, plural = PODGROUP
    await custom.create_namespaced_custom_object(group, version, "default", plural, {
        "apiVersion": f"{group}/{version}", "kind": "PodGroup", "metadata": {"name": "job"},
        "spec": {"minMember": 5, "queue": "default"}})
    await jobs.submit(genericjob("job", {"worker": 3}, scheduler={"t9kScheduler": {"queue": "default"}}))
    waiting = await jobs.wait("job", lambda j: condition(j, "ChildConflict") is not None)
    assert "PodGroup job" in condition(waiting, "ChildConflict")["message"]
    assert await jobs.pods("job") == []
    stranger = await custom.get_namespaced_custom_object(group, version, "default", plural, "job")
    assert stranger["spec"]["minMember"] == 5 and not stranger["metadata"].get("ownerReferences")
    await custom.delete_namespaced_custom_object(group, version, "default", plural, "job")
    running = await jobs.wait_phase("job", "Running", timeout=30)
    assert condition(running, "ChildConflict")["status"] == "False"
    [own] = await jobs.podgroups()
    assert own["spec"]["minMember"] == 3 and own["metadata"]["ownerReferences"][0]["name"] == "job"


async def test_a_podgroup_larger_than_its_pods_keeps_them_pending(cluster, api_client):
    core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
    group, version, plural = PODGROUP
    await custom.create_namespaced_custom_object(group, version, "default", plural, {
        "apiVersion": f"{group}/{version}", "kind": "PodGroup", "metadata": {"name": "gang"},
        "spec": {"minMember": 3, "queue": "default"}})
    for name in ("gang-0", "gang-1"):
        await core.create_namespaced_pod("default", gang_pod(name, "gang"))
    # A pod of the default scheduler created after them runs: the scheduler has seen the gang's two pods.
    await core.create_namespaced_pod("default", gang_pod("marker", "none", "default-scheduler"))
    await running(core, "marker")
    for name in ("gang-0", "gang-1"):
        await assert_untouched(core, name)
    # The third member completes the gang: all three are bound and run.
    await core.create_namespaced_pod("default", gang_pod("gang-2", "gang"))
    for name in ("gang-0", "gang-1", "gang-2"):
        await running(core, name)


async def test_a_job_whose_pods_name_an_unknown_scheduler_stays_pending(cluster, controller, jobs):
    job = JobBuilder("job").replica("worker", 2, template=template(FOREVER, schedulerName="my-scheduler")).obj()
    await jobs.submit(job)
    await jobs.wait_pods("job", lambda pods: len(pods) == 2)
    # A job of the default scheduler submitted after it runs: the scheduler has seen the first job's pods.
    await jobs.submit(genericjob("other", {"worker": 1}))
    await jobs.wait_phase("other", "Running")
    for pod in await jobs.pods("job"):
        assert pod.spec.scheduler_name == "my-scheduler"
        await assert_untouched(jobs.core, pod.metadata.name)
    assert (await jobs.get("job"))["status"]["phase"] != "Running"


async def test_t9k_scheduler_pods_wait_for_the_podgroup_crd():
    """Without the PodGroup CRD no T9k Scheduler runs: its pods stay Pending; installing the CRD starts it."""
    async with LocalCluster(runner="scripted") as cluster:
        pods = cluster.api.registry.get("", "v1", "pods")
        cluster.api.create(pods, "default", gang_pod("alone", "solo"))
        cluster.api.create(pods, "default", gang_pod("marker", "none", "default-scheduler"))
        await until(lambda: cluster.api.get(pods, "default", "marker")["status"].get("phase") == "Running")
        assert not cluster.api.get(pods, "default", "alone")["spec"].get("nodeName")
        cluster.apply_crds(CRDS)
        group, version, plural = PODGROUP
        cluster.api.create(cluster.api.registry.get(group, version, plural), "default", {
            "apiVersion": f"{group}/{version}", "kind": "PodGroup", "metadata": {"name": "solo"},
            "spec": {"minMember": 1, "queue": "default"}})
        await until(lambda: cluster.api.get(pods, "default", "alone")["status"].get("phase") == "Running")
