"""`local --logs` shows every pod's output, however short the pod's life: the progress (controller/devtools/
progress.py) follows a pod from the moment the pod says its container started, not when the job's status next lists
it, and drains the finished pods' streams before the summary.

The test plays the controller: it makes the job, its pods (real processes) and the job's status itself, in the
order that used to lose the output."""

from __future__ import annotations

import asyncio
import io

import pytest
from kubernetes_asyncio import client, config

from controller.devtools.pod_logs import LogFollower
from controller.devtools.progress import JobProgress
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient
from localcluster import LocalCluster
from localcluster.testing import until
from tests.e2e.conftest import CRDS

pytestmark = pytest.mark.slow  # pods as processes

JOBS = "/apis/batch.tensorstack.dev/v1beta1/namespaces/default/genericjobs"
PODS = "/api/v1/namespaces/default/pods"


def job() -> dict:
    return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "metadata": {"name": "quick"},
            "spec": {"replicaSpecs": [{"type": "worker", "replicas": 1, "template": {"spec": {"containers": [
                {"name": "main", "image": "ignored", "command": ["sh", "-c", "true"]}]}}}]}}


def pod(owner: dict, command: str) -> dict:
    meta = owner["metadata"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "quick-worker-0", "ownerReferences": [
                {"apiVersion": owner["apiVersion"], "kind": "GenericJob", "name": meta["name"], "uid": meta["uid"],
                 "controller": True}]},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "ignored", "command": ["sh", "-c", command]}]}}


async def succeed(rest: RestClient, record: dict) -> None:
    """The job's status as the controller writes it at the end: Succeeded, the replica's record with it."""
    status = {"phase": "Succeeded", "tasks": [{"type": "worker", "replicas": [record]}]}
    await rest.call("PATCH", f"{JOBS}/quick/status", {"status": status}, content_type="application/merge-patch+json")


async def until_printed(out: io.StringIO, *texts: str) -> None:
    await until(lambda: all(text in out.getvalue() for text in texts), timeout=30, what=f"{texts} printed")


@pytest.fixture
async def served():
    async with LocalCluster(runner="process") as cluster:
        cluster.apply_crds(CRDS)
        configuration = client.Configuration()
        await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
        async with RestClient(settings_from_configuration(configuration)) as rest:
            yield cluster, rest


async def follow(rest: RestClient, out: io.StringIO) -> tuple[JobProgress, dict]:
    progress = JobProgress(rest, out=out, follow_logs=True)
    await progress.start()
    created = await rest.call("POST", JOBS, job())
    progress.track(created)
    progress.submitted_all()
    return progress, created


async def test_a_pod_gone_before_the_job_lists_it_still_shows_its_output(served):
    """The job's status never says the replica ran: its pod started, printed, finished and was deleted between two of
    the job's status writes. Its output is shown all the same (it was followed from the pod's own status)."""
    _, rest = served
    out = io.StringIO()
    progress, created = await follow(rest, out)
    try:
        made = await rest.call("POST", PODS, pod(created, "echo said-early; echo bye-early"))
        await until_printed(out, "worker-0 | said-early", "worker-0 | bye-early")
        await rest.call("DELETE", f"{PODS}/quick-worker-0", params={"gracePeriodSeconds": "0"})
        await succeed(rest, {"name": "quick-worker-0", "uid": made["metadata"]["uid"], "phase": "Deleted"})
        await asyncio.wait_for(progress.wait(), 30)
    finally:
        await progress.stop()


async def test_a_finished_pods_last_lines_come_before_the_end(served):
    """The job's end is seen while its pod's output is still on its way (here the status is written as the pod is
    still printing, a second before its last lines, where the controller's write would only be ahead of the log's
    stream): wait() returns only when the stream has reached its end, so every line is printed before the summary
    that follows it."""
    _, rest = served
    out = io.StringIO()
    progress, created = await follow(rest, out)
    try:
        lines = "; ".join(f"echo line-{i}" for i in range(1, 200))
        made = await rest.call("POST", PODS, pod(created, f"echo line-0; sleep 1; {lines}"))
        await until_printed(out, "worker-0 | line-0")
        await succeed(rest, {"name": "quick-worker-0", "uid": made["metadata"]["uid"], "phase": "Succeeded"})
        await asyncio.wait_for(progress.wait(), 30)
        printed = out.getvalue()  # what the summary would follow
        assert all(f"worker-0 | line-{i}\n" in printed for i in range(200)), printed
    finally:
        await progress.stop()


async def test_a_stream_that_cannot_start_yet_is_tried_again(served):
    """Followed while its container cannot be read yet (here: an init container still running, so the kubelet
    answers 400 'waiting to start'; on a loaded machine, a stream slow to connect): the follower tries again and
    prints the container's output once it runs."""
    _, rest = served
    out = io.StringIO()
    followed = LogFollower(rest, lambda text: print(text, file=out))
    try:
        waiting = pod(job() | {"metadata": {"name": "quick", "uid": "0"}}, "echo after-init")
        del waiting["metadata"]["ownerReferences"]  # no job here: the garbage collector would take the pod
        waiting["spec"]["initContainers"] = [{"name": "init", "image": "ignored", "command": ["sleep", "1"]}]
        made = await rest.call("POST", PODS, waiting)
        await until(lambda: pod_bound(rest), timeout=30, what="the pod bound to the node")
        followed.follow("default", "quick-worker-0", made["metadata"]["uid"], ["main"], "worker-0")
        await until_printed(out, "worker-0 | after-init")
    finally:
        await followed.stop()


async def pod_bound(rest: RestClient) -> bool:
    return bool(((await rest.call("GET", f"{PODS}/quick-worker-0")) or {}).get("spec", {}).get("nodeName"))
