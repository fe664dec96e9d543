"""Pods deleted behind the controller's back, jobs deleted mid-run, and objects the job does not own."""

from __future__ import annotations

import pytest

from .conftest import FOREVER, QUICK, condition, finish_pod, genericjob, phase, replicas, scripts, task, until

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

POD = "job-worker-0"
LABELS = {"genericjob.batch.tensorstack.dev/name": "job", "genericjob.batch.tensorstack.dev/replica-type": "worker",
          "genericjob.batch.tensorstack.dev/rank": "0"}


@pytest.mark.parametrize(("policy", "counted"), [("OnFailure", 1), ("Always", 1), ("Never", 0)])
async def test_a_running_pod_deleted_by_hand_is_recreated(cluster, controller, jobs, history, policy, counted):
    await jobs.submit(genericjob("job", {"worker": 2}, restart={"policy": policy, "limit": 2}))
    running = await jobs.wait_phase("job", "Running")
    first = replicas(running)[POD]["uid"]
    await jobs.core.delete_namespaced_pod(POD, "default")
    again = await jobs.wait("job", lambda j: replicas(j)[POD]["uid"] not in ("", first)
                            and replicas(j)[POD]["phase"] == "Running")
    assert phase(again) == "Running"
    assert task(again, "worker")["restartCount"] == counted and again["status"]["backoffCount"] == counted
    assert history.uids(POD) == [first, replicas(again)[POD]["uid"]]
    assert len(history.uids("job-worker-1")) == 1
    [event] = await jobs.wait_event("job", "Restarting")
    assert "pod was deleted" in event.message


async def test_a_completed_pod_deleted_by_hand_is_not_run_again(cluster, controller, jobs, history):
    scripts(cluster, "job", {"worker-0": QUICK, "*": FOREVER})
    await jobs.submit(genericjob("job", {"worker": 2}, restart={"policy": "OnFailure", "limit": 3}))
    await jobs.wait_replica("job", POD, lambda r: r["phase"] == "Succeeded")
    await jobs.core.delete_namespaced_pod(POD, "default")
    await jobs.wait_pods("job", lambda pods: [p.metadata.name for p in pods] == ["job-worker-1"])
    await finish_pod(jobs, "job-worker-1", 0)
    done = await jobs.wait_phase("job", "Succeeded")
    assert len(history.uids(POD)) == 1 and done["status"]["backoffCount"] == 0


async def test_deleting_a_job_mid_run_removes_everything_it_made(cluster, controller, jobs, history):
    job = genericjob("job", {"worker": 3}, service={"ports": [{"name": "http", "port": 80}]},
                     scheduler={"t9kScheduler": {"queue": "default"}})
    await jobs.submit(job)
    await jobs.wait_phase("job", "Running")
    assert len(await jobs.services("job")) == 3 and len(await jobs.podgroups()) == 1
    await jobs.delete("job")
    await jobs.wait_pods("job", lambda pods: pods == [])
    await until(lambda: _nothing_left(jobs), what="services and PodGroup gone")
    assert history.total() == 3  # nothing was recreated while the job went away
    # A new job of the same name starts from scratch.
    await jobs.submit(genericjob("job", {"worker": 1}, script=QUICK))
    done = await jobs.wait_phase("job", "Succeeded")
    assert done["status"]["backoffCount"] == 0 and len(history.uids(POD)) == 2


async def _nothing_left(jobs) -> bool:
    return await jobs.services("job") == [] and await jobs.podgroups() == []


async def test_children_of_other_owners_are_never_touched(cluster, controller, jobs):
    owner = await jobs.core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid, "controller": True}
    container = [{"name": "main", "image": "busybox:1.36"}]
    # Look-alikes: the job's labels, a name the job would use for a Service, but another controller.
    strangers = [
        {"metadata": {"name": "job-worker-5", "labels": {**LABELS, "genericjob.batch.tensorstack.dev/rank": "5"},
                      "ownerReferences": [ref]}, "spec": {"containers": container}},
        {"metadata": {"name": "lookalike", "labels": LABELS}, "spec": {"containers": container}},
    ]
    for pod in strangers:
        await jobs.core.create_namespaced_pod("default", pod)
    await jobs.core.create_namespaced_service("default", {
        "metadata": {"name": "job-worker-1", "labels": LABELS, "ownerReferences": [ref]},
        "spec": {"ports": [{"port": 80}], "selector": LABELS}})
    before = {p.metadata.name: p.metadata.uid for p in await jobs.pods("job")}
    job = genericjob("job", {"worker": 2}, script=QUICK, cleanUpPolicy="All",
                     service={"ports": [{"name": "http", "port": 80}]})
    await jobs.submit(job)
    done = await jobs.wait_phase("job", "Succeeded")
    await jobs.wait_pods("job", lambda pods: {p.metadata.name for p in pods} == set(before))
    after = {p.metadata.name: (p.metadata.uid, p.metadata.deletion_timestamp) for p in await jobs.pods("job")}
    assert after == {name: (uid, None) for name, uid in before.items()}
    [service] = await jobs.services("job")  # the job's own Services are cleaned up; the stranger is not
    assert service.metadata.owner_references[0].uid == owner.metadata.uid
    assert done["status"]["aggregate"]["succeeded"] + done["status"]["aggregate"]["deleted"] == 2


async def test_a_name_taken_by_another_owner_is_reported_and_retried(cluster, controller, jobs):
    await jobs.core.create_namespaced_pod("default", {
        "metadata": {"name": POD}, "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}})
    await jobs.submit(genericjob("job", {"worker": 1}, script=QUICK))
    [event] = await jobs.wait_event("job", "FailedCreate")
    assert event.type == "Warning" and POD in event.message
    seen = await jobs.get("job")
    assert replicas(seen)[POD]["phase"] == "Creating"
    stranger = await jobs.pod(POD)
    assert stranger.metadata.owner_references is None and stranger.metadata.deletion_timestamp is None
    await jobs.core.delete_namespaced_pod(POD, "default", grace_period_seconds=0)
    done = await jobs.wait_phase("job", "Succeeded")
    assert condition(done, "Completed")["status"] == "True"
