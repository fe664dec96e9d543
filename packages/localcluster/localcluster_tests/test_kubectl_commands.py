"""The kubectl commands a user types to change objects, run by the installed kubectl 1.35 against one localcluster.

Each test works in a namespace of its own on a cluster shared by the module (the scripted pod runner
binds pods and runs them until deleted), with the project's CRDs installed, and checks what kubectl
prints and exits with, as against a real cluster: label, annotate, edit, patch, get (jsonpath,
custom-columns, watch), wait, delete --wait.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import pytest
import pytest_asyncio
import yaml

from localcluster import LocalCluster
from localcluster.testing import until

from .kubectl_commands_support import (
    GJ,
    GROUP,
    JOBS,
    PLURAL,
    PODS,
    ROOT,
    VERSION,
    job,
    new_watch,
    pod,
    set_job_status,
    stored,
)
from .test_kubectl import manifest

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster():
    async with LocalCluster(runner="scripted") as running:
        running.apply_crds(ROOT / "manifests" / "crds")
        yield running


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
