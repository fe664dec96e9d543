"""Run modes: debug (command override, default `sleep inf`, skipInitContainer, no rules), and pause
(pods deleted, Paused) then resume (Resuming, resumeSpecs overrides, Running)."""

from __future__ import annotations

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from .conftest import FOREVER, MERGE, QUICK, condition, genericjob, phase, replicas, scripts, task, until

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

RESUME = [{"type": "worker", "skipInitContainer": True, "command": ["resume", "$(rank)"], "args": ["--from", "ckpt"]}]


def with_init(job: dict) -> dict:
    for spec in job["spec"]["replicaSpecs"]:
        spec["template"]["spec"]["initContainers"] = [{"name": "prepare", "image": "busybox:1.36",
                                                       "command": ["true"]}]
        spec["template"]["spec"]["containers"][0]["args"] = ["--flag"]
    return job


async def test_debug_overrides_command_of_each_type_and_skips_rules(cluster, controller, jobs, history):
    debug = {"enabled": True, "replicaSpecs": [{"type": "worker", "command": ["debug-me", "$(type)"]},
                                               {"type": "ps", "skipInitContainer": True}]}
    scripts(cluster, "job", {"*": [QUICK, FOREVER]})
    job = with_init(genericjob("job", {"worker": 2, "ps": 1, "chief": 1}, runMode={"debug": debug}))
    await jobs.submit(job)
    # The pods exit at once, yet no rule is evaluated in debug mode: the job keeps running, and each debug pod
    # that ended is replaced as it was, counting no restart.
    names = ["job-chief-0", "job-ps-0", "job-worker-0", "job-worker-1"]
    await until(lambda: all(len(history.uids(name)) == 2 for name in names), what="each debug pod replaced once")
    live = await jobs.wait_pods("job", lambda found: len(found) == 4 and all(
        p.status.phase == "Running" and p.metadata.deletion_timestamp is None for p in found))
    seen = await jobs.wait("job", lambda j: {r["uid"] for r in replicas(j).values()} == {
        p.metadata.uid for p in live})
    assert phase(seen) == "Running" and seen["status"]["backoffCount"] == 0
    assert condition(seen, "Completed")["status"] == "False"
    pods = {p.metadata.name: p for p in live}
    assert pods["job-worker-1"].spec.containers[0].command == ["debug-me", "worker"]
    assert pods["job-ps-0"].spec.containers[0].command == ["sleep", "inf"]  # the default command
    assert pods["job-chief-0"].spec.containers[0].command == ["sleep", "inf"]
    assert {p.spec.containers[0].args for p in pods.values()} == {None}
    assert pods["job-ps-0"].spec.init_containers is None
    assert [c.name for c in pods["job-worker-0"].spec.init_containers] == ["prepare"]
    assert [c.name for c in pods["job-chief-0"].spec.init_containers] == ["prepare"]


async def test_pause_deletes_the_pods_and_resume_recreates_them_with_resume_specs(cluster, controller, jobs,
                                                                                 history):
    # The resumed worker-0 cannot start (its image "pulls" forever) so Resuming can be seen, until
    # the test plays the kubelet and starts it.
    scripts(cluster, "job", {"worker-0": [FOREVER, {"fail_to_start": "ImagePullBackOff"}], "*": FOREVER})
    job = with_init(genericjob("job", {"worker": 2}, runMode={"pause": {"enabled": False, "resumeSpecs": RESUME}}))
    await jobs.submit(job)
    running = await jobs.wait_phase("job", "Running")
    first_uids = {name: r["uid"] for name, r in replicas(running).items()}

    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await jobs.wait_pods("job", lambda pods: pods == [])
    paused = await jobs.wait("job", lambda j: phase(j) == "Paused"
                             and condition(j, "Paused")["message"] == "The job is paused: all its pods are deleted.")
    assert condition(paused, "Paused")["status"] == "True"
    assert condition(paused, "Running")["status"] == "False"
    assert {r["phase"] for r in replicas(paused).values()} == {"Deleted"}
    assert paused["status"]["aggregate"]["deleted"] == 2
    assert set(first_uids.values()) <= history.deleted

    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    resuming = await jobs.wait("job", lambda j: phase(j) == "Resuming"
                               and replicas(j)["job-worker-1"]["phase"] == "Running"
                               and replicas(j)["job-worker-0"]["phase"] == "Pending")
    assert condition(resuming, "Paused")["status"] == "False"
    pods = await jobs.pods("job")
    for rank, pod in enumerate(pods):
        assert pod.metadata.uid != first_uids[pod.metadata.name]
        assert pod.spec.containers[0].command == ["resume", str(rank)]
        assert pod.spec.containers[0].args == ["--from", "ckpt"]
        assert pod.spec.init_containers is None
    await start_pod(jobs, "job-worker-0")
    resumed = await jobs.wait_phase("job", "Running")
    assert resumed["status"]["backoffCount"] == 0  # a pause is not a restart
    assert condition(resumed, "Running")["status"] == "True"
    events = await jobs.wait_event("job", "Resuming")
    assert [e.message for e in events] == ["The job is resuming."]
    await jobs.wait_event("job", "Paused")


async def start_pod(jobs, name: str) -> None:
    """Play the kubelet: start a pod stuck waiting."""
    body = {"status": {"phase": "Running", "containerStatuses": [
        {"name": "main", "image": "busybox:1.36", "imageID": "", "ready": True, "restartCount": 0,
         "state": {"running": {}}}]}}
    await jobs.core.patch_namespaced_pod_status(name, "default", body, _content_type=MERGE)



@pytest.mark.servers("local")  # the pause and resume of the test above, on the real server already
async def test_resume_without_resume_specs_uses_the_template(cluster, controller, jobs):
    await jobs.submit(with_init(genericjob("job", {"worker": 2})))
    await jobs.wait_phase("job", "Running")
    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await jobs.wait_phase("job", "Paused")
    await jobs.wait_pods("job", lambda pods: pods == [])
    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    await jobs.wait_phase("job", "Running")
    for pod in await jobs.wait_pods("job", lambda pods: len(pods) == 2):
        assert pod.spec.containers[0].command == ["sh", "-c", "echo worker " + pod.metadata.name[-1]]
        assert pod.spec.containers[0].args == ["--flag"]
        assert [c.name for c in pod.spec.init_containers] == ["prepare"]



@pytest.mark.servers("local")  # the controller's counting across a pause: the server's part is the test above's
async def test_restart_counts_survive_a_pause(cluster, controller, jobs):
    scripts(cluster, "job", {"worker-0": [{"run_for": 0.05, "exit_code": 3}, FOREVER]})
    await jobs.submit(genericjob("job", restart={"policy": "OnFailure", "limit": 1}))
    await jobs.wait("job", lambda j: task(j, "worker").get("restartCount") == 1 and phase(j) == "Running"
                    and replicas(j)["job-worker-0"]["phase"] == "Running")
    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await jobs.wait_phase("job", "Paused")
    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    resumed = await jobs.wait("job", lambda j: phase(j) == "Running"
                              and replicas(j)["job-worker-0"]["phase"] == "Running")
    assert resumed["status"]["backoffCount"] == 1


async def test_a_job_created_paused_creates_nothing(cluster, controller, jobs):
    job = genericjob("job", {"worker": 2}, runMode={"pause": {"enabled": True}},
                     service={"ports": [{"name": "http", "port": 2222}]},
                     scheduler={"t9kScheduler": {"queue": "default"}})
    await jobs.submit(job)
    paused = await jobs.wait_phase("job", "Paused")
    assert condition(paused, "Paused")["status"] == "True"
    assert "startTime" not in paused["status"]
    assert await jobs.pods("job") == []
    assert await jobs.services("job") == []
    assert await jobs.podgroups() == []
    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    running = await jobs.wait_phase("job", "Running")
    assert running["status"]["startTime"]
    assert len(await jobs.pods("job")) == 2
    await until(lambda: _made(jobs), what="services and PodGroup")


async def _made(jobs) -> bool:
    return len(await jobs.services("job")) == 2 and len(await jobs.podgroups()) == 1


async def test_resume_specs_cannot_change_once_set(cluster, controller, jobs):
    await jobs.submit(genericjob("job", runMode={"pause": {"enabled": True, "resumeSpecs": RESUME}}))
    changed = [{**RESUME[0], "command": ["other"]}]
    with pytest.raises(ApiException) as caught:
        await jobs.patch("job", {"spec": {"runMode": {"pause": {"resumeSpecs": changed}}}})
    assert caught.value.status == 422
    assert "resumeSpecs cannot be changed once set" in caught.value.body
    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": False}}}})  # toggling is allowed
