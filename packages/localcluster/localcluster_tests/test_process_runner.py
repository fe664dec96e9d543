"""The `process` pod runner: containers run as local processes and report back like a kubelet.

Every wait polls the API (or the process table) under a timeout; processes synchronise with the
test through files in tmp_path and through their logs.
"""

from __future__ import annotations

import json
import time

import pytest

from localcluster import LocalCluster
from localcluster.__main__ import parse_args
from localcluster.kubelet.container_env import expand
from localcluster.testing import until

from .process_runner_support import (
    alive,
    config_error,
    dead,
    final_states,
    log_contains,
    log_text,
    pid_of,
    process_pod,
    python,
    running,
    wait_phase,
    wait_pod,
)
from .test_delete import gone

pytestmark = pytest.mark.runner("process")


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
    await core.delete_namespaced_pod("sleeper", "default")  # grace period 30 s: SIGTERM ends it long before
    await until(lambda: gone(core, "sleeper"), timeout=20)  # a bound, under the grace period
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


# --- stopping the cluster --------------------------------------------------------------------------


@pytest.mark.slow  # a cluster with the process runner
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
