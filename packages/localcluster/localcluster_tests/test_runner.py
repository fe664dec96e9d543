"""The pod runners: pods stay Pending with `none`; `scripted` pods run, exit and report like a kubelet."""

from __future__ import annotations

import json

import pytest

from localcluster.kubelet.runner import SCRIPT_ANNOTATION
from localcluster.testing import until

from .test_crud import pod


async def phase(core, name: str) -> str:
    return (await core.read_namespaced_pod(name, "default")).status.phase


async def test_none_runner_leaves_pods_pending(cluster, core):
    await core.create_namespaced_pod("default", pod("a"))
    created = await core.read_namespaced_pod("a", "default")
    assert created.status.phase == "Pending" and not created.spec.node_name


@pytest.mark.runner("scripted")
async def test_scripted_pod_runs_then_succeeds(cluster, core):
    cluster.runner.set_script("default/ok", {"run_for": 0.05, "exit_code": 0})
    await core.create_namespaced_pod("default", pod("ok"))
    await until(lambda: _is(core, "ok", "Succeeded"))
    done = await core.read_namespaced_pod("ok", "default")
    assert done.spec.node_name == "localnode"
    state = done.status.container_statuses[0].state
    assert state.terminated.exit_code == 0 and state.terminated.reason == "Completed"
    assert done.status.start_time is not None


@pytest.mark.runner("scripted")
async def test_scripted_pod_fails_with_exit_code(cluster, core):
    body = pod("bad")
    body["metadata"]["annotations"] = {SCRIPT_ANNOTATION: json.dumps({"run_for": 0.01, "exit_code": 3})}
    await core.create_namespaced_pod("default", body)
    await until(lambda: _is(core, "bad", "Failed"))
    state = (await core.read_namespaced_pod("bad", "default")).status.container_statuses[0].state
    assert state.terminated.exit_code == 3 and state.terminated.reason == "Error"


@pytest.mark.runner("scripted")
async def test_scripted_pod_runs_forever_by_default(cluster, core):
    await core.create_namespaced_pod("default", pod("forever"))
    await until(lambda: _is(core, "forever", "Running"))
    running = await core.read_namespaced_pod("forever", "default")
    assert running.status.container_statuses[0].state.running is not None
    assert running.status.pod_ip


@pytest.mark.runner("scripted")
async def test_fail_to_start_stays_pending_with_reason(cluster, core):
    cluster.runner.set_script("default/nope", {"fail_to_start": "ImagePullBackOff"})
    await core.create_namespaced_pod("default", pod("nope"))

    async def waiting():
        p = await core.read_namespaced_pod("nope", "default")
        statuses = p.status.container_statuses or []
        return statuses and statuses[0].state.waiting and statuses[0].state.waiting.reason == "ImagePullBackOff"

    await until(waiting)
    assert await phase(core, "nope") == "Pending"


@pytest.mark.runner("scripted")
async def test_fail_to_start_carries_the_kubelets_message(cluster, core):
    """As a kubelet with containerd reports an image it cannot pull (ErrImagePull, then ImagePullBackOff)."""
    cluster.runner.set_script("default/pull", {"fail_to_start": "ErrImagePull"})
    cluster.runner.set_script("default/backoff", {"fail_to_start": "ImagePullBackOff"})
    cluster.runner.set_script("default/secret", {"fail_to_start": "CreateContainerConfigError",
                                                 "fail_message": 'secret "creds" not found'})
    for name in ("pull", "backoff", "secret"):
        await core.create_namespaced_pod("default", pod(name))

    async def waiting(name):
        statuses = (await core.read_namespaced_pod(name, "default")).status.container_statuses or []
        return statuses[0].state.waiting if statuses and statuses[0].state.waiting.reason != "ContainerCreating" \
            else None

    image = (await core.read_namespaced_pod("pull", "default")).spec.containers[0].image
    ref = image if "/" in image else f"docker.io/library/{image}"
    pull = await until(lambda: waiting("pull"))
    assert (pull.reason, pull.message) == ("ErrImagePull", f'rpc error: code = NotFound desc = failed to pull and '
                                           f'unpack image "{ref}": failed to resolve reference "{ref}": {ref}: '
                                           "not found")
    backoff = await until(lambda: waiting("backoff"))
    assert backoff.message == f'Back-off pulling image "{image}"'
    assert (await until(lambda: waiting("secret"))).message == 'secret "creds" not found'


@pytest.mark.runner("scripted")
async def test_an_unschedulable_pod_is_never_bound_and_says_why(cluster, core):
    """As the default scheduler leaves a pod no node fits: Pending, no node, PodScheduled False/Unschedulable."""
    cluster.runner.set_script("default/big", {"unschedulable": True})
    await core.create_namespaced_pod("default", pod("big"))

    async def condition():
        p = await core.read_namespaced_pod("big", "default")
        return next((c for c in p.status.conditions or () if c.type == "PodScheduled"), None)

    scheduled = await until(condition)
    assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
    assert scheduled.message.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    big = await core.read_namespaced_pod("big", "default")
    assert big.status.phase == "Pending" and not big.spec.node_name and not big.status.container_statuses


@pytest.mark.runner("scripted")
async def test_scripts_by_attempt(cluster, core):
    cluster.runner.set_script("default/flaky", [{"run_for": 0.01, "exit_code": 1}, {"run_for": 0.01}])
    await core.create_namespaced_pod("default", pod("flaky"))
    await until(lambda: _is(core, "flaky", "Failed"))
    await core.delete_namespaced_pod("flaky", "default")
    await until(lambda: _absent(core, "flaky"))
    await core.create_namespaced_pod("default", pod("flaky"))
    await until(lambda: _is(core, "flaky", "Succeeded"))


@pytest.mark.runner("scripted")
async def test_deleting_a_running_pod_terminates_it(cluster, core):
    await core.create_namespaced_pod("default", pod("victim"))
    await until(lambda: _is(core, "victim", "Running"))
    await core.delete_namespaced_pod("victim", "default")
    await until(lambda: _absent(core, "victim"))


async def test_init_containers_reported(core):
    from localcluster import LocalCluster

    async with LocalCluster(runner="scripted") as c:
        body = pod("init")
        body["spec"]["initContainers"] = [{"name": "setup", "image": "busybox"}]
        rt = c.registry.get("", "v1", "pods")
        c.api.create(rt, "default", body)

        async def running():
            return c.api.get(rt, "default", "init")["status"].get("phase") == "Running"

        await until(running)
        status = c.api.get(rt, "default", "init")["status"]
        assert status["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0


async def _is(core, name: str, wanted: str) -> bool:
    return await phase(core, name) == wanted


async def _absent(core, name: str) -> bool:
    from kubernetes_asyncio.client.exceptions import ApiException

    try:
        await core.read_namespaced_pod(name, "default")
    except ApiException as exc:
        return exc.status == 404
    return False


@pytest.mark.parametrize("runner", ["scripted", pytest.param("process", marks=pytest.mark.slow)])  # its pods' processes
async def test_each_state_a_runner_writes_keeps_its_own_resource_version(runner):
    """A runner writes a pod's next state from the stored one: the version already stored (which
    watchers are sent and the history keeps) must not take the new resourceVersion with it."""
    from localcluster import LocalCluster

    async with LocalCluster(runner=runner) as local:
        seen: list[dict] = []
        local.store.subscribe(lambda ev: seen.append(ev.obj) if ev.key == ("", "pods") else None)
        body = pod("versions")
        body["spec"].update(restartPolicy="Never")
        body["spec"]["containers"][0]["command"] = ["true"]
        body["metadata"]["annotations"] = {SCRIPT_ANNOTATION: json.dumps({"run_for": 0.01})}
        local.api.create(local.registry.get("", "v1", "pods"), "default", body)

        async def finished():
            return any((o.get("status") or {}).get("phase") == "Succeeded" for o in seen)

        await until(finished)
        versions = [int(o["metadata"]["resourceVersion"]) for o in seen]
        assert len(versions) >= 3 and versions == sorted(set(versions)), versions
