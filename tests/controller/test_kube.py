"""The controller's write client (KubeClient) on the one client (RestClient): the Event recorder's own rate limit,
and what a write sends over the wire (credentials, body, proxy, metrics). The proxy rules themselves are
tests/kubeclient/test_proxy.py's."""

from __future__ import annotations

import orjson
import pytest
from aiohttp import web
from kubernetes_asyncio import client
from prometheus_client import CollectorRegistry

from controller.kinds.genericjob.kind import GENERICJOB
from controller.runtime.client import ApiStatusError, KubeClient
from controller.runtime.metrics import RequestMetrics
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient
from tests.builders import JobBuilder

HOST = "https://10.96.0.1:443"


@pytest.fixture
def no_proxy_env(monkeypatch):
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
                 "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def rest_for(configuration: client.Configuration, **kwargs) -> RestClient:
    return RestClient(settings_from_configuration(configuration), **kwargs)


async def test_a_sibling_client_has_its_own_limit_and_shares_the_counts(no_proxy_env):
    async with rest_for(client.Configuration(host=HOST)) as rest:
        main = KubeClient(rest, qps=5, burst=7, timeout=3)
        sibling = main.with_own_limit()
        assert sibling.limiter is not main.limiter
        assert (sibling.limiter.qps, sibling.limiter.burst) == (5, 7)
        assert sibling.timeout == main.timeout and sibling.requests is main.requests
        assert rest.limiter.qps == 0  # the shared client itself is not limited (the informers' lists and watches)


# --- the write path: the configuration's credentials, an orjson body --------------------------

class Recorder:
    """An HTTP server that answers every request with a canned status and remembers what came."""

    def __init__(self, status: int = 201, answer: dict | None = None) -> None:
        self.status = status
        self.answer = answer if answer is not None else {"kind": "Pod", "metadata": {"name": "p"}}
        self.seen: list[dict] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append({"method": request.method, "url": str(request.url), "headers": dict(request.headers),
                          "body": await request.read()})
        return web.Response(status=self.status, body=orjson.dumps(self.answer), content_type="application/json")


@pytest.fixture
async def recorder(aiohttp_server_factory):
    return await aiohttp_server_factory(Recorder())


@pytest.fixture
async def aiohttp_server_factory():
    runners = []

    async def start(recorder: Recorder) -> tuple[Recorder, str]:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", recorder.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        return recorder, f"http://127.0.0.1:{runner.addresses[0][1]}"

    yield start
    for runner in runners:
        await runner.cleanup()


async def test_a_write_carries_the_credentials_and_the_exact_body(recorder, no_proxy_env):
    server, url = recorder
    configuration = client.Configuration(host=url, api_key={"BearerToken": "Bearer old"})

    def refresh(conf):  # a rotated service account token, as the in-cluster config refreshes it
        conf.api_key["BearerToken"] = "Bearer fresh"
    configuration.refresh_api_key_hook = refresh
    registry = CollectorRegistry()
    async with rest_for(configuration, observer=RequestMetrics(registry), user_agent="genericjob-controller/t") as api:
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
                "spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "X", "value": "ünïcode"}]}]}}
        created = await KubeClient(api, qps=0).create("pods", body)
    assert created == server.answer
    [request] = server.seen
    assert request["method"] == "POST" and request["url"] == f"{url}/api/v1/namespaces/ns/pods"
    assert request["headers"]["Authorization"] == "Bearer fresh"
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["headers"]["User-Agent"] == "genericjob-controller/t"
    assert orjson.loads(request["body"]) == body
    assert registry.get_sample_value("rest_client_requests_total",
                                     {"verb": "create", "resource": "pods", "code": "201"}) == 1


async def test_a_refused_write_raises_the_status_and_is_counted(aiohttp_server_factory, no_proxy_env):
    server, url = await aiohttp_server_factory(Recorder(409, {"kind": "Status", "code": 409, "reason": "Conflict",
                                                              "message": "the object has been modified"}))
    registry = CollectorRegistry()
    async with rest_for(client.Configuration(host=url), observer=RequestMetrics(registry)) as api:
        kube = KubeClient(api, qps=0)
        job = JobBuilder("j", namespace="ns", uid="u").meta(resourceVersion="7").obj()
        with pytest.raises(ApiStatusError) as raised:
            await kube.replace_status(GENERICJOB.api.resource, job, {"phase": "Running"})
    assert (raised.value.code, raised.value.reason) == (409, "Conflict")
    assert server.seen[0]["method"] == "PUT" and server.seen[0]["url"].endswith("/genericjobs/j/status")
    assert kube.requests[("update", "genericjobs/status", 409)] == 1
    assert registry.get_sample_value("rest_client_requests_total",
                                     {"verb": "update", "resource": "genericjobs/status", "code": "409"}) == 1


async def test_a_write_goes_through_the_configured_proxy(aiohttp_server_factory, no_proxy_env):
    proxy, proxy_url = await aiohttp_server_factory(Recorder(200, {}))
    configuration = client.Configuration(host="http://apiserver.invalid:6443")
    configuration.proxy = proxy_url  # kubeconfig's proxy-url
    async with rest_for(configuration) as api:
        assert api.proxy == proxy_url and api.write_pool is None
        await KubeClient(api, qps=0).delete("pods", "ns", "p", uid="u1")
    [request] = proxy.seen  # a plain-HTTP proxy gets the absolute URL of the API server
    assert request["method"] == "DELETE"
    assert request["url"] == "http://apiserver.invalid:6443/api/v1/namespaces/ns/pods/p"
    assert orjson.loads(request["body"]) == {"propagationPolicy": "Background", "preconditions": {"uid": "u1"}}


async def test_deletes_take_every_answer_a_real_server_gives(rest_client, core):
    """An object gone at once (a Success Status for most kinds), one left waiting on a finalizer (the
    object), and a 202 for the deprecated orphanDependents=false: each is a success, counted by code."""
    kube = KubeClient(rest_client, qps=100, burst=100)
    await core.create_namespaced_config_map("default", {"metadata": {"name": "plain"}})
    await core.create_namespaced_config_map("default", {"metadata": {"name": "held", "finalizers": ["x.dev/h"]}})
    await core.create_namespaced_pod("default", {"metadata": {"name": "p", "finalizers": ["x.dev/h"]},
                                                 "spec": {"containers": [{"name": "c", "image": "x"}]}})
    await kube.delete("configmaps", "default", "plain")
    await kube.delete("configmaps", "default", "held")
    await kube.force_delete("pods", "default", "p", (await core.read_namespaced_pod("p", "default")).metadata.uid)
    answer = await kube._call("delete", "configmaps", "DELETE", "/api/v1/namespaces/default/configmaps/held",
                              {"orphanDependents": False})
    assert answer["metadata"]["deletionTimestamp"]
    assert dict(kube.requests) == {("delete", "configmaps", 200): 2, ("delete", "pods", 200): 1,
                                   ("delete", "configmaps", 202): 1}
