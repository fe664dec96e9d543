"""kubectl get rs / get all / rollout history / rollout undo / get events, and a Deployment's defaults.

What kubectl 1.35 prints against a 1.35 server, with the names (template hashes, pod suffixes), times
and ages normalised: a Deployment's pods belong to a ReplicaSet `<deployment>-<hash>` per pod template
(localcluster/controllers/deployments.py, replicasets.py), whose revision annotations are the rollout history, and
the two controllers record the Events the real ones do. One cluster for the module, pods run as local
processes (so they become Ready); each test in a namespace of its own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import pytest_asyncio
import yaml

from localcluster import LocalCluster
from localcluster.testing import starts_processes, until

from .test_kubectl import manifest
from .test_kubectl_workloads import deployment, pods_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parents[3]
REPLICA_SETS = ("apps", "replicasets")
HASH = r"[4-9bcdf]{1,10}"  # rand.SafeEncodeString of a 32-bit number's digits


@pytest_asyncio.fixture(scope="module", loop_scope="module")
@starts_processes
async def cluster():
    async with LocalCluster(runner="process") as running:
        yield running


async def rolled_out(kubectl, name: str = "web") -> None:
    await kubectl.ok("rollout", "status", f"deployment/{name}", "--timeout=20s")


def replica_sets(cluster, namespace: str) -> dict[str, dict]:
    return {rs["metadata"]["name"]: rs for rs in cluster.store.objects(REPLICA_SETS, namespace)}


async def test_get_rs_and_get_all_list_the_deployments_replicaset(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(deployment("web", 2, ["sleep", "300"])))
    await rolled_out(kubectl)
    [name] = replica_sets(cluster, namespace)
    assert re.fullmatch(rf"web-{HASH}", name), name
    template_hash = name.removeprefix("web-")

    got = await kubectl.ok("get", "rs")
    assert got.rows()[0] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert got.rows()[1][:4] == [name, "2", "2", "2"]
    wide = await kubectl.ok("get", "rs", "-o", "wide")
    assert wide.rows()[0] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide.rows()[1][5:] == ["main", "busybox:1.36", f"app=web,pod-template-hash={template_hash}"]

    everything = (await kubectl.ok("get", "all")).out
    sections = [block.splitlines() for block in everything.strip().split("\n\n")]
    assert [re.split(r"\s{2,}", lines[0].strip()) for lines in sections] == [
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]]
    pod_rows = [re.split(r"\s{2,}", line.strip()) for line in sections[0][1:]]
    assert len(pod_rows) == 2 and all(re.fullmatch(rf"pod/{name}-[a-z0-9]{{5}}", row[0]) and row[1:3] == [
        "1/1", "Running"] for row in pod_rows), pod_rows
    assert re.split(r"\s{2,}", sections[1][1].strip())[:4] == ["deployment.apps/web", "2/2", "2", "2"]
    assert re.split(r"\s{2,}", sections[2][1].strip())[:4] == [f"replicaset.apps/{name}", "2", "2", "2"]

    # The ReplicaSet as the deployment controller writes it, and its status as the ReplicaSet controller's.
    rs = yaml.safe_load((await kubectl.ok("get", "rs", name, "-o", "yaml")).out)
    assert rs["metadata"]["annotations"] == {"deployment.kubernetes.io/desired-replicas": "2",
                                             "deployment.kubernetes.io/max-replicas": "3",
                                             "deployment.kubernetes.io/revision": "1"}
    assert rs["metadata"]["labels"] == {"app": "web", "pod-template-hash": template_hash}
    [owner] = rs["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"], owner["blockOwnerDeletion"]) == (
        "Deployment", "web", True, True)
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "web", "pod-template-hash": template_hash}}
    deploy = yaml.safe_load((await kubectl.ok("get", "deployment", "web", "-o", "yaml")).out)
    assert deploy["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    template = dict(rs["spec"]["template"])
    template["metadata"] = {**template["metadata"], "labels": {"app": "web"}}
    assert template == deploy["spec"]["template"]
    assert rs["status"] == {"availableReplicas": 2, "fullyLabeledReplicas": 2, "observedGeneration": 1,
                            "readyReplicas": 2, "replicas": 2, "terminatingReplicas": 0}
    assert deploy["status"]["terminatingReplicas"] == 0
    assert {p["metadata"]["ownerReferences"][0]["uid"] for p in pods_of(cluster, namespace, "web")} == {
        rs["metadata"]["uid"]}


async def test_a_replicaset_of_its_own_scales_and_takes_its_pods_along(kubectl, cluster, namespace):
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "solo"},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "solo"}},
                   "template": {"metadata": {"labels": {"app": "solo"}},
                                "spec": {"terminationGracePeriodSeconds": 1, "containers": [
                                    {"name": "main", "image": "busybox:1.36", "command": ["sleep", "300"]}]}}}}
    await kubectl.ok("apply", "-f", "-", stdin=manifest(rs))
    await kubectl.ok("wait", "--for=jsonpath={.status.readyReplicas}=1", "rs/solo", "--timeout=20s")
    assert (await kubectl.ok("scale", "rs", "solo", "--replicas=3")).out == "replicaset.apps/solo scaled\n"
    await kubectl.ok("wait", "--for=jsonpath={.status.readyReplicas}=3", "rs/solo", "--timeout=20s")
    pods = pods_of(cluster, namespace, "solo")
    assert len(pods) == 3 and all(re.fullmatch(r"solo-[a-z0-9]{5}", p["metadata"]["name"]) for p in pods)
    assert (await kubectl.ok("get", "rs", "solo")).rows()[1][:4] == ["solo", "3", "3", "3"]

    # A pod relabelled out of the selector is released (no owner left) and replaced; labelled back, it is
    # adopted again, and one of the four goes.
    stray = pods[0]["metadata"]["name"]
    await kubectl.ok("label", "pod", stray, "app=debug", "--overwrite")
    await until(lambda: not _pod(cluster, namespace, stray)["metadata"].get("ownerReferences")
                     and len(pods_of(cluster, namespace, "solo")) == 3, what="the pod released and replaced")
    await kubectl.ok("wait", "--for=jsonpath={.status.readyReplicas}=3", "rs/solo", "--timeout=20s")
    await kubectl.ok("label", "pod", stray, "app=solo", "--overwrite")
    uid = replica_sets(cluster, namespace)["solo"]["metadata"]["uid"]
    await until(lambda: _deleted_pods(cluster, namespace) == 1, what="one pod deleted after the adoption")
    await until(lambda: len(owned := pods_of(cluster, namespace, "solo")) == 3 and all(
        p["metadata"]["ownerReferences"][0]["uid"] == uid for p in owned), what="three pods, all the ReplicaSet's")
    await kubectl.ok("delete", "rs", "solo")
    await kubectl.ok("wait", "--for=delete", "pod", "-l", "app=solo", "--timeout=20s")


def _pod(cluster, namespace: str, name: str) -> dict:
    return cluster.store.get(("", "pods"), (namespace, name))


def _deleted_pods(cluster, namespace: str) -> int:
    return sum(1 for e in cluster.store.objects(("", "events"), namespace)
               if e["reason"] == "SuccessfulDelete" and e["involvedObject"]["name"] == "solo")


def history(result) -> list[list[str]]:
    return result.rows()


async def test_rollout_history_and_undo(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(deployment("web", 2, ["sleep", "300"])))
    await rolled_out(kubectl)
    [first] = replica_sets(cluster, namespace)
    assert history(await kubectl.ok("rollout", "history", "deployment/web")) == [
        ["deployment.apps/web"], ["REVISION", "CHANGE-CAUSE"], ["1", "<none>"]]

    await kubectl.ok("set", "image", "deployment/web", "main=busybox:1.37")
    await kubectl.ok("annotate", "deployment/web", "kubernetes.io/change-cause=image 1.37")
    await rolled_out(kubectl)
    [second] = set(replica_sets(cluster, namespace)) - {first}
    assert history(await kubectl.ok("rollout", "history", "deployment/web")) == [
        ["deployment.apps/web"], ["REVISION", "CHANGE-CAUSE"], ["1", "<none>"], ["2", "image 1.37"]]
    sizes = {name: rs["spec"]["replicas"] for name, rs in replica_sets(cluster, namespace).items()}
    assert sizes == {first: 0, second: 2}  # the old ReplicaSet stays, empty, as the history
    shown = await kubectl.ok("rollout", "history", "deployment/web", "--revision=2")
    assert shown.out.startswith("deployment.apps/web with revision #2\nPod Template:\n"), shown.out
    assert "pod-template-hash=" + second.removeprefix("web-") in shown.out
    assert re.search(r"^\s+Image:\s+busybox:1\.37$", shown.out, re.M), shown.out

    missing = await kubectl.run("rollout", "undo", "deployment/web", "--to-revision=9")
    assert (missing.code, missing.err) == (1, "error: unable to find specified revision 9 in history\n")
    undone = await kubectl.ok("rollout", "undo", "deployment/web")
    assert undone.out == "deployment.apps/web rolled back\n"
    await rolled_out(kubectl)
    # Revision 1's ReplicaSet is the new one again, as revision 3, and remembers it was 1.
    await until(lambda: {p["spec"]["containers"][0]["image"] for p in pods_of(cluster, namespace, "web")}
                     == {"busybox:1.36"}, what="the pods of revision 1's template alone")
    rss = replica_sets(cluster, namespace)
    assert set(rss) == {first, second}
    annotations = rss[first]["metadata"]["annotations"]
    assert (annotations["deployment.kubernetes.io/revision"],
            annotations["deployment.kubernetes.io/revision-history"]) == ("3", "1")
    assert history(await kubectl.ok("rollout", "history", "deployment/web")) == [
        ["deployment.apps/web"], ["REVISION", "CHANGE-CAUSE"], ["2", "image 1.37"], ["3", "<none>"]]
    deploy = json.loads((await kubectl.ok("get", "deployment", "web", "-o", "json")).out)
    assert deploy["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1.36"


async def test_events_after_creating_and_scaling_a_deployment(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(deployment("web", 2, ["sleep", "300"])))
    await rolled_out(kubectl)
    await kubectl.ok("scale", "deployment", "web", "--replicas=3")
    await rolled_out(kubectl)
    await kubectl.ok("scale", "deployment", "web", "--replicas=1")
    await kubectl.ok("wait", "--for=jsonpath={.status.replicas}=1", "deployment/web", "--timeout=20s")
    [rs] = replica_sets(cluster, namespace)

    async def controller_events() -> list[dict]:
        listed = json.loads((await kubectl.ok("get", "events", "-o", "json")).out)["items"]
        return [e for e in listed if e["source"].get("component") in ("deployment-controller",
                                                                       "replicaset-controller")]

    await until(lambda: _deleted_two(controller_events()), what="two SuccessfulDelete Events", timeout=10)
    events = await controller_events()
    scaling = [e for e in events if e["reason"] == "ScalingReplicaSet"]
    assert [e["message"] for e in scaling] == [f"Scaled up replica set {rs} from 0 to 2",
                                               f"Scaled up replica set {rs} from 2 to 3",
                                               f"Scaled down replica set {rs} from 3 to 1"]
    for event in scaling:
        assert (event["type"], event["involvedObject"]["kind"], event["involvedObject"]["name"],
                event["involvedObject"]["apiVersion"], event["reportingComponent"], event["reportingInstance"],
                event["count"]) == ("Normal", "Deployment", "web", "apps/v1", "deployment-controller", "", 1)
    created = [e for e in events if e["reason"] == "SuccessfulCreate"]
    deleted = [e for e in events if e["reason"] == "SuccessfulDelete"]
    assert len(created) == 3 and len(deleted) == 2
    for event in created + deleted:
        assert (event["type"], event["involvedObject"]["kind"], event["involvedObject"]["name"],
                event["reportingComponent"]) == ("Normal", "ReplicaSet", rs, "replicaset-controller")
        assert re.fullmatch(rf"(Created|Deleted) pod: {rs}-[a-z0-9]{{5}}", event["message"]), event["message"]
    [survivor] = pods_of(cluster, namespace, "web")
    assert f"Created pod: {survivor['metadata']['name']}" in {e["message"] for e in created}

    # `kubectl get events`: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE.
    table = (await kubectl.ok("get", "events")).rows()
    assert table[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    rows = [row[1:] for row in table[1:]]
    assert ["Normal", "ScalingReplicaSet", "deployment/web", f"Scaled up replica set {rs} from 0 to 2"] in rows
    assert sum(1 for row in rows if row[1:3] == ["SuccessfulCreate", f"replicaset/{rs}"]) == 3


async def _deleted_two(events) -> bool:
    return sum(1 for e in await events if e["reason"] == "SuccessfulDelete") == 2


async def test_a_deployments_stored_defaults(kubectl, namespace):
    await kubectl.ok("create", "deployment", "web", "--image=busybox:1.36", "--replicas=0")
    stored = yaml.safe_load((await kubectl.ok("get", "deploy", "web", "-o", "yaml")).out)
    # What a 1.35 server stores for `kubectl create deployment web --image=busybox:1.36 --replicas=0`.
    assert stored["spec"] == {
        "progressDeadlineSeconds": 600, "replicas": 0, "revisionHistoryLimit": 10,
        "selector": {"matchLabels": {"app": "web"}},
        "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "containers": [{"image": "busybox:1.36", "imagePullPolicy": "IfNotPresent", "name": "busybox",
                            "resources": {}, "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File"}],
            "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "securityContext": {}, "terminationGracePeriodSeconds": 30}}}
    assert stored["metadata"]["generation"] == 1
    await until(lambda: _revision_one(kubectl), what="the revision annotation")
    latest = yaml.safe_load((await kubectl.ok("get", "rs", "-o", "yaml")).out)["items"]
    [rs] = latest
    assert rs["spec"]["template"]["spec"] == stored["spec"]["template"]["spec"]
    assert (await kubectl.ok("get", "rs")).rows()[1][:4] == [rs["metadata"]["name"], "0", "0", "0"]


async def _revision_one(kubectl) -> bool:
    stored = yaml.safe_load((await kubectl.ok("get", "deploy", "web", "-o", "yaml")).out)
    return (stored["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision") == "1"


async def test_a_replicaset_orphaned_by_its_deployment_is_adopted_by_the_next(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(deployment("web", 2, ["sleep", "300"])))
    await rolled_out(kubectl)
    [name] = replica_sets(cluster, namespace)
    pods = {p["metadata"]["name"] for p in pods_of(cluster, namespace, "web")}
    deleted = await kubectl.ok("delete", "deployment", "web", "--cascade=orphan")
    assert deleted.out == f'deployment.apps "web" deleted from {namespace} namespace\n'
    await until(lambda: not replica_sets(cluster, namespace)[name]["metadata"].get("ownerReferences"),
                     what="the ReplicaSet orphaned")

    await kubectl.ok("apply", "-f", "-", stdin=manifest(deployment("web", 2, ["sleep", "300"])))
    await rolled_out(kubectl)
    uid = json.loads((await kubectl.ok("get", "deployment", "web", "-o", "json")).out)["metadata"]["uid"]
    rss = replica_sets(cluster, namespace)
    assert list(rss) == [name] and rss[name]["metadata"]["ownerReferences"][0]["uid"] == uid
    assert {p["metadata"]["name"] for p in pods_of(cluster, namespace, "web")} == pods  # kept, not replaced
    assert history(await kubectl.ok("rollout", "history", "deployment/web")) == [
        ["deployment.apps/web"], ["REVISION", "CHANGE-CAUSE"], ["1", "<none>"]]
