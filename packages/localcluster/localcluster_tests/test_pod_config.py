"""The process runner reads ConfigMaps and Secrets as a kubelet does, waits for missing ones, and says why.

A container whose Secret is missing waits in CreateContainerConfigError with the kubelet's message
and starts once the Secret exists; a missing volume source holds the pod in ContainerCreating with
FailedMount Events; a command that cannot run is a StartError with runc's words, as containerd wraps them.
"""

from __future__ import annotations

import base64
import json

import pytest

from localcluster.testing import until

from .process_runner_support import config_error, process_pod, python, wait_phase, wait_pod

pytestmark = pytest.mark.runner("process")

DUMP = "import json, os, sys\njson.dump(dict(os.environ), open(sys.argv[1], 'w'))"


def secret(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def config_map(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def pod_events(core, name: str) -> list:
    listed = await core.list_namespaced_event("default", field_selector=f"involvedObject.name={name}")
    return listed.items


async def test_env_from_secrets_and_config_maps_reaches_the_process(cluster, core, tmp_path):
    await core.create_namespaced_secret("default", secret("creds", token="s3cret", user="ann"))
    await core.create_namespaced_config_map("default", config_map("settings", LR="0.1", EPOCHS="3"))
    out = tmp_path / "env.json"
    body = process_pod("reader", *python(DUMP, str(out)), env=[
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
        {"name": "RATE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "LR"}}},
        {"name": "ABSENT", "valueFrom": {"secretKeyRef": {"name": "nowhere", "key": "k", "optional": True}}},
        {"name": "NOKEY", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "no", "optional": True}}},
        {"name": "EPOCHS", "value": "10"},  # env wins over envFrom
        {"name": "SUMMARY", "value": "$(CFG_LR)/$(TOKEN)"},
    ])
    body["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "settings"}},
                                                {"configMapRef": {"name": "settings"}, "prefix": "CFG_"},
                                                {"secretRef": {"name": "creds"}},
                                                {"secretRef": {"name": "missing", "optional": True}}]
    await core.create_namespaced_pod("default", body)
    await wait_phase(core, "reader", "Succeeded")
    seen = json.loads(out.read_text())
    assert (seen["TOKEN"], seen["RATE"], seen["user"], seen["LR"], seen["CFG_EPOCHS"]) == ("s3cret", "0.1", "ann",
                                                                                           "0.1", "3")
    assert seen["EPOCHS"] == "10" and seen["SUMMARY"] == "0.1/s3cret"
    assert "ABSENT" not in seen and "NOKEY" not in seen


@pytest.mark.parametrize(("ref", "message"), [
    ({"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "late", "key": "token"}}}]},
     'secret "late" not found'),
    ({"env": [{"name": "C", "valueFrom": {"configMapKeyRef": {"name": "late", "key": "token"}}}]},
     'configmap "late" not found'),
    ({"envFrom": [{"secretRef": {"name": "late"}}]}, 'secret "late" not found'),
])
async def test_a_missing_source_waits_with_the_kubelets_message_and_starts_once_it_exists(cluster, core, ref,
                                                                                         message):
    cluster.runner.backoff = (0.05, 0.2)
    body = process_pod("waiter", "true")
    body["spec"]["containers"][0].update(ref)
    await core.create_namespaced_pod("default", body)
    pod = await wait_pod(core, "waiter", config_error)
    assert pod.status.phase == "Pending"
    assert pod.status.container_statuses[0].state.waiting.message == message

    async def retried():  # the kubelet tries again: one Failed Event, counted
        failed = [e for e in await pod_events(core, "waiter") if e.reason == "Failed"]
        return failed if failed and failed[0].count >= 2 else None

    (failed,) = await until(retried)
    assert (failed.type, failed.message, failed.involved_object.field_path) == (
        "Warning", f"Error: {message}", "spec.containers{main}")
    if "configmap" in message:
        await core.create_namespaced_config_map("default", config_map("late", token="t"))
    else:
        await core.create_namespaced_secret("default", secret("late", token="t"))
    assert (await wait_phase(core, "waiter", "Succeeded", "Failed")).status.phase == "Succeeded"


async def test_a_missing_key_is_named(cluster, core):
    await core.create_namespaced_secret("default", secret("creds", user="ann"))
    body = process_pod("keyless", "true", env=[
        {"name": "T", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}])
    await core.create_namespaced_pod("default", body)
    pod = await wait_pod(core, "keyless", config_error)
    assert pod.status.container_statuses[0].state.waiting.message == "couldn't find key token in Secret default/creds"


async def test_a_missing_volume_source_holds_the_pod_in_container_creating(cluster, core, tmp_path):
    cluster.runner.backoff = (0.05, 0.2)
    marker = tmp_path / "ran"
    body = process_pod("mounter", "touch", str(marker))
    body["spec"]["volumes"] = [{"name": "creds", "secret": {"secretName": "vault"}},
                               {"name": "extra", "configMap": {"name": "absent", "optional": True}}]

    async def failed_mount():
        return [e for e in await pod_events(core, "mounter") if e.reason == "FailedMount"]

    await core.create_namespaced_pod("default", body)
    (event,) = await until(failed_mount)
    assert (event.type, event.message, event.source.component) == (
        "Warning", 'MountVolume.SetUp failed for volume "creds" : secret "vault" not found', "kubelet")
    pod = await core.read_namespaced_pod("mounter", "default")
    assert pod.status.phase == "Pending"
    assert pod.status.container_statuses[0].state.waiting.reason == "ContainerCreating"
    assert not marker.exists()
    await core.create_namespaced_secret("default", secret("vault", k="v"))
    assert (await wait_phase(core, "mounter", "Succeeded", "Failed")).status.phase == "Succeeded"
    assert marker.exists()


@pytest.mark.parametrize(("command", "working_dir", "message"), [
    ("nonexistent-binary", None, 'exec: "nonexistent-binary": executable file not found in $PATH'),
    ("/nonexistent/program", None,
     'exec: "/nonexistent/program": stat /nonexistent/program: no such file or directory'),
    ("true", "/nonexistent/dir",
     'chdir to cwd ("/nonexistent/dir") set in config.json failed: no such file or directory'),
])
async def test_a_command_that_cannot_start_is_a_start_error_in_runcs_words(cluster, core, command, working_dir,
                                                                          message):
    body = process_pod("nope", command)
    if working_dir:
        body["spec"]["containers"][0]["workingDir"] = working_dir
    await core.create_namespaced_pod("default", body)
    done = await wait_phase(core, "nope", "Failed")
    terminated = done.status.container_statuses[0].state.terminated
    # As a kubelet with containerd says it: runc's words in containerd's, a start time of zero.
    said = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create "
            f"failed: unable to start container process: {message}: unknown")
    assert (terminated.reason, terminated.exit_code, terminated.message) == ("StartError", 128, said)
    assert terminated.started_at.timestamp() == 0 and terminated.finished_at is not None
    failed = [e for e in await pod_events(core, "nope") if e.reason == "Failed"]
    assert [e.message for e in failed] == [f"Error: {said}"]
