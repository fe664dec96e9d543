"""The kubectl commands a user types, run by the installed kubectl 1.35 against one localcluster.

Each test works in a namespace of its own on a cluster shared by the module (the scripted pod runner
binds pods and runs them until deleted), with the project's CRDs installed, and checks what kubectl
prints and exits with, as against a real cluster: label, annotate, edit, patch, get (jsonpath,
custom-columns, watch), wait, delete --wait, describe, events, auth can-i --list, api-resources, explain.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import orjson
import pytest
import pytest_asyncio
import yaml

from localcluster import LocalCluster
from tests.builders import JobBuilder
from tests.waiting import until

from .test_kubectl import manifest

pytestmark = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parents[2]
GROUP, VERSION, PLURAL = "batch.tensorstack.dev", "v1beta1", "genericjobs"
GJ = f"genericjob.{GROUP}"
MERGE = "application/merge-patch+json"
CONTAINER = {"name": "c", "image": "busybox:1.36"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster():
    async with LocalCluster(runner="scripted") as running:
        running.apply_crds(ROOT / "manifests" / "crds")
        yield running


def pod(name: str, labels: dict | None = None, **meta) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}, **meta},
            "spec": {"containers": [dict(CONTAINER)]}}


def job(name: str, replicas: int = 1) -> dict:
    return JobBuilder(name).replica("worker", replicas, template={"spec": {"containers": [dict(CONTAINER)]}}).obj()


async def http(cluster, method: str, path: str, body=None, content_type: str = "application/json") -> tuple[int, dict]:
    async with cluster.session(base_url=True) as session:
        data = orjson.dumps(body) if body is not None else None
        async with session.request(method, path, data=data, headers={"Content-Type": content_type}) as resp:
            return resp.status, await resp.json()


async def set_job_status(cluster, namespace: str, name: str, status: dict) -> None:
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/{name}/status"
    code, body = await http(cluster, "PATCH", path, {"status": status}, MERGE)
    assert code == 200, body


def stored(cluster, namespace: str, resource: tuple[str, str], name: str) -> dict | None:
    return cluster.store.get(resource, (namespace, name))


PODS, JOBS = ("", "pods"), (GROUP, PLURAL)


def new_watch(cluster, resource: tuple[str, str], namespace: str):
    """A predicate: has a watch of `resource` in `namespace` opened since this call (kubectl's, as each test has a
    namespace of its own; a watch of an earlier command may linger until the server notices it closed)."""
    before = set(cluster.hub.watchers.get(resource, ()))
    return lambda: any(w.namespace == namespace and w not in before and not w.closed
                       for w in cluster.hub.watchers.get(resource, ()))


# --- label, annotate ---------------------------------------------------------------------------


async def test_label_adds_refuses_to_overwrite_and_removes(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("p", {"app": "web"}), job("train")))
    assert (await kubectl.ok("label", "pod", "p", "team=a")).out == "pod/p labeled\n"
    refused = await kubectl.run("label", "pod", "p", "team=b")
    assert (refused.code, refused.err) == (1, "error: 'team' already has a value (a), and --overwrite is false\n")
    await kubectl.ok("label", "pod", "p", "team=b", "--overwrite")
    assert stored(cluster, namespace, PODS, "p")["metadata"]["labels"] == {"app": "web", "team": "b"}
    assert (await kubectl.ok("label", "pod", "p", "team-")).out == "pod/p unlabeled\n"
    missing = await kubectl.ok("label", "pod", "p", "team-")
    assert missing.out == 'label "team" not found.\npod/p not labeled\n'
    assert stored(cluster, namespace, PODS, "p")["metadata"]["labels"] == {"app": "web"}

    # A custom resource: kubectl sends a JSON merge patch; by selector, every match.
    assert (await kubectl.ok("label", "gj", "--all", "tier=batch")).out == f"{GJ}/train labeled\n"
    assert stored(cluster, namespace, JOBS, "train")["metadata"]["labels"] == {"tier": "batch"}
    assert (await kubectl.ok("label", "pods", "-l", "app=web", "seen=yes")).out == "pod/p labeled\n"


async def test_annotate_adds_refuses_to_overwrite_and_removes(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(job("train")))
    assert (await kubectl.ok("annotate", "gj", "train", "note=first")).out == f"{GJ}/train annotated\n"
    refused = await kubectl.run("annotate", "gj", "train", "note=second")
    assert refused.code == 1
    assert refused.err == ("error: --overwrite is false but found the following declared annotation(s): "
                           "'note' already has a value (first)\n")
    await kubectl.ok("annotate", "gj", "train", "note=second", "--overwrite")
    assert stored(cluster, namespace, JOBS, "train")["metadata"]["annotations"]["note"] == "second"
    await kubectl.ok("annotate", "gj", "train", "note-")
    assert "note" not in stored(cluster, namespace, JOBS, "train")["metadata"]["annotations"]


# --- edit ----------------------------------------------------------------------------------------


def editor(tmp_path: Path, old: str, new: str) -> dict[str, str]:
    """KUBE_EDITOR: a script replacing `old` by `new` in the file kubectl opens, keeping each version it saw."""
    script = tmp_path / "edit.py"
    script.write_text(f"""#!{sys.executable}
import pathlib, sys
path = pathlib.Path(sys.argv[-1])
text = path.read_text()
seen = pathlib.Path({str(tmp_path / "seen")!r})
seen.mkdir(exist_ok=True)
(seen / str(len(list(seen.iterdir())))).write_text(text)
path.write_text(text.replace({old!r}, {new!r}))
""")
    script.chmod(0o755)
    return {"KUBE_EDITOR": str(script)}


def seen_by_editor(tmp_path: Path) -> list[str]:
    return [(tmp_path / "seen" / str(i)).read_text() for i in range(len(list((tmp_path / "seen").iterdir())))]


async def test_edit_applies_the_change(kubectl, cluster, namespace, tmp_path):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(job("train", replicas=1)))
    edited = await kubectl.run("edit", "gj", "train", env=editor(tmp_path, "replicas: 1", "replicas: 3"))
    assert (edited.code, edited.out) == (0, f"{GJ}/train edited\n"), edited.err
    assert stored(cluster, namespace, JOBS, "train")["spec"]["replicaSpecs"][0]["replicas"] == 3
    [opened] = seen_by_editor(tmp_path)
    assert opened.startswith("# Please edit the object below.")
    assert yaml.safe_load(opened)["metadata"]["name"] == "train"


async def test_edit_of_a_pod_sends_a_strategic_merge_patch(kubectl, cluster, namespace, tmp_path):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("p")))
    edited = await kubectl.run("edit", "pod", "p", "-v=6", env=editor(tmp_path, "image: busybox:1.36",
                                                                       "image: busybox:1.37"))
    assert edited.code == 0 and edited.out == "pod/p edited\n", edited.err
    assert re.search(r'verb="PATCH" url="[^"]+/pods/p\?fieldManager=kubectl-edit[^"]*" status="200 OK"', edited.err)
    assert stored(cluster, namespace, PODS, "p")["spec"]["containers"][0]["image"] == "busybox:1.37"


async def test_edit_refused_by_the_server_reports_its_error(kubectl, cluster, namespace, tmp_path):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(job("train", replicas=1)))
    before = stored(cluster, namespace, JOBS, "train")
    edited = await kubectl.run("edit", "gj", "train", env=editor(tmp_path, "replicas: 1", "replicas: -1"))
    # kubectl reopens the file with the server's error on top; the editor changes nothing more, so it gives up.
    assert edited.code == 1
    assert f'error: {PLURAL}.{GROUP} "train" is invalid' in edited.err
    assert "Edit cancelled, no valid changes were saved." in edited.err
    first, second = seen_by_editor(tmp_path)
    assert "replicas: 1" in first and "#" not in first.split("apiVersion:")[1]
    assert f'# {PLURAL}.{GROUP} "train" was not valid:' in second
    assert ("# * spec.replicaSpecs[0].replicas: Invalid value: -1: spec.replicaSpecs[0].replicas in body should be "
            "greater than or equal to 0") in second
    assert stored(cluster, namespace, JOBS, "train") == before


# --- patch ---------------------------------------------------------------------------------------


async def test_patch_strategic_merge_and_json(kubectl, cluster, namespace):
    two = pod("p")
    two["spec"]["containers"].append({"name": "side", "image": "busybox:1.36"})
    await kubectl.ok("apply", "-f", "-", stdin=manifest(two, job("train")))
    # Strategic (the default for a built-in kind): containers merge by name, the other one stays.
    done = await kubectl.ok("patch", "pod", "p", "-p", '{"spec":{"containers":[{"name":"side","image":"busybox:2"}]}}')
    assert done.out == "pod/p patched\n"
    assert [(c["name"], c["image"]) for c in stored(cluster, namespace, PODS, "p")["spec"]["containers"]] == [
        ("c", "busybox:1.36"), ("side", "busybox:2")]
    same = await kubectl.ok("patch", "pod", "p", "-p", '{"spec":{"containers":[{"name":"side","image":"busybox:2"}]}}')
    assert same.out == "pod/p patched (no change)\n"

    await kubectl.ok("patch", "gj", "train", "--type", "merge", "-p", '{"metadata":{"labels":{"m":"1"}}}')
    await kubectl.ok("patch", "gj", "train", "--type", "json",
                     "-p", '[{"op":"replace","path":"/spec/replicaSpecs/0/replicas","value":4}]')
    job_now = stored(cluster, namespace, JOBS, "train")
    assert job_now["metadata"]["labels"] == {"m": "1"} and job_now["spec"]["replicaSpecs"][0]["replicas"] == 4
    invalid = await kubectl.run("patch", "gj", "train", "--type", "merge",
                                "-p", '{"spec":{"cleanUpPolicy":"Sometimes"}}')
    assert invalid.code == 1 and invalid.err.startswith('The GenericJob "train" is invalid: \n'), invalid.err
    assert '* spec.cleanUpPolicy: Unsupported value: "Sometimes": supported values: "None", "Unfinished", "All"' \
        in invalid.err


async def test_strategic_merge_patch_of_a_custom_resource_is_415(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(job("train")))
    refused = await kubectl.run("patch", "gj", "train", "-p", '{"metadata":{"labels":{"s":"1"}}}', "-v=6")
    assert refused.code == 1
    assert 'verb="PATCH"' in refused.err and 'status="415 Unsupported Media Type"' in refused.err
    assert (f"error: application/strategic-merge-patch+json is not supported by {GROUP}/{VERSION}, Kind=GenericJob: "
            f"the body of the request was in an unknown format - accepted media types include: "
            f"application/json-patch+json, application/merge-patch+json") in refused.err
    assert "labels" not in stored(cluster, namespace, JOBS, "train")["metadata"]


# --- get: output formats and watch -------------------------------------------------------------


async def test_get_jsonpath_and_custom_columns(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(job("a", 2), job("b", 3)))
    await set_job_status(cluster, namespace, "a", {"phase": "Running"})
    names = await kubectl.ok("get", "gj", "-o", 'jsonpath={range .items[*]}{.metadata.name}:'
                                                '{.spec.replicaSpecs[0].replicas}{"\\n"}{end}')
    assert names.out == "a:2\nb:3\n"
    one = await kubectl.ok("get", "gj", "a", "-o", "jsonpath={.status.phase}")
    assert one.out == "Running"
    columns = await kubectl.ok("get", "gj", "-o", "custom-columns=NAME:.metadata.name,"
                                                  "REPLICAS:.spec.replicaSpecs[*].replicas,PHASE:.status.phase")
    assert columns.rows() == [["NAME", "REPLICAS", "PHASE"], ["a", "2", "Running"], ["b", "3", "<none>"]]
    missing = await kubectl.run("get", "gj", "a", "-o", "jsonpath={.status.nothing.here}")
    assert (missing.code, missing.out) == (0, "")  # an absent field prints nothing, as kubectl does


@pytest.fixture
def fast_pods(cluster):
    """Pods named "w*" start after 0.3 s, so a watch sees them before and after."""
    cluster.runner.set_script("*/w*", {"start_after": 0.3, "run_for": 0.3})


async def test_get_watch_follows_a_pod_through_its_life(kubectl, cluster, namespace, fast_pods):
    started = new_watch(cluster, PODS, namespace)
    async with kubectl.stream("get", "pods", "-w", "--output-watch-events") as lines:
        await until(started, what="kubectl to start watching")
        await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("w1")))
        await lines.until(r"^EVENT\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$")
        await lines.until(r"^ADDED\s+w1\s+0/1\s+Pending\s+0\s+\S+$")
        await lines.until(r"^MODIFIED\s+w1\s+0/1\s+ContainerCreating\s+0\s+\S+$")
        await lines.until(r"^MODIFIED\s+w1\s+1/1\s+Running\s+0\s+\S+$")
        await lines.until(r"^MODIFIED\s+w1\s+0/1\s+Completed\s+0\s+\S+$")
        await kubectl.ok("delete", "pod", "w1")
        # Marked first (a real watch shows the finished pod Terminating), then gone.
        await lines.until(r"^MODIFIED\s+w1\s+0/1\s+Terminating\s+0\s+\S+$")
        await lines.until(r"^DELETED\s+w1\s+0/1\s+Terminating\s+0\s+\S+$")


# --- wait ----------------------------------------------------------------------------------------


async def test_wait_for_a_condition_set_through_status(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(job("train")))
    started = new_watch(cluster, JOBS, namespace)
    waiting = asyncio.create_task(kubectl.run("wait", "--for=condition=Completed", "gj/train", "--timeout=15s"))
    await until(started, what="kubectl wait to watch")
    await set_job_status(cluster, namespace, "train", {"conditions": [
        {"type": "Completed", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
    await set_job_status(cluster, namespace, "train", {"conditions": [
        {"type": "Completed", "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z"}]})
    done = (await waiting).check()
    assert done.out == f"{GJ}/train condition met\n"
    again = await kubectl.ok("wait", "--for=condition=Completed=True", "gj/train", "--timeout=1s")
    assert again.out == f"{GJ}/train condition met\n"


async def test_wait_for_jsonpath_and_its_timeout(kubectl, cluster, namespace, fast_pods):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("w2")))
    done = await kubectl.ok("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/w2", "--timeout=15s")
    assert done.out == "pod/w2 condition met\n"
    late = await kubectl.run("wait", "--for=condition=Ready", "pod/w2", "--timeout=1s")
    assert late.code == 1 and late.err.endswith("error: timed out waiting for the condition on pods/w2\n")


# --- delete --wait and wait --for=delete -----------------------------------------------------


async def test_delete_waits_for_a_finalizer_then_wait_for_delete(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("held", finalizers=["example.com/hold"])))
    timed_out = await kubectl.run("delete", "pod", "held", "--timeout=2s")
    assert timed_out.code == 1
    assert timed_out.out == f'pod "held" deleted from {namespace} namespace\n'
    assert timed_out.err.endswith("error: timed out waiting for the condition on pods/held\n")
    assert stored(cluster, namespace, PODS, "held")["metadata"]["deletionTimestamp"]

    started = new_watch(cluster, PODS, namespace)
    waiting = asyncio.create_task(kubectl.run("wait", "--for=delete", "pod/held", "--timeout=15s"))
    await until(started, what="kubectl wait to watch")
    await kubectl.ok("patch", "pod", "held", "--type", "json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    assert (await waiting).check().out == "pod/held condition met\n"
    assert stored(cluster, namespace, PODS, "held") is None


async def test_delete_waits_for_the_kubelet_to_stop_the_pod(kubectl, cluster, namespace):
    script = json.dumps({"terminate_after": 1.0})
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("slow", annotations={
        "localcluster.dev/script": script})))
    await kubectl.ok("wait", "--for=condition=Ready", "pod/slow", "--timeout=10s")
    deleted = await kubectl.ok("delete", "pod", "slow")
    assert deleted.out == f'pod "slow" deleted from {namespace} namespace\n'
    assert stored(cluster, namespace, PODS, "slow") is None  # kubectl returned once the kubelet had finished


async def test_delete_of_a_job_and_its_collected_pods(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(job("fg"), job("bg")))
    for name in ("fg", "bg"):
        owner = stored(cluster, namespace, JOBS, name)
        child = pod(f"{name}-worker-0", ownerReferences=[{
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "GenericJob", "name": name, "uid": owner["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}], finalizers=["example.com/hold"])
        await kubectl.ok("apply", "-f", "-", stdin=manifest(child))

    # Foreground: the job stays (deletionTimestamp, foregroundDeletion) until its pod is gone.
    foreground = asyncio.create_task(kubectl.run("delete", "gj", "fg", "--cascade=foreground", "--timeout=15s"))
    await until(lambda: (stored(cluster, namespace, PODS, "fg-worker-0") or {}).get("metadata", {}).get(
        "deletionTimestamp"), what="the collector to delete the job's pod")
    assert stored(cluster, namespace, JOBS, "fg")["metadata"]["finalizers"] == ["foregroundDeletion"]
    await kubectl.ok("patch", "pod", "fg-worker-0", "--type", "json",
                     "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    assert (await foreground).check().out == f'{GJ} "fg" deleted from {namespace} namespace\n'
    assert stored(cluster, namespace, JOBS, "fg") is None and stored(cluster, namespace, PODS, "fg-worker-0") is None

    # Background: the job goes at once, its pod is collected afterwards.
    await kubectl.ok("delete", "gj", "bg")
    assert stored(cluster, namespace, JOBS, "bg") is None
    await until(lambda: (stored(cluster, namespace, PODS, "bg-worker-0") or {}).get("metadata", {}).get(
        "deletionTimestamp"), what="the collector to delete the orphan")
    await kubectl.ok("patch", "pod", "bg-worker-0", "--type", "json",
                     "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    await kubectl.ok("wait", "--for=delete", "pod/bg-worker-0", "--timeout=15s")


# --- describe and events -------------------------------------------------------------------------


def event(name: str, involved: dict, reason: str, message: str, kind: str = "Normal",
          component: str = "genericjob-controller", when: str = "2026-01-01T00:00:00Z") -> dict:
    meta = involved["metadata"]
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"apiVersion": involved["apiVersion"], "kind": involved["kind"], "name": meta["name"],
                               "namespace": meta["namespace"], "uid": meta["uid"]},
            "reason": reason, "message": message, "type": kind, "source": {"component": component},
            "firstTimestamp": when, "lastTimestamp": when, "count": 1}


async def test_describe_shows_the_objects_events(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(job("train"), pod("p")))
    await kubectl.ok("wait", "--for=condition=Ready", "pod/p", "--timeout=10s")
    train, p = stored(cluster, namespace, JOBS, "train"), stored(cluster, namespace, PODS, "p")
    await kubectl.ok("apply", "-f", "-", stdin=manifest(
        event("train.1", train, "SuccessfulCreate", "Created pod: train-worker-0"),
        event("train.2", train, "Failed", "The job failed", kind="Warning"),
        event("p.1", p, "Started", "Started container c", component="kubelet")))

    described = (await kubectl.ok("describe", "gj", "train")).out
    assert re.search(r"^Name:\s+train$", described, re.M) and re.search(r"^Namespace:\s+" + namespace, described, re.M)
    events = described.split("\nEvents:\n", 1)[1].splitlines()
    assert re.split(r"\s{2,}", events[0].strip()) == ["Type", "Reason", "Age", "From", "Message"]
    rows = [re.split(r"\s{2,}", line.strip()) for line in events[2:]]
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [
        ("Normal", "SuccessfulCreate", "genericjob-controller", "Created pod: train-worker-0"),
        ("Warning", "Failed", "genericjob-controller", "The job failed")]

    pod_description = (await kubectl.ok("describe", "pod", "p")).out
    assert re.search(r"^Status:\s+Running$", pod_description, re.M)
    assert re.search(r"^\s+Normal\s+Started\s+\S+\s+kubelet\s+Started container c$", pod_description, re.M)


async def test_events_lists_and_filters(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(job("train"), pod("p")))
    train, p = stored(cluster, namespace, JOBS, "train"), stored(cluster, namespace, PODS, "p")
    await kubectl.ok("apply", "-f", "-", stdin=manifest(
        event("train.1", train, "SuccessfulCreate", "Created pod: train-worker-0", when="2026-01-01T00:00:01Z"),
        event("p.1", p, "Started", "Started container c", component="kubelet", when="2026-01-01T00:00:00Z")))
    everything = (await kubectl.ok("events")).rows()
    assert everything[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert [row[1:] for row in everything[1:]] == [  # oldest first
        ["Normal", "Started", "Pod/p", "Started container c"],
        ["Normal", "SuccessfulCreate", "GenericJob/train", "Created pod: train-worker-0"]]
    for_pod = (await kubectl.ok("events", "--for", "pod/p")).rows()
    assert [row[1:] for row in for_pod[1:]] == [["Normal", "Started", "Pod/p", "Started container c"]]
    warnings = await kubectl.ok("events", "--for", "gj/train", "--types=Warning")
    assert (warnings.out, warnings.err) == ("", f"No events found in {namespace} namespace.\n")


# --- auth can-i --list, api-resources, explain ---------------------------------------------------


async def test_auth_can_i_list(kubectl):
    rows = (await kubectl.ok("auth", "can-i", "--list")).rows()
    assert rows[0] == ["Resources", "Non-Resource URLs", "Resource Names", "Verbs"]
    assert ["*.*", "[]", "[]", "[*]"] in rows  # system:masters is bound to cluster-admin

    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "job-reader"},
            "rules": [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch"]},
                      {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"],
                       "verbs": ["get"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "bob-reads"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "job-reader"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]}
    await kubectl.ok("apply", "-f", "-", stdin=manifest(role, binding))
    listed = (await kubectl.ok("auth", "can-i", "--list", "--as", "bob")).rows()
    assert [f"{PLURAL}.{GROUP}", "[]", "[]", "[get list watch]"] in listed
    assert ["configmaps", "[]", "[settings]", "[get]"] in listed
    assert ["selfsubjectrulesreviews.authorization.k8s.io", "[]", "[]", "[create]"] in listed  # system:basic-user
    assert ["*.*", "[]", "[]", "[*]"] not in listed
    elsewhere = (await kubectl.ok("auth", "can-i", "--list", "--as", "bob", "-n", "default")).rows()
    assert not [row for row in elsewhere if row[0] in (f"{PLURAL}.{GROUP}", "configmaps")]


async def test_self_subject_rules_review_over_http(cluster, namespace):
    path = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
    missing = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "dangling"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gone"},
               "subjects": [{"kind": "Group", "name": "system:masters"}]}
    code, _ = await http(cluster, "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
                         missing)
    assert code == 201
    code, review = await http(cluster, "POST", path, {"apiVersion": "authorization.k8s.io/v1",
                                                      "kind": "SelfSubjectRulesReview",
                                                      "spec": {"namespace": namespace}})
    assert code == 201 and review["kind"] == "SelfSubjectRulesReview" and review["spec"] == {}
    assert review["status"]["resourceRules"][0] == {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    assert review["status"]["incomplete"] is False
    assert review["status"]["evaluationError"] == 'role.rbac.authorization.k8s.io "gone" not found'
    code, refused = await http(cluster, "POST", path, {"kind": "SelfSubjectRulesReview", "spec": {}})
    assert (code, refused["reason"], refused["message"]) == (400, "BadRequest", "no namespace on request")


async def test_api_resources(kubectl):
    rows = (await kubectl.ok("api-resources")).rows()
    assert rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    by_name = {(row[0], row[-1]): row for row in rows[1:]}
    assert by_name[("pods", "Pod")] == ["pods", "po", "v1", "true", "Pod"]
    assert by_name[("deployments", "Deployment")] == ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    assert by_name[(PLURAL, "GenericJob")] == [PLURAL, "gj", f"{GROUP}/{VERSION}", "true", "GenericJob"]
    assert by_name[("selfsubjectrulesreviews", "SelfSubjectRulesReview")] == [
        "selfsubjectrulesreviews", "authorization.k8s.io/v1", "false", "SelfSubjectRulesReview"]
    assert not [row for row in rows if "/" in row[0]]  # subresources are not listed

    wide = (await kubectl.ok("api-resources", "-o", "wide", f"--api-group={GROUP}")).rows()
    assert wide[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"]
    assert wide[1] == [PLURAL, "gj", f"{GROUP}/{VERSION}", "true", "GenericJob",
                       "create,delete,deletecollection,get,list,patch,update,watch", "all,t9k"]
    in_all = (await kubectl.ok("api-resources", "--categories=all", "-o", "name")).out.split()
    assert {"pods", "services", "deployments.apps", f"{PLURAL}.{GROUP}"} <= set(in_all)
    assert "configmaps" not in in_all
    namespaced = (await kubectl.ok("api-resources", "--namespaced=false", "-o", "name")).out.split()
    assert "namespaces" in namespaced and "pods" not in namespaced


async def test_explain_a_custom_resource(kubectl):
    explained = (await kubectl.ok("explain", "genericjob.spec.replicaSpecs")).out
    assert re.search(rf"^GROUP:\s+{re.escape(GROUP)}$", explained, re.M)
    assert re.search(r"^KIND:\s+GenericJob$", explained, re.M)
    assert re.search(r"^FIELD: replicaSpecs <\[\]Object>$", explained, re.M)
    assert re.search(r"^  template\t<Object> -required-$", explained, re.M)
    assert re.search(r"^  replicas\t<integer>$", explained, re.M)
    recursive = (await kubectl.ok("explain", "gj.spec", "--recursive")).out
    assert "replicaSpecs\t<[]Object> -required-" in recursive or "replicaSpecs\t<[]Object>" in recursive
    unknown = await kubectl.run("explain", "gj.spec.nothing")
    assert unknown.code == 1 and 'field "nothing" does not exist' in unknown.err


# --- debug ---------------------------------------------------------------------------------------


async def test_debug_gets_the_real_servers_answer_for_a_missing_ephemeralcontainers_subresource(
        kubectl, cluster, namespace):
    """localcluster serves no `pods/ephemeralcontainers`: its 404 must carry the empty `details` of a real
    apiserver's, which kubectl debug reads to tell a disabled feature from a missing pod (without it, 1.35
    panics on a nil pointer)."""
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("p")))
    await kubectl.ok("wait", "--for=condition=Ready", "pod/p", "--timeout=10s")
    debug = await kubectl.run("debug", "p", "--image=busybox", "--profile=general", "--", "true")
    assert debug.code == 1, debug.err + debug.out
    assert "panic" not in debug.err and "goroutine" not in debug.err, debug.err
    assert debug.err.strip() == ('error: ephemeral containers are disabled for this cluster (error from server: '
                                 '"the server could not find the requested resource")'), debug.err
    missing = await kubectl.run("debug", "nobody", "--image=busybox", "--profile=general", "--", "true")
    assert missing.err.strip() == 'Error from server (NotFound): pods "nobody" not found', missing.err

    code, body = await http(cluster, "PATCH", f"/api/v1/namespaces/{namespace}/pods/p/ephemeralcontainers", {},
                            "application/strategic-merge-patch+json")
    assert (code, body) == (404, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                  "message": "the server could not find the requested resource", "reason": "NotFound",
                                  "details": {}, "code": 404})
