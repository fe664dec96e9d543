"""kubectl scale, rollout status and logs -f against localcluster with pods run as local processes.

One cluster for the module (the process runner); each test in a namespace of its own. A Deployment is
served by localcluster's deployment and ReplicaSet controllers (localcluster/controllers/deployments.py, replicasets.py)
and its scale subresource; a GenericJob has neither, and kubectl answers as it
does against a real cluster.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import pytest_asyncio

from localcluster import LocalCluster
from localcluster.testing import starts_processes, until

from .kubectl_commands_support import job
from .test_kubectl import manifest

pytestmark = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parents[3]
GROUP, VERSION = "batch.tensorstack.dev", "v1beta1"
DEPLOYMENTS, PODS = ("apps", "deployments"), ("", "pods")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
@starts_processes
async def cluster():
    async with LocalCluster(runner="process") as running:
        running.apply_crds(ROOT / "manifests" / "crds")
        yield running


def deployment(name: str, replicas: int, command: list[str] | None = None, **spec) -> dict:
    container = {"name": "main", "image": "busybox:1.36"}
    if command is not None:
        container["command"] = command
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"terminationGracePeriodSeconds": 1, "containers": [container]}},
                     **spec}}


def pods_of(cluster, namespace: str, app: str) -> list[dict]:
    return [p for p in cluster.store.objects(PODS, namespace) if (p["metadata"].get("labels") or {}).get("app") == app]


# --- Deployments: rollout status, scale ------------------------------------------------------------


async def test_rollout_status_and_scale_of_a_deployment(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(deployment("web", 2, ["sleep", "300"])))
    rolled = await kubectl.ok("rollout", "status", "deployment/web", "--timeout=20s")
    assert rolled.out.endswith('deployment "web" successfully rolled out\n'), rolled.out
    pods = pods_of(cluster, namespace, "web")
    [template_hash] = {p["metadata"]["labels"]["pod-template-hash"] for p in pods}
    assert len(pods) == 2 and all(re.fullmatch(rf"web-{template_hash}-[a-z0-9]{{5}}", p["metadata"]["name"])
                                  for p in pods)
    # Owned by the Deployment's ReplicaSet `web-<hash>`, as the real controllers make them.
    assert {(p["metadata"]["ownerReferences"][0]["kind"], p["metadata"]["ownerReferences"][0]["name"])
            for p in pods} == {("ReplicaSet", f"web-{template_hash}")}
    assert (await kubectl.ok("get", "deployment", "web")).rows()[1][:4] == ["web", "2/2", "2", "2"]

    assert (await kubectl.ok("scale", "deployment", "web", "--replicas=3")).out == "deployment.apps/web scaled\n"
    await kubectl.ok("rollout", "status", "deployment/web", "--timeout=20s")
    assert len(pods_of(cluster, namespace, "web")) == 3
    stale = await kubectl.run("scale", "deployment", "web", "--current-replicas=2", "--replicas=1")
    assert (stale.code, stale.err) == (1, "error: Expected replicas to be 2, was 3\n")

    await kubectl.ok("scale", "deployment/web", "--current-replicas=3", "--replicas=1")
    await kubectl.ok("wait", "--for=jsonpath={.status.replicas}=1", "deployment/web", "--timeout=20s")
    status = cluster.store.get(DEPLOYMENTS, (namespace, "web"))["status"]
    assert {k: status.get(k) for k in ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas",
                                       "availableReplicas")} == {"observedGeneration": 3, "replicas": 1,
                                                                 "updatedReplicas": 1, "readyReplicas": 1,
                                                                 "availableReplicas": 1}
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Available", "True", "MinimumReplicasAvailable"), ("Progressing", "True", "NewReplicaSetAvailable")]

    # A new template: the old pods are replaced by pods of the new one.
    assert (await kubectl.ok("rollout", "restart", "deployment/web")).out == "deployment.apps/web restarted\n"
    await kubectl.ok("rollout", "status", "deployment/web", "--timeout=20s")
    await until(lambda: {p["metadata"]["labels"]["pod-template-hash"] for p in pods_of(cluster, namespace, "web")}
                     not in ({template_hash}, set()), what="the pods of the new template alone")

    deleted = await kubectl.ok("delete", "deployment", "web")
    assert deleted.out == f'deployment.apps "web" deleted from {namespace} namespace\n'
    await kubectl.ok("wait", "--for=delete", "pod", "-l", "app=web", "--timeout=20s")  # collected with their owner


async def test_rollout_status_waits_for_pods_that_never_get_ready(kubectl, cluster, namespace):
    # No command: the process runner cannot start the container (CreateContainerConfigError), as a kubelet
    # reports a configuration error; the pod exists, never ready, and the rollout does not complete.
    await kubectl.ok("apply", "-f", "-", stdin=manifest(deployment("stuck", 1)))

    def stuck_and_counted() -> bool:  # what `rollout status` reads is settled: its message cannot vary with load
        pods = pods_of(cluster, namespace, "stuck")
        state = pods and (pods[0].get("status", {}).get("containerStatuses") or [{}])[0].get("state", {})
        obj = cluster.store.get(DEPLOYMENTS, (namespace, "stuck"))
        status = obj.get("status") or {}
        return bool(state and state.get("waiting", {}).get("reason") == "CreateContainerConfigError") and \
            status.get("observedGeneration") == obj["metadata"]["generation"] and \
            status.get("updatedReplicas") == 1 and not status.get("availableReplicas")

    await until(stuck_and_counted, what="the pod stuck in CreateContainerConfigError, counted as updated", timeout=20)
    waiting = await kubectl.run("rollout", "status", "deployment/stuck", "--timeout=1s")
    assert waiting.code == 1
    assert 'Waiting for deployment "stuck" rollout to finish: 0 of 1 updated replicas are available...\n' \
        in waiting.out, waiting.out
    assert waiting.err.endswith("error: timed out waiting for the condition\n"), waiting.err

    # No progress for progressDeadlineSeconds: Progressing turns False, and rollout status says so. The deadline is
    # shortened only now (it counts from the last progress, long past), so the check above never races it.
    await kubectl.ok("patch", "deployment", "stuck", "-p", '{"spec": {"progressDeadlineSeconds": 3}}')
    exceeded = await kubectl.run("rollout", "status", "deployment/stuck", "--timeout=15s")
    assert (exceeded.code, exceeded.err) == (1, 'error: deployment "stuck" exceeded its progress deadline\n')
    progressing = cluster.store.get(DEPLOYMENTS, (namespace, "stuck"))["status"]["conditions"][1]
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")


async def test_scale_and_rollout_status_of_a_genericjob_fail_as_on_a_cluster(kubectl, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(job("train")))
    # No scale subresource in its CRD (a job has a count per replica type, not one): kubectl finds the job, then
    # PATCHes its /scale, which kube-apiserver's CRD handler answers, for a subresource the CRD does not declare,
    # with NotFound naming the object (apiextensions-apiserver's customresource_handler.go: NewNotFound of the
    # resource and the name), not with "the server could not find the requested resource" of a path no API serves.
    scaled = await kubectl.run("scale", "gj", "train", "--replicas=2", "-v=6")
    requests = re.findall(r'"Response" verb="(\w+)" url="[^"?]*/genericjobs/(train(?:/scale)?)[?"].* status="([^"]+)"',
                          scaled.err)
    assert requests == [("GET", "train", "200 OK"), ("PATCH", "train/scale", "404 Not Found")], scaled.err
    scaled = await kubectl.run("scale", "gj", "train", "--replicas=2")
    not_found = f'Error from server (NotFound): genericjobs.{GROUP} "train" not found'
    assert (scaled.code, scaled.err) == (1, f"{not_found}\n")
    # The user guide quotes that answer, and the way to scale a replica type instead, which works.
    guide = (ROOT / "docs" / "user-guide.md").read_text()
    assert not_found.replace("train", "NAME") in guide
    command = ("kubectl patch gj NAME --type=json "
               """-p '[{"op": "replace", "path": "/spec/replicaSpecs/0/replicas", "value": 3}]'""")
    assert command in (ROOT / "docs" / "live-jobs.md").read_text()
    await kubectl.ok(*shlex.split(command.replace("NAME", "train"))[1:])
    got = await kubectl.ok("get", "gj", "train", "-o", "jsonpath={.spec.replicaSpecs[0].replicas}")
    assert got.out == "3"
    # kubectl's own refusal, before any request: its scheme does not know the kind.
    status = await kubectl.run("rollout", "status", "gj/train")
    assert status.code == 1
    assert status.err.startswith(f'error: no kind "GenericJob" is registered for version "{GROUP}/{VERSION}"')


# --- logs -f -------------------------------------------------------------------------------------


async def test_logs_follow_until_the_process_ends(kubectl, namespace):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "counter"},
           "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36", "command": [
               "sh", "-c", "for i in 1 2 3; do echo line $i; sleep 0.2; done; echo done >&2"]}]}}
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod))
    await kubectl.ok("wait", "--for=jsonpath={.status.phase}=Running", "pod/counter", "--timeout=10s")
    async with kubectl.stream("logs", "-f", "counter") as lines:
        await lines.until(r"^line 1$")
        await lines.until(r"^line 3$")
        await lines.until(r"^done$")
        assert await lines.proc.wait() == 0  # the stream ends with the container
    assert lines.seen == ["line 1", "line 2", "line 3", "done"]
    assert (await kubectl.ok("logs", "counter", "--tail=1")).out == "done\n"
