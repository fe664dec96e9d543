"""The envtest tier itself: the real API server answers as configured (TLS of the private CA, the static token
authenticator, RBAC), the controller manager collects garbage, and the test kubelet moves pods through their
status as localcluster's scripted runner does."""

from __future__ import annotations

import pytest

from localcluster.testing import SCRIPT_ANNOTATION, until
from tests.e2e.conftest import CRDS
from tests.real.cluster import RealCluster
from tests.real.envtest import USERS

pytestmark = pytest.mark.real
NOBODY = next(token for token, (user, _) in USERS.items() if user == "nobody")


@pytest.fixture
async def real(envtest):
    async with RealCluster(envtest) as running:
        yield running


def pod(name: str, script: dict | list | None = None, **spec) -> dict:
    annotations = {SCRIPT_ANNOTATION: __import__("json").dumps(script)} if script is not None else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}], **spec}}


PODS = "/api/v1/namespaces/default/pods"


async def phase_of(real, name: str) -> str | None:
    status, found = await real.http.request("GET", f"{PODS}/{name}")
    return (found.get("status") or {}).get("phase") if status == 200 else f"gone {status}"


async def test_the_admin_is_served_and_a_token_without_rights_is_refused(real, envtest):
    status, version = await real.http.request("GET", "/version")
    assert status == 200 and version["minor"] == "35"
    from tests.real.http import Http
    async with Http(envtest.plane.url, envtest.plane.ca_pem, token=NOBODY) as nobody:
        status, answer = await nobody.request("GET", PODS)
        assert status == 403
        assert answer["message"] == ('pods is forbidden: User "nobody" cannot list resource "pods" in API group "" '
                                     'in the namespace "default"')
    async with Http(envtest.plane.url, envtest.plane.ca_pem, token="wrong") as stranger:
        assert (await stranger.request("GET", PODS))[0] == 401


async def test_a_scripted_pod_runs_and_exits_with_its_code(real):
    await real.http.request("POST", PODS, pod("ends", {"run_for": 0.1, "exit_code": 3}))
    assert await until(lambda: _is(real, "ends", "Failed"), 30, "pod Failed")
    _, ended = await real.http.request("GET", f"{PODS}/ends")
    assert ended["spec"]["nodeName"] == "localnode"
    [container] = ended["status"]["containerStatuses"]
    assert container["state"]["terminated"]["exitCode"] == 3 and container["state"]["terminated"]["reason"] == "Error"
    assert real.runner.errors == []


async def test_attempts_follow_the_script_list_and_a_deletion_waits_for_the_kubelet(real):
    real.runner.set_script("default/again", [{"run_for": 0.05, "exit_code": 1}, {}])
    await real.http.request("POST", PODS, pod("again"))
    await until(lambda: _is(real, "again", "Failed"), 30, "first attempt Failed")
    await real.http.request("DELETE", f"{PODS}/again")
    await until(lambda: _gone(real, "again"), 30, "first attempt deleted")
    await real.http.request("POST", PODS, pod("again"))
    await until(lambda: _is(real, "again", "Running"), 30, "second attempt Running")
    # a running pod's deletion is graceful: the server keeps it until the kubelet confirms, exit code 143
    real.runner.set_script("default/again", {"terminate_after": 0.5})
    await real.http.request("DELETE", f"{PODS}/again")
    _, terminating = await real.http.request("GET", f"{PODS}/again")
    assert terminating["metadata"]["deletionTimestamp"]
    await until(lambda: _gone(real, "again"), 30, "second attempt deleted")
    assert real.runner.errors == []


async def test_gang_pods_wait_for_their_podgroup_and_minmember(real):
    await real.apply_crds(CRDS)
    gang = {"schedulerName": "t9k-scheduler"}
    annotations = {"scheduler.tensorstack.dev/group-name": "g"}
    for name in ("g-0", "g-1"):
        body = pod(name, **gang)
        body["metadata"]["annotations"].update(annotations)
        await real.http.request("POST", PODS, body)
    group = {"apiVersion": "scheduler.tensorstack.dev/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"},
             "spec": {"minMember": 2, "queue": "default"}}
    assert await phase_of(real, "g-0") == "Pending"
    status, _ = await real.http.request("POST", "/apis/scheduler.tensorstack.dev/v1beta1/namespaces/default/podgroups",
                                        group)
    assert status == 201
    for name in ("g-0", "g-1"):
        await until(lambda name=name: _is(real, name, "Running"), 30, f"{name} Running")


async def test_the_garbage_collector_deletes_what_an_owner_leaves(real):
    _, owner = await real.http.request("POST", "/api/v1/namespaces/default/configmaps",
                                       {"metadata": {"name": "owner"}})
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    await real.http.request("POST", "/api/v1/namespaces/default/configmaps",
                            {"metadata": {"name": "owned", "ownerReferences": [reference]}})
    await real.http.request("DELETE", "/api/v1/namespaces/default/configmaps/owner")

    async def collected() -> bool:
        return (await real.http.request("GET", "/api/v1/namespaces/default/configmaps/owned"))[0] == 404

    await until(collected, 60, "the owned ConfigMap collected")


async def _is(real, name: str, phase: str) -> bool:
    return await phase_of(real, name) == phase


async def _gone(real, name: str) -> bool:
    return (await real.http.request("GET", f"{PODS}/{name}"))[0] == 404
