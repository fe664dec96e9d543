"""`kubectl exec` against the process runner: the command runs in the container's environment.

kubectl 1.35 speaks the v5.channel.k8s.io WebSocket protocol to the API server; these tests run the
real kubectl, so they hold localcluster to what it sends and expects.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import select
import struct
import termios
import time

import aiohttp
import pytest

from localcluster.kubelet.pod_connect import MAX_MESSAGE_BYTES
from localcluster.testing import ENV, Kubectl, until

from .process_runner_support import alive, process_pod, running, wait_phase, wait_pod
from .rest import connect
from .test_delete import gone

pytestmark = pytest.mark.runner("process")


async def sleeper(core, tmp_path, name: str = "box", **extra) -> None:
    pod_name = {"fieldRef": {"fieldPath": "metadata.name"}}
    body = process_pod(name, "sleep", "60", env=[{"name": "GREETING", "value": "hello"},
                                                 {"name": "POD", "valueFrom": pod_name}])
    body["spec"]["containers"][0].update(workingDir=str(tmp_path), **extra)
    await core.create_namespaced_pod("default", body)
    await wait_pod(core, name, running)


async def test_exec_runs_in_the_containers_environment(cluster, core, tmp_path):
    kubectl = Kubectl(cluster, tmp_path)
    await sleeper(core, tmp_path)
    (tmp_path / "data.txt").write_text("the container's files\n")
    done = await kubectl.ok("exec", "box", "--", "sh", "-c", "echo $GREETING $POD $HOSTNAME; pwd; cat data.txt; "
                                                             "echo to-stderr >&2")
    assert done.out == f"hello box box\n{tmp_path}\nthe container's files\n"
    assert done.err == "to-stderr\n"


async def test_exec_passes_stdin_and_the_exit_code(cluster, core, tmp_path):
    kubectl = Kubectl(cluster, tmp_path)
    await sleeper(core, tmp_path)
    done = await kubectl.ok("exec", "-i", "box", "--", "sh", "-c", "tr a-z A-Z; echo done")
    assert done.out == "done\n"  # stdin was empty: kubectl closed it, and the command finished
    done = await kubectl.ok("exec", "-i", "box", "--", "sh", "-c", "tr a-z A-Z; echo done", stdin="line one\ntwo\n")
    assert done.out == "LINE ONE\nTWO\ndone\n"
    failed = await kubectl.run("exec", "box", "--", "sh", "-c", "echo partial; exit 3")
    assert (failed.code, failed.out, failed.err) == (3, "partial\n", "command terminated with exit code 3\n")


async def test_exec_with_a_terminal(cluster, core, tmp_path):
    kubectl = Kubectl(cluster, tmp_path)
    await sleeper(core, tmp_path)
    parent, child = pty.openpty()  # kubectl -t needs a terminal of its own, whose size it passes on
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 111, 0, 0))
    proc = await asyncio.create_subprocess_exec(*kubectl._argv(("exec", "-it", "box", "--", "sh")), stdin=child,
                                                stdout=child, stderr=child, env=ENV)
    os.close(child)

    def read_until(text: bytes, timeout: float = 10.0) -> bytes:
        output = b""
        deadline = time.monotonic() + timeout
        while text not in output and time.monotonic() < deadline:
            ready, _, _ = select.select([parent], [], [], 0.1)
            if ready:
                try:
                    output += os.read(parent, 4096)
                except OSError:
                    break
        assert text in output, output
        return output

    try:
        os.write(parent, b"tty -s && echo on-a-terminal; echo $GREETING; stty size; exit 4\n")
        output = await asyncio.to_thread(read_until, b"command terminated with exit code 4")
        # A terminal's line endings (stdout and stderr are one stream through it), and kubectl's terminal size.
        assert b"on-a-terminal\r\nhello\r\n33 111\r\n" in output
        assert await asyncio.wait_for(proc.wait(), 10) == 4
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        os.close(parent)


@pytest.mark.parametrize("end", ["the pod is deleted", "kubectl goes away"])
async def test_an_exec_ends_with_its_container_or_its_client(cluster, core, tmp_path, end):
    kubectl = Kubectl(cluster, tmp_path)
    await sleeper(core, tmp_path)
    marker = tmp_path / "exec.pid"
    async with kubectl.stream("exec", "box", "--", "sh", "-c", f"echo $$ > {marker}; echo started; sleep 60") as lines:
        await lines.until("started")
        pid = int(marker.read_text())
        assert alive(pid)
        if end == "kubectl goes away":
            lines.proc.kill()
        else:
            await core.delete_namespaced_pod("box", "default")
            await until(lambda: gone(core, "box"))

        async def dead():
            return not alive(pid)

        await until(dead)
    if end == "kubectl goes away":  # the container runs on
        assert (await core.read_namespaced_pod("box", "default")).status.phase == "Running"


async def test_exec_answers_as_a_cluster_when_it_cannot_run(cluster, core, tmp_path):
    kubectl = Kubectl(cluster, tmp_path)
    await sleeper(core, tmp_path)
    missing = await kubectl.run("exec", "box", "--", "no-such-command")
    assert missing.code == 1
    assert missing.err == ('error: Internal error occurred: Internal error occurred: error executing command in '
                           'container: exec: "no-such-command": executable file not found in $PATH\n')
    wrong = await kubectl.run("exec", "box", "-c", "other", "--", "true")
    assert wrong.err == 'Error from server (BadRequest): container other is not valid for pod box\n'

    cluster.runner.backoff = (5.0, 5.0)  # the second instance waits: the container is not running meanwhile
    await core.create_namespaced_pod("default", process_pod("crash", "sh", "-c", "exit 1", restart="Always"))

    async def backing_off():
        pod = await core.read_namespaced_pod("crash", "default")
        waiting = (pod.status.container_statuses or [None])[0]
        return waiting is not None and waiting.state.waiting is not None and \
            waiting.state.waiting.reason == "CrashLoopBackOff"

    await until(backing_off)
    stopped = await kubectl.run("exec", "crash", "--", "true")
    assert stopped.err == ('error: Internal error occurred: unable to upgrade connection: container not found '
                           '("main")\n')

    await core.create_namespaced_pod("default", process_pod("finished", "true"))
    await wait_phase(core, "finished", "Succeeded")
    completed = await kubectl.run("exec", "finished", "--", "true")  # kubectl's own check, before any request
    assert completed.err == "error: cannot exec into a container in a completed pod; current phase is Succeeded\n"


@pytest.mark.slow  # kubectl
@pytest.mark.runner("none")
async def test_other_runners_cannot_exec(cluster, core, tmp_path):
    kubectl = Kubectl(cluster, tmp_path)
    body = process_pod("unbound", "sleep", "60")
    await core.create_namespaced_pod("default", body)
    unbound = await kubectl.run("exec", "unbound", "--", "true")
    assert "pod unbound does not have a host assigned" in unbound.err
    body = process_pod("bound", "sleep", "60")
    body["spec"]["nodeName"] = "localnode"
    await core.create_namespaced_pod("default", body)
    bound = await kubectl.run("exec", "bound", "--", "true")
    assert "pods/exec is served only by the process pod runner" in bound.err


async def test_exec_needs_get_and_create_on_pods_exec(cluster, core, tmp_path):
    """kube-apiserver 1.35 authorizes a WebSocket exec as `get` and, since it creates a session, `create`."""
    await sleeper(core, tmp_path)
    rbac = cluster.registry.get("rbac.authorization.k8s.io", "v1", "roles")
    bindings = cluster.registry.get("rbac.authorization.k8s.io", "v1", "rolebindings")
    for user, verbs in (("getter", ["get"]), ("execer", ["get", "create"])):
        cluster.api.create(rbac, "default", {"metadata": {"name": user}, "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["pods/exec"], "verbs": verbs}]})
        cluster.api.create(bindings, "default", {
            "metadata": {"name": user}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                    "name": user},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    kubectl = Kubectl(cluster, tmp_path)
    refused = await kubectl.run("--as", "getter", "exec", "box", "--", "true")
    assert refused.err == ('Error from server (Forbidden): pods "box" is forbidden: User "getter" cannot create '
                           'resource "pods/exec" in API group "" in the namespace "default"\n')
    allowed = await kubectl.run("--as", "execer", "exec", "box", "--", "echo", "ok")
    assert (allowed.code, allowed.out) == (0, "ok\n")


async def test_an_oversized_exec_message_closes_the_connection_and_the_server_goes_on(cluster, core, tmp_path):
    await sleeper(core, tmp_path)
    query = [("command", "cat"), ("stdin", "true"), ("stdout", "true")]
    async with connect(cluster) as rest:
        async with rest.websocket("/api/v1/namespaces/default/pods/box/exec", ("v5.channel.k8s.io",), query) as ws:
            await ws.send_bytes(bytes([0]) + b"x" * MAX_MESSAGE_BYTES)  # stdin, one byte past the bound
            while (msg := await asyncio.wait_for(ws.receive(), 10)).type == aiohttp.WSMsgType.BINARY:
                pass  # the opening empty message
            assert (msg.type, msg.data) == (aiohttp.WSMsgType.CLOSE, aiohttp.WSCloseCode.MESSAGE_TOO_BIG)
    done = await Kubectl(cluster, tmp_path).ok("exec", "-i", "box", "--", "cat", stdin="x" * 100_000)
    assert done.out == "x" * 100_000  # a large stdin in kubectl's chunks still passes
