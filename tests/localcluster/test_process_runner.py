"""The `process` pod runner: containers run as local processes and report back like a kubelet.

Every wait polls the API (or the process table) under a timeout; processes synchronise with the
test through files in tmp_path and through their logs.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from localcluster import LocalCluster
from localcluster.__main__ import parse_args
from localcluster.kubelet.container_env import expand
from localcluster.kubelet.process_runner import LogFile
from tests.waiting import until

from .kubectl import Kubectl
from .test_delete import gone

PY = sys.executable
pytestmark = pytest.mark.runner("process")


def process_pod(name: str, *command: str, restart: str = "Never", env: list | None = None,
                init: list[dict] | None = None, grace: int | None = None, **meta) -> dict:
    spec: dict = {"restartPolicy": restart,
                  "containers": [{"name": "main", "image": "ignored", "command": list(command), "env": env or []}]}
    if init:
        spec["initContainers"] = init
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **meta}, "spec": spec}


def python(code: str, *args: str) -> list[str]:
    return [PY, "-c", code, *args]


async def wait_phase(core, name: str, *phases: str, timeout: float = 10.0):
    async def check():
        pod = await core.read_namespaced_pod(name, "default")
        return pod if pod.status.phase in phases else None

    return await until(check, timeout=timeout)


async def wait_pod(core, name: str, predicate, timeout: float = 10.0):
    async def check():
        pod = await core.read_namespaced_pod(name, "default")
        return pod if predicate(pod) else None

    return await until(check, timeout=timeout)


def running(pod) -> bool:
    statuses = pod.status.container_statuses or []
    return bool(statuses) and statuses[0].state.running is not None


def pid_of(pod, index: int = 0) -> int:
    return int(pod.status.container_statuses[index].container_id.removeprefix("process://"))


def alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def dead(pid: int, timeout: float = 5.0) -> None:
    async def check():
        return not alive(pid)

    await until(check, timeout=timeout)


async def log_text(core, name: str, **kwargs) -> str:
    """The pods/log subresource as raw text (the generated client would json-decode a numeric log)."""
    response = await core.read_namespaced_pod_log(name, "default", _preload_content=False, **kwargs)
    try:
        return (await response.read()).decode()
    finally:
        response.release()


async def log_contains(core, name: str, text: str, timeout: float = 10.0, **kwargs) -> str:
    async def check():
        try:
            out = await log_text(core, name, **kwargs)
        except ApiException as exc:
            if exc.status == 400:  # not started yet
                return None
            raise
        return out if text in out else None

    return await until(check, timeout=timeout)


def final_states(cluster: LocalCluster) -> dict[str, dict]:
    """Each pod's last stored state, captured as it is deleted."""
    finals: dict[str, dict] = {}

    def listen(ev) -> None:
        if ev.key == ("", "pods") and ev.type == "DELETED":
            finals[ev.obj["metadata"]["name"]] = ev.obj

    cluster.store.subscribe(listen)
    return finals


# --- running to completion -------------------------------------------------------------------------


async def test_pod_goes_pending_running_succeeded(cluster, core, tmp_path):
    phases: list[str] = []
    cluster.store.subscribe(lambda ev: phases.append(ev.obj["status"]["phase"])
                            if ev.key == ("", "pods") and ev.obj["metadata"]["name"] == "ok" else None)
    go = tmp_path / "go"
    wait_for_go = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.01)"
    created = await core.create_namespaced_pod("default", process_pod("ok", *python(wait_for_go, str(go))))
    assert created.status.phase == "Pending"

    pod = await wait_pod(core, "ok", running)
    assert pod.status.phase == "Running"
    assert pod.spec.node_name == "localnode" and pod.status.host_ip == "127.0.0.1"
    assert pod.status.pod_ip == cluster.runner.network.pool.by_uid[pod.metadata.uid]  # its own (test_pod_network)
    status = pod.status.container_statuses[0]
    assert status.ready and status.started and status.state.running.started_at is not None
    assert {c.type: c.status for c in pod.status.conditions}["Ready"] == "True"
    assert alive(pid_of(pod))

    go.touch()
    done = await wait_phase(core, "ok", "Succeeded", "Failed")
    assert done.status.phase == "Succeeded"
    terminated = done.status.container_statuses[0].state.terminated
    assert terminated.exit_code == 0 and terminated.reason == "Completed"
    assert terminated.started_at is not None and terminated.finished_at is not None
    assert {c.type: c.status for c in done.status.conditions}["Ready"] == "False"
    assert [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p] == ["Pending", "Running", "Succeeded"]


async def test_nonzero_exit_fails_the_pod(cluster, core):
    await core.create_namespaced_pod("default", process_pod("bad", "sh", "-c", "exit 3"))
    done = await wait_phase(core, "bad", "Succeeded", "Failed")
    assert done.status.phase == "Failed"
    terminated = done.status.container_statuses[0].state.terminated
    assert terminated.exit_code == 3 and terminated.reason == "Error"


async def test_a_command_that_cannot_run_is_a_start_error(cluster, core):
    await core.create_namespaced_pod("default", process_pod("nope", "/nonexistent/program"))
    done = await wait_phase(core, "nope", "Succeeded", "Failed")
    terminated = done.status.container_statuses[0].state.terminated
    assert done.status.phase == "Failed"
    assert terminated.exit_code == 128 and terminated.reason == "StartError" and "nonexistent" in terminated.message


# --- environment and expansion ---------------------------------------------------------------------


async def test_env_values_and_field_refs_reach_the_process(cluster, core, tmp_path):
    out = tmp_path / "env.json"
    env = [
        {"name": "PLAIN", "value": "plain value"},
        {"name": "DERIVED", "value": "$(PLAIN) and more"},
        *({"name": var, "valueFrom": {"fieldRef": {"fieldPath": path}}} for var, path in [
            ("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace"), ("POD_UID", "metadata.uid"),
            ("APP", "metadata.labels['app.kubernetes.io/name']"), ("NOTE", "metadata.annotations['note']"),
            ("MISSING_LABEL", "metadata.labels['absent']"), ("NODE", "spec.nodeName"), ("POD_IP", "status.podIP")]),
    ]
    dump = "import json, os, sys\njson.dump(dict(os.environ), open(sys.argv[1], 'w'))"
    body = process_pod("envy", *python(dump, str(out)), env=env,
                       labels={"app.kubernetes.io/name": "trainer"}, annotations={"note": "hi"})
    created = await core.create_namespaced_pod("default", body)
    await wait_phase(core, "envy", "Succeeded")
    seen = json.loads(out.read_text())
    assert seen["PLAIN"] == "plain value" and seen["DERIVED"] == "plain value and more"
    assert seen["POD_NAME"] == "envy" and seen["POD_NAMESPACE"] == "default"
    assert seen["POD_UID"] == created.metadata.uid
    assert seen["APP"] == "trainer" and seen["NOTE"] == "hi" and seen["MISSING_LABEL"] == ""
    pod = await core.read_namespaced_pod("envy", "default")
    assert seen["NODE"] == "localnode" and seen["POD_IP"] == pod.status.pod_ip != "127.0.0.1"
    assert seen["HOSTNAME"] == "envy" and "PATH" in seen  # the server's environment stands in for the image's


async def test_var_references_expand_in_command_and_args(cluster, core):
    body = process_pod("expand", *python("import sys; print(' | '.join(sys.argv[1:]))"),
                       env=[{"name": "GREETING", "value": "hello"}, {"name": "WHO", "value": "$(GREETING)-world"},
                            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}])
    body["spec"]["containers"][0]["args"] = ["$(GREETING)", "$$(GREETING)", "$(MISSING)", "$(WHO)", "pod=$(POD)",
                                             "$$", "a$b", "$(unterminated"]
    await core.create_namespaced_pod("default", body)
    await wait_phase(core, "expand", "Succeeded")
    assert await core.read_namespaced_pod_log("expand", "default") == (
        "hello | $(GREETING) | $(MISSING) | hello-world | pod=expand | $ | a$b | $(unterminated\n")


def config_error(pod) -> bool:
    statuses = pod.status.container_statuses or []
    return bool(statuses) and bool(statuses[0].state.waiting) and \
        statuses[0].state.waiting.reason == "CreateContainerConfigError"


@pytest.mark.parametrize("case", ["resourceFieldRef", "no command"])
async def test_what_the_runner_cannot_provide_is_a_config_error(cluster, core, tmp_path, case):
    marker = tmp_path / "ran"
    body = process_pod("cfg", "touch", str(marker))
    container = body["spec"]["containers"][0]
    if case == "resourceFieldRef":
        container["env"] = [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]
    else:
        del container["command"]
    await core.create_namespaced_pod("default", body)
    pod = await wait_pod(core, "cfg", config_error)
    assert pod.status.phase == "Pending"
    message = pod.status.container_statuses[0].state.waiting.message
    assert message and (case.split()[-1] in message)
    assert not marker.exists()
    await core.delete_namespaced_pod("cfg", "default")
    await until(lambda: gone(core, "cfg"))


def test_expansion_follows_the_kubelet():
    env = {"VAR_A": "A", "VAR_B": "B", "EMPTY": ""}
    cases = {
        "$(VAR_A)": "A", "___$(VAR_B)___": "___B___", "$(VAR_A)-$(VAR_B)": "A-B", "$(EMPTY)": "",
        "$$(VAR_A)": "$(VAR_A)", "$$$(VAR_A)": "$A", "$(UNKNOWN)": "$(UNKNOWN)", "$(VAR_A": "$(VAR_A",
        "$VAR_A": "$VAR_A", "$": "$", "$$": "$", "x$": "x$", "$()": "$()", "(VAR_A)": "(VAR_A)",
    }
    for text, wanted in cases.items():
        assert expand(text, env) == wanted, text


# --- init containers and restarts --------------------------------------------------------------------


async def test_init_containers_run_first_in_order(cluster, core, tmp_path):
    order = tmp_path / "order"
    init = [{"name": f"init-{i}", "image": "x", "command": ["sh", "-c", f"echo init-{i} >> {order}"]} for i in (1, 2)]
    body = process_pod("init", "sh", "-c", f"test -f {order} && echo main >> {order}", init=init)
    await core.create_namespaced_pod("default", body)
    done = await wait_phase(core, "init", "Succeeded", "Failed")
    assert done.status.phase == "Succeeded"
    assert order.read_text().split() == ["init-1", "init-2", "main"]
    assert [s.state.terminated.exit_code for s in done.status.init_container_statuses] == [0, 0]


async def test_a_failing_init_container_fails_a_never_restarting_pod(cluster, core, tmp_path):
    marker = tmp_path / "main-ran"
    init = [{"name": "setup", "image": "x", "command": ["sh", "-c", "exit 2"]}]
    await core.create_namespaced_pod("default", process_pod("badinit", "touch", str(marker), init=init))
    done = await wait_phase(core, "badinit", "Succeeded", "Failed")
    assert done.status.phase == "Failed"
    assert done.status.init_container_statuses[0].state.terminated.exit_code == 2
    assert done.status.container_statuses[0].state.waiting.reason == "PodInitializing"
    assert not marker.exists()


async def test_on_failure_restarts_the_container_in_place(cluster, core, tmp_path):
    cluster.runner.backoff = (0.05, 0.1)
    marker = tmp_path / "tried"
    script = f"if [ -e {marker} ]; then echo second; exit 0; fi; echo first; touch {marker}; exit 1"
    await core.create_namespaced_pod("default", process_pod("flaky", "sh", "-c", script, restart="OnFailure"))
    done = await wait_phase(core, "flaky", "Succeeded", "Failed")
    assert done.status.phase == "Succeeded"
    status = done.status.container_statuses[0]
    assert status.restart_count == 1
    assert status.last_state.terminated.exit_code == 1 and status.state.terminated.exit_code == 0
    assert await log_text(core, "flaky") == "second\n"
    assert await log_text(core, "flaky", previous=True) == "first\n"


async def test_always_restarts_even_after_success(cluster, core):
    cluster.runner.backoff = (0.01, 0.05)
    await core.create_namespaced_pod("default", process_pod("loop", "true", restart="Always"))
    pod = await wait_pod(core, "loop", lambda p: (p.status.container_statuses or [None])[0] is not None
                         and p.status.container_statuses[0].restart_count >= 2)
    assert pod.status.phase == "Running"  # exited containers that will restart keep the pod Running
    await core.delete_namespaced_pod("loop", "default")
    await until(lambda: gone(core, "loop"))


# --- deletion ----------------------------------------------------------------------------------------


async def test_deleting_a_pod_sends_sigterm_and_removes_it(cluster, core):
    finals = final_states(cluster)
    await core.create_namespaced_pod("default", process_pod("sleeper", "sleep", "60"))
    pid = pid_of(await wait_pod(core, "sleeper", running))
    began = time.monotonic()
    await core.delete_namespaced_pod("sleeper", "default")  # grace period 30 s: SIGTERM ends it long before
    await until(lambda: gone(core, "sleeper"), timeout=5)
    assert time.monotonic() - began < 5
    assert not alive(pid)
    final = finals["sleeper"]["status"]
    assert final["phase"] == "Failed"
    assert final["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 128 + 15


async def test_a_process_ignoring_sigterm_is_killed_after_the_grace_period(cluster, core):
    finals = final_states(cluster)
    stubborn = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\n" \
               "time.sleep(60)"
    await core.create_namespaced_pod("default", process_pod("stubborn", *python(stubborn), grace=1))
    pod = await wait_pod(core, "stubborn", running)
    pid = pid_of(pod)
    await log_contains(core, "stubborn", "ready")
    began = time.monotonic()
    await core.delete_namespaced_pod("stubborn", "default")
    await until(lambda: gone(core, "stubborn"), timeout=6)
    assert time.monotonic() - began >= 0.9
    assert not alive(pid)
    assert finals["stubborn"]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 128 + 9


async def test_force_deletion_kills_at_once(cluster, core):
    await core.create_namespaced_pod("default", process_pod("forced", "sleep", "60"))
    pid = pid_of(await wait_pod(core, "forced", running))
    await core.delete_namespaced_pod("forced", "default", grace_period_seconds=0)
    assert await gone(core, "forced")
    await dead(pid)


async def test_a_finalizer_keeps_the_stopped_pod_with_its_final_status(cluster, core):
    body = process_pod("kept", "sleep", "60", finalizers=["example.com/keep"])
    await core.create_namespaced_pod("default", body)
    pid = pid_of(await wait_pod(core, "kept", running))
    await core.delete_namespaced_pod("kept", "default")
    stopped = await wait_phase(core, "kept", "Failed")
    assert stopped.metadata.deletion_timestamp is not None
    assert stopped.status.container_statuses[0].state.terminated.exit_code == 143
    assert not alive(pid)
    await core.patch_namespaced_pod("kept", "default", {"metadata": {"finalizers": None}})
    await until(lambda: gone(core, "kept"))


# --- logs ----------------------------------------------------------------------------------------------


async def test_logs_through_the_api(cluster, core):
    body = process_pod("talker", "sh", "-c", "echo out; echo err >&2; echo $POD_NAME",
                       env=[{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}])
    body["spec"]["initContainers"] = [{"name": "prep", "image": "x", "command": ["echo", "preparing"]}]
    await core.create_namespaced_pod("default", body)
    await wait_phase(core, "talker", "Succeeded")
    assert await core.read_namespaced_pod_log("talker", "default") == "out\nerr\ntalker\n"
    assert await core.read_namespaced_pod_log("talker", "default", container="main", tail_lines=1) == "talker\n"
    assert await core.read_namespaced_pod_log("talker", "default", container="prep") == "preparing\n"
    assert await core.read_namespaced_pod_log("talker", "default", limit_bytes=3) == "out"
    with pytest.raises(ApiException) as err:
        await core.read_namespaced_pod_log("talker", "default", container="nope")
    assert err.value.status == 400
    with pytest.raises(ApiException) as err:
        await core.read_namespaced_pod_log("talker", "default", previous=True)
    assert err.value.status == 400
    with pytest.raises(ApiException) as err:
        await core.read_namespaced_pod_log("absent", "default")
    assert err.value.status == 404


async def test_follow_streams_until_the_container_exits(cluster, core, tmp_path):
    go = tmp_path / "go"
    code = "import os, sys, time\nprint('one', flush=True)\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.01)\n" \
           "print('two', flush=True)"
    await core.create_namespaced_pod("default", process_pod("follow", *python(code, str(go))))
    await log_contains(core, "follow", "one")
    response = await core.read_namespaced_pod_log("follow", "default", follow=True, _preload_content=False)
    try:
        async with asyncio.timeout(10):
            assert await response.content.readline() == b"one\n"
            go.touch()
            assert await response.content.readline() == b"two\n"
            assert await response.content.readline() == b""  # the stream ends with the container
    finally:
        response.release()


async def test_logs_keep_only_the_tail(cluster, core):
    cluster.runner.log_limit = 64 * 1024
    await core.create_namespaced_pod("default", process_pod("loud", *python("for i in range(200000): print(i)")))
    await wait_phase(core, "loud", "Succeeded")
    text = await log_text(core, "loud")
    assert 60 * 1024 <= len(text) <= 80 * 1024  # the last 64 KiB, from a line start, plus at most a quarter
    numbers = [int(line) for line in text.splitlines()]
    assert numbers[-1] == 199_999 and numbers == list(range(numbers[0], 200_000))


def test_log_file_trims_at_line_boundaries(tmp_path):
    async def main():
        sink = LogFile(tmp_path / "c.log", limit=100)
        for i in range(1000):
            sink.write(f"line {i}\n".encode())
        data, end = sink.read()
        assert len(data) <= 125 and data.endswith(b"line 999\n") and data.startswith(b"line ")
        assert end == sum(len(f"line {i}\n") for i in range(1000))
        assert sink.read(end) == (b"", end)
        sink.close()

    asyncio.run(main())


@pytest.mark.runner("none")
async def test_other_runners_keep_no_logs(cluster, core):
    """With no runner nothing binds a pod: as the apiserver has no log location for a pod with no node, its
    log is empty; one bound to a node that does not exist (none: with no kubelet, there are no nodes) 404s."""
    await core.create_namespaced_pod("default", process_pod("quiet", "true"))
    assert await core.read_namespaced_pod_log("quiet", "default") == ""
    bound = process_pod("bound", "true")
    bound["spec"]["nodeName"] = "localnode"
    await core.create_namespaced_pod("default", bound)
    with pytest.raises(ApiException) as err:
        await core.read_namespaced_pod_log("bound", "default")
    assert err.value.status == 404 and 'nodes \\"localnode\\" not found' in err.value.body
    with pytest.raises(ApiException) as err:
        await core.read_namespaced_pod_log("absent", "default")
    assert err.value.status == 404


async def test_kubectl_run_and_logs(cluster, tmp_path):
    kubectl = Kubectl(cluster, tmp_path)
    await kubectl.ok("run", "demo", "--image=busybox", "--restart=Never", "--", "sh", "-c", "echo hello from $HOSTNAME")

    async def succeeded():
        out = (await kubectl.ok("get", "pod", "demo", "-o", "jsonpath={.status.phase}")).out
        return out == "Succeeded"

    await until(succeeded, timeout=15)
    assert (await kubectl.ok("logs", "demo")).out == "hello from demo\n"


# --- stopping the cluster --------------------------------------------------------------------------


async def test_stopping_the_cluster_kills_every_process(tmp_path):
    child = tmp_path / "child.pid"
    async with LocalCluster(runner="process") as local:
        rt = local.registry.get("", "v1", "pods")
        local.api.create(rt, "default", process_pod("a", "sleep", "60"))
        local.api.create(rt, "default", process_pod("b", "sh", "-c", f"sleep 60 & echo $! > {child}; wait"))

        async def both_running():
            pods = [local.api.get(rt, "default", n) for n in "ab"]
            return all((p["status"].get("containerStatuses") or [{}])[0].get("state", {}).get("running")
                       for p in pods) and child.exists() and child.read_text().strip()

        await until(both_running)
        pids = [int(local.api.get(rt, "default", n)["status"]["containerStatuses"][0]["containerID"].split("//")[1])
                for n in "ab"]
        pids.append(int(child.read_text()))
        log_dir = local.runner.log_dir
        assert all(alive(pid) for pid in pids) and log_dir.is_dir()
    for pid in pids:
        await dead(pid)
    assert not log_dir.exists()
    assert not local.runner.runs


def test_cli_offers_the_process_runner():
    assert parse_args(["serve", "--runner", "process"]).runner == "process"
