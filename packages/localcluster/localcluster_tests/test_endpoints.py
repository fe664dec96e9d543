"""Endpoints and EndpointSlices: what kube-controller-manager's endpoints and EndpointSlice controllers keep
for a Service with a selector (localcluster/controllers/endpoints.py), read through the REST API and kubectl.

The pods run nowhere (runner `none`): each test writes their addresses and readiness through `/status`, as
a kubelet would, and waits for the controllers' objects to follow.
"""

from __future__ import annotations

import pytest
import yaml

from localcluster import LocalCluster
from localcluster.testing import until

from .rest import MERGE, Rest

pytestmark = pytest.mark.asyncio
SLICE_MANAGER = {"kubernetes.io/service-name", "endpointslice.kubernetes.io/managed-by"}
DEPRECATED = '299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"'


@pytest.fixture
async def cluster():
    """With the endpoint controllers, which run by default only beside the process runner (cluster.py says why)."""
    async with LocalCluster(bookmark_interval=1.0, endpoint_controllers=True) as running:
        yield running


def service(name: str, headless: bool = True, publish: bool = False, selector: dict | None = None) -> dict:
    spec: dict = {"ports": [{"name": "http", "port": 80, "targetPort": "web"}, {"name": "metrics", "port": 9090}]}
    if selector is not False:
        spec["selector"] = selector or {"app": name}
    if headless:
        spec["clusterIP"] = "None"
    if publish:
        spec["publishNotReadyAddresses"] = True
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": {"team": "a"}}, "spec": spec}


def pod(name: str, app: str, finalizer: bool = False) -> dict:
    meta: dict = {"name": name, "labels": {"app": app}}
    if finalizer:
        meta["finalizers"] = ["example.com/hold"]  # keeps a deleted pod, terminating, until the test lets go
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": "node-1", "containers": [
                {"name": "main", "image": "busybox", "ports": [{"name": "web", "containerPort": 8080}]}]}}


class Objects:
    """The test namespace's Services, pods, Endpoints and EndpointSlices over REST."""

    def __init__(self, rest: Rest, namespace: str) -> None:
        self.rest, self.ns = rest, namespace
        self.core = f"/api/v1/namespaces/{namespace}"
        self.slices = f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"

    async def create(self, plural: str, body: dict) -> dict:
        return await self.rest.ok("POST", f"{self.core}/{plural}", body)

    async def run(self, name: str, ip: str, ready: bool, phase: str = "Running") -> None:
        """Write the pod's status as its kubelet would: its address, phase and Ready condition."""
        status = {"phase": phase, "podIP": ip, "podIPs": [{"ip": ip}],
                  "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
        await self.rest.ok("PATCH", f"{self.core}/pods/{name}/status", {"status": status}, MERGE)

    async def endpoints(self, name: str) -> dict | None:
        status, body = await self.rest.call("GET", f"{self.core}/endpoints/{name}")
        return body if status == 200 else None

    async def slices_of(self, service_name: str) -> list[dict]:
        listed = await self.rest.ok("GET", self.slices, labelSelector=f"kubernetes.io/service-name={service_name}")
        return listed["items"]

    async def wait_endpoints(self, name: str, predicate, what: str) -> dict:
        found: dict = {}

        async def holds() -> bool:
            found["ep"] = await self.endpoints(name)
            return found["ep"] is not None and predicate(found["ep"])
        await until(holds, what=what)
        return found["ep"]

    async def wait_slice(self, name: str, predicate, what: str) -> dict:
        found: dict = {}

        async def holds() -> bool:
            found["slices"] = await self.slices_of(name)
            return len(found["slices"]) == 1 and predicate(found["slices"][0])
        await until(holds, what=what)
        return found["slices"][0]


def ips(ep: dict, field: str = "addresses") -> list[str]:
    return [a["ip"] for subset in ep.get("subsets") or () for a in subset.get(field) or ()]


def slice_ips(endpoint_slice: dict) -> list[str]:
    return [a for e in endpoint_slice.get("endpoints") or () for a in e["addresses"]]


@pytest.fixture
def objects(rest, namespace) -> Objects:
    return Objects(rest, namespace)


async def test_headless_service_gets_endpoints_and_a_slice_of_its_pods(objects, cluster, namespace):
    svc = await objects.create("services", service("db"))
    for name in ("db-0", "db-1"):
        await objects.create("pods", pod(name, "db"))
    await objects.create("pods", pod("other", "cache"))
    await objects.run("db-0", "127.0.0.2", ready=True)
    await objects.run("db-1", "127.0.0.3", ready=False)
    await objects.run("other", "127.0.0.4", ready=True)

    ep = await objects.wait_endpoints("db", lambda e: ips(e, "notReadyAddresses") == ["127.0.0.3"],
                                      "db-1 among the not-ready addresses")
    [subset] = ep["subsets"]
    pod0 = cluster.store.get(("", "pods"), (namespace, "db-0"))
    assert subset["addresses"] == [{"ip": "127.0.0.2", "nodeName": "node-1", "targetRef": {
        "kind": "Pod", "namespace": namespace, "name": "db-0", "uid": pod0["metadata"]["uid"]}}]
    # targetPort "web" is the container's port 8080; metrics' targetPort defaults to its port.
    assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"},
                               {"name": "metrics", "port": 9090, "protocol": "TCP"}]
    assert ep["metadata"]["labels"] == {"team": "a", "endpoints.kubernetes.io/managed-by": "endpoint-controller",
                                        "service.kubernetes.io/headless": ""}
    assert "ownerReferences" not in ep["metadata"]  # the controller deletes it itself with the Service

    endpoint_slice = await objects.wait_slice("db", lambda s: len(s["endpoints"] or ()) == 2, "a slice of both")
    meta = endpoint_slice["metadata"]
    assert meta["generateName"] == "db-" and meta["name"].startswith("db-")
    assert meta["labels"] == {"team": "a", "service.kubernetes.io/headless": "", "kubernetes.io/service-name": "db",
                              "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
    assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Service", "name": "db",
                                        "uid": svc["metadata"]["uid"], "controller": True,
                                        "blockOwnerDeletion": True}]
    assert endpoint_slice["addressType"] == "IPv4"
    assert endpoint_slice["ports"] == [{"name": "http", "protocol": "TCP", "port": 8080},
                                       {"name": "metrics", "protocol": "TCP", "port": 9090}]
    by_pod = {e["targetRef"]["name"]: e for e in endpoint_slice["endpoints"]}
    assert by_pod["db-0"] == {"addresses": ["127.0.0.2"],
                              "conditions": {"ready": True, "serving": True, "terminating": False},
                              "targetRef": {"kind": "Pod", "namespace": namespace, "name": "db-0",
                                            "uid": pod0["metadata"]["uid"]},
                              "nodeName": "node-1"}
    assert by_pod["db-1"]["conditions"] == {"ready": False, "serving": False, "terminating": False}

    # Readiness moves the address between the lists.
    await objects.run("db-1", "127.0.0.3", ready=True)
    ep = await objects.wait_endpoints("db", lambda e: ips(e) == ["127.0.0.2", "127.0.0.3"], "db-1 ready")
    assert ips(ep, "notReadyAddresses") == []


async def test_reading_v1_endpoints_warns_of_its_deprecation(objects, rest, namespace):
    await objects.create("services", service("web", headless=False))
    await objects.wait_endpoints("web", lambda e: True, "the Endpoints of web")
    for path in (f"{objects.core}/endpoints/web", f"{objects.core}/endpoints", "/api/v1/endpoints"):
        async with rest.session.get(rest.url + path) as response:
            assert response.status == 200
            assert response.headers.getall("Warning") == [DEPRECATED], path
    async with rest.session.get(rest.url + objects.slices) as response:
        assert "Warning" not in response.headers


async def test_publish_not_ready_addresses_publishes_every_pod_as_ready(objects):
    await objects.create("services", service("peers", publish=True))
    await objects.create("pods", pod("peers-0", "peers"))
    await objects.run("peers-0", "127.0.0.5", ready=False)
    ep = await objects.wait_endpoints("peers", lambda e: ips(e) == ["127.0.0.5"], "the unready pod published")
    assert ips(ep, "notReadyAddresses") == []
    endpoint_slice = await objects.wait_slice("peers", lambda s: slice_ips(s) == ["127.0.0.5"], "its slice")
    assert endpoint_slice["endpoints"][0]["conditions"] == {"ready": True, "serving": False, "terminating": False}


async def test_terminating_and_finished_pods(objects, rest):
    await objects.create("services", service("api", headless=False))
    for name, ip in (("api-0", "127.0.0.6"), ("api-1", "127.0.0.7")):
        await objects.create("pods", pod(name, "api", finalizer=True))
        await objects.run(name, ip, ready=True)
    await objects.wait_endpoints("api", lambda e: ips(e) == ["127.0.0.6", "127.0.0.7"], "both pods")

    # Deleted (its finalizer keeps it, terminating): out of the Endpoints, kept in the slice as not ready but serving.
    await rest.ok("DELETE", f"{objects.core}/pods/api-0")
    await objects.wait_endpoints("api", lambda e: ips(e) == ["127.0.0.7"], "api-0 gone from the Endpoints")
    endpoint_slice = await objects.wait_slice(
        "api", lambda s: any(e["conditions"]["terminating"] for e in s["endpoints"]), "api-0 terminating")
    by_pod = {e["targetRef"]["name"]: e["conditions"] for e in endpoint_slice["endpoints"]}
    assert by_pod == {"api-0": {"ready": False, "serving": True, "terminating": True},
                      "api-1": {"ready": True, "serving": True, "terminating": False}}

    # Finished: out of both.
    await objects.run("api-1", "127.0.0.7", ready=False, phase="Succeeded")
    ep = await objects.wait_endpoints("api", lambda e: not e.get("subsets"), "no addresses left")
    assert "subsets" not in ep
    await objects.wait_slice("api", lambda s: slice_ips(s) == ["127.0.0.6"], "only the terminating pod in the slice")
    for name in ("api-0", "api-1"):
        await rest.ok("PATCH", f"{objects.core}/pods/{name}", {"metadata": {"finalizers": None}}, MERGE)


async def test_a_deleted_pod_leaves_and_an_empty_service_keeps_a_placeholder_slice(objects, rest):
    await objects.create("services", service("solo"))
    await objects.create("pods", pod("solo-0", "solo"))
    await objects.run("solo-0", "127.0.0.8", ready=True)
    await objects.wait_endpoints("solo", lambda e: ips(e) == ["127.0.0.8"], "solo-0's address")
    await rest.ok("DELETE", f"{objects.core}/pods/solo-0", {"gracePeriodSeconds": 0})
    await objects.wait_endpoints("solo", lambda e: not e.get("subsets"), "no addresses")
    endpoint_slice = await objects.wait_slice("solo", lambda s: not s["endpoints"], "an empty slice")
    assert endpoint_slice["endpoints"] is None and endpoint_slice["ports"] is None


async def test_a_deleted_service_takes_its_endpoints_and_slices_along(objects, rest, cluster, namespace):
    await objects.create("services", service("gone"))
    await objects.create("pods", pod("gone-0", "gone"))
    await objects.run("gone-0", "127.0.0.9", ready=True)
    await objects.wait_endpoints("gone", lambda e: ips(e) == ["127.0.0.9"], "its Endpoints")
    await objects.wait_slice("gone", lambda s: slice_ips(s) == ["127.0.0.9"], "its slice")
    await rest.ok("DELETE", f"{objects.core}/services/gone")

    async def both_gone() -> bool:
        return await objects.endpoints("gone") is None and not await objects.slices_of("gone")
    await until(both_gone, what="the Endpoints and the slice deleted")


async def test_a_service_without_selector_gets_no_endpoints(objects, rest, cluster, namespace):
    await objects.create("services", service("manual", headless=False, selector=False))
    await objects.create("pods", pod("manual-0", "manual"))
    await objects.run("manual-0", "127.0.0.10", ready=True)
    # A Service with a selector made afterwards gets its Endpoints: by then the first one's sync has run.
    await objects.create("services", service("marker", headless=False, selector={"app": "manual"}))
    await objects.wait_endpoints("marker", lambda e: ips(e) == ["127.0.0.10"], "the later Service's Endpoints")
    assert await objects.endpoints("manual") is None
    assert await objects.slices_of("manual") == []


async def test_a_pod_change_that_moves_no_address_writes_nothing(objects, rest):
    await objects.create("services", service("quiet"))
    await objects.create("pods", pod("quiet-0", "quiet"))
    await objects.run("quiet-0", "127.0.0.11", ready=True)
    before = await objects.wait_endpoints("quiet", lambda e: ips(e) == ["127.0.0.11"], "its address")
    [slice_before] = await objects.slices_of("quiet")
    await rest.ok("PATCH", f"{objects.core}/pods/quiet-0", {"metadata": {"annotations": {"note": "x"}}}, MERGE)
    await rest.ok("PATCH", f"{objects.core}/pods/quiet-0/status", {"status": {"message": "still fine"}}, MERGE)
    # Syncs run in order: once a Service made afterwards has its Endpoints, any sync of quiet has run.
    await objects.create("services", service("marker", selector={"app": "quiet"}))
    await objects.wait_endpoints("marker", lambda e: ips(e) == ["127.0.0.11"], "the later Service's Endpoints")
    assert (await objects.endpoints("quiet"))["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    [slice_after] = await objects.slices_of("quiet")
    assert slice_after["metadata"]["resourceVersion"] == slice_before["metadata"]["resourceVersion"]


async def test_an_endpoints_deleted_by_hand_comes_back(objects, rest):
    await objects.create("services", service("back"))
    await objects.wait_endpoints("back", lambda e: True, "its Endpoints")
    await rest.ok("DELETE", f"{objects.core}/endpoints/back")
    await objects.wait_endpoints("back", lambda e: True, "its Endpoints again")


async def test_kubectl_get_and_describe_show_them(objects, kubectl, namespace):
    await objects.create("services", service("web", headless=False))
    for name, ip in (("web-0", "127.0.0.12"), ("web-1", "127.0.0.13")):
        await objects.create("pods", pod(name, "web"))
        await objects.run(name, ip, ready=name == "web-0")
    await objects.wait_slice("web", lambda s: slice_ips(s) == ["127.0.0.12", "127.0.0.13"], "both in the slice")

    got = await kubectl.ok("get", "endpoints")
    assert "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice" in got.err
    assert got.rows()[0] == ["NAME", "ENDPOINTS", "AGE"]
    assert got.table()["web"]["ENDPOINTS"] == "127.0.0.12:8080,127.0.0.12:9090"  # the ready address only

    slices = await kubectl.ok("get", "endpointslices")
    assert slices.rows()[0] == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    [row] = slices.table().values()
    assert row["NAME"].startswith("web-")
    assert (row["ADDRESSTYPE"], row["PORTS"], row["ENDPOINTS"]) == ("IPv4", "8080,9090", "127.0.0.12,127.0.0.13")

    described = (await kubectl.ok("describe", "svc", "web")).out
    lines = [line.split(":", 1) for line in described.splitlines() if ":" in line]
    endpoints = [value.strip() for key, value in lines if key.strip() == "Endpoints"]
    assert endpoints == ["127.0.0.12:8080", "127.0.0.12:9090"], described

    as_yaml = yaml.safe_load((await kubectl.ok("get", "ep", "web", "-o", "yaml")).out)
    assert [a["ip"] for a in as_yaml["subsets"][0]["notReadyAddresses"]] == ["127.0.0.13"]

    await kubectl.ok("delete", "svc", "web")

    async def listed_none() -> bool:
        return (await kubectl.ok("get", "endpoints,endpointslices", "-o", "name")).out.strip() == ""
    await until(listed_none, what="kubectl listing neither after the Service's deletion")


async def test_relabelled_pods_and_reselecting_services_move_between_endpoints(objects):
    """The controller finds Services by their pods' labels and pods by a Service's selector through indexes; a
    label or selector edit must move the pod all the same (the indexes follow every edit)."""
    await objects.create("services", service("a"))
    await objects.create("services", service("b", selector={"app": "b", "tier": "x"}))
    await objects.create("pods", pod("p", "a"))
    await objects.run("p", "127.0.0.9", ready=True)
    await objects.wait_endpoints("a", lambda e: ips(e) == ["127.0.0.9"], "p behind a")
    await objects.rest.ok("PATCH", f"{objects.core}/pods/p", {"metadata": {"labels": {"app": "b", "tier": "x"}}},
                          MERGE)
    await objects.wait_endpoints("a", lambda e: ips(e) == [], "p gone from a")
    await objects.wait_endpoints("b", lambda e: ips(e) == ["127.0.0.9"], "p behind b")
    await objects.rest.ok("PATCH", f"{objects.core}/services/a", {"spec": {"selector": {"app": None, "tier": "x"}}},
                          MERGE)
    await objects.wait_endpoints("a", lambda e: ips(e) == ["127.0.0.9"], "p behind a again, by its new selector")


@pytest.mark.slow  # a cluster with the process runner
async def test_without_the_process_runner_the_controllers_run_only_when_asked():
    async with LocalCluster() as plain, LocalCluster(runner="process") as local:
        assert plain.endpoints is None and local.endpoints is not None
