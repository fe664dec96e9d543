"""The `process` pod runner's container logs: the pods/log subresource, follow, the tail kept, kubectl logs."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from localcluster.kubelet.log_file import LogFile
from localcluster.testing import Kubectl, until

from .process_runner_support import (
    log_contains,
    log_text,
    process_pod,
    python,
    wait_phase,
)

pytestmark = pytest.mark.runner("process")


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
