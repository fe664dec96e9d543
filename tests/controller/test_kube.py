"""The controller's API client: proxy settings read once, and the Event recorder's own rate limit."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from prometheus_client import CollectorRegistry

from controller.kube import InstrumentedApiClient, KubeClient, resolve_proxy_once
from controller.metrics import RequestMetrics

HOST = "https://10.96.0.1:443"


@pytest.fixture
def no_proxy_env(monkeypatch):
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
                 "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


async def test_the_environment_is_read_once_not_before_every_request(no_proxy_env):
    no_proxy_env.setenv("HTTPS_PROXY", "http://user:secret@proxy.corp:3128")
    async with InstrumentedApiClient(client.Configuration(host=HOST),
                                     metrics=RequestMetrics(CollectorRegistry())) as api:
        assert api.rest_client.proxy == "http://proxy.corp:3128"
        assert api.rest_client.proxy_headers["Proxy-Authorization"].startswith("Basic ")
        assert api.rest_client.pool_manager.trust_env is False  # no per-request thread hops


async def test_no_proxy_keeps_the_api_server_direct(no_proxy_env):
    no_proxy_env.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    no_proxy_env.setenv("NO_PROXY", "10.96.0.1")
    async with client.ApiClient(client.Configuration(host=HOST)) as api:
        resolve_proxy_once(api)
        assert api.rest_client.proxy is None and api.rest_client.pool_manager.trust_env is False


async def test_a_configured_proxy_wins_over_the_environment(no_proxy_env):
    no_proxy_env.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    configuration = client.Configuration(host=HOST)
    configuration.proxy = "http://kubeconfig-proxy:8080"
    async with client.ApiClient(configuration) as api:
        resolve_proxy_once(api)
        assert api.rest_client.proxy == "http://kubeconfig-proxy:8080"


async def test_a_sibling_client_has_its_own_limit_and_shares_the_counts(no_proxy_env):
    async with client.ApiClient(client.Configuration(host=HOST)) as api:
        main = KubeClient(api, qps=5, burst=7, timeout=3)
        sibling = main.with_own_limit()
        assert sibling.limiter is not main.limiter
        assert (sibling.limiter.qps, sibling.limiter.burst) == (5, 7)
        assert sibling.timeout == main.timeout and sibling.requests is main.requests
