"""The one client (kubeclient/rest.py) against localcluster: credentials asked on every request, one retry after
a 401 that reloaded them (both pools), new connections when the TLS settings change, the metrics hook, each
client's own rate limit, and the stopgap settings from a kubernetes_asyncio Configuration."""

from __future__ import annotations

import ssl

import pytest
from kubernetes_asyncio import client, config

from apimachinery.errors import ApiStatusError
from kubeclient.from_configuration import settings_from_configuration, ssl_context
from kubeclient.rest import RestClient
from kubeclient.settings import ClientSettings
from localcluster.testing import trusting
from tests.kubeclient.clock import FakeClock

PODS = "/api/v1/namespaces/default/pods"


class Rotating:
    """Credentials whose token the server stops accepting; a 401 makes them load the next one."""

    def __init__(self, tokens: list[str], certificate: bytes, renewable: bool = True) -> None:
        self.tokens, self.certificate, self.renewable = tokens, certificate, renewable
        self.context = trusting(certificate)
        self.asked = self.unauthorized_calls = 0

    async def authorization(self) -> str:
        self.asked += 1
        return f"Bearer {self.tokens[0]}"

    def ssl_context(self):
        return self.context

    async def unauthorized(self) -> bool:
        self.unauthorized_calls += 1
        if not self.renewable or len(self.tokens) == 1:
            return False
        self.tokens.pop(0)
        return True

    async def close(self) -> None:
        pass


class Observed:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def observe(self, verb: str, resource: str, code: str, seconds: float) -> None:
        assert seconds >= 0
        self.seen.append((verb, resource, code))


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}


async def test_a_401_reloads_the_credentials_and_is_retried_once_on_both_pools(cluster):
    credentials = Rotating(["expired", cluster.admin_token], cluster.certificate)
    observed = Observed()
    async with RestClient(ClientSettings(cluster.url, credentials), observer=observed) as rest:
        assert (await rest.call("POST", PODS, pod("a")))["metadata"]["name"] == "a"
        assert credentials.unauthorized_calls == 1
        credentials.tokens = ["expired-again", cluster.admin_token]
        assert b'"a"' in await rest.get(PODS)  # the aiohttp pool
        assert credentials.unauthorized_calls == 2
    assert observed.seen == [("create", "pods", "201"), ("list", "pods", "200")]


async def test_a_401_stands_when_nothing_new_was_loaded(cluster):
    credentials = Rotating(["bad", "also-bad"], cluster.certificate, renewable=False)
    async with RestClient(ClientSettings(cluster.url, credentials)) as rest:
        with pytest.raises(ApiStatusError) as raised:
            await rest.call("POST", PODS, pod("a"))
        assert raised.value.code == 401
        with pytest.raises(ApiStatusError) as raised:
            await rest.get(PODS)
        assert raised.value.code == 401
        credentials.renewable = True  # loads "also-bad": retried once, and that 401 is the answer
        with pytest.raises(ApiStatusError):
            await rest.call("GET", PODS)
    assert credentials.unauthorized_calls == 3


async def test_new_tls_settings_make_new_write_connections(cluster):
    credentials = Rotating([cluster.admin_token], cluster.certificate)
    async with RestClient(ClientSettings(cluster.url, credentials), timeout=5) as rest:
        await rest.call("POST", PODS, pod("a"))
        first = rest.write_pool
        await rest.call("GET", f"{PODS}/a")
        assert rest.write_pool is first and first.open_connections == 1
        # A rotated CA or client certificate: a new object (trusting() would hand back the same one).
        credentials.context = ssl.create_default_context(cadata=cluster.certificate.decode())
        await rest.call("GET", f"{PODS}/a")
        assert rest.write_pool is not first and rest.write_pool.open_connections == 1
        await rest.get(PODS)  # aiohttp's connections are keyed by the context: a new one there too


async def test_each_client_waits_on_its_own_bucket(cluster):
    credentials = Rotating([cluster.admin_token], cluster.certificate)
    clock = FakeClock()  # the time stands still but for the buckets' waits
    async with RestClient(ClientSettings(cluster.url, credentials), qps=5, burst=1, clock=clock) as rest:
        own = rest.with_limit(1000, 1000)
        await rest.call("GET", PODS)  # the one token of the burst
        for _ in range(5):
            await own.call("GET", PODS)  # not held back by the first client's empty bucket
        assert clock.slept == []
        await rest.call("GET", PODS)
        assert clock.slept == [pytest.approx(0.2)]  # waited for its next token (1/5 s)
        clock.advance(0.4)
        await rest.call("GET", PODS)  # a token saved (the burst keeps no more than one): no wait
        await rest.call("GET", PODS)
        assert clock.slept == [pytest.approx(0.2), pytest.approx(0.2)]
        assert own.write_pool is rest.write_pool


async def test_settings_from_a_kubernetes_asyncio_configuration(cluster):
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
    settings = settings_from_configuration(configuration)
    assert settings.server == cluster.url
    assert await settings.credentials.authorization() == f"Bearer {cluster.admin_token}"
    assert settings.credentials.ssl_context() is settings.credentials.ssl_context()
    async with RestClient(settings, user_agent="tests/1") as rest:
        made = await rest.call("POST", PODS, pod("b"))
        assert made["metadata"]["managedFields"][0]["manager"] == "tests"
        assert not await settings.credentials.unauthorized()  # nothing new to load: the 401 would stand


async def test_the_tls_settings_are_kubernetes_asyncios(cluster):
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
    for verify in (True, False):
        configuration.verify_ssl = verify
        async with client.ApiClient(configuration) as api:
            theirs = api.rest_client.pool_manager.connector._ssl  # what its aiohttp connector was given
            ours = ssl_context(configuration)
            assert (ours.verify_mode, ours.check_hostname, ours.verify_flags) == \
                (theirs.verify_mode, theirs.check_hostname, theirs.verify_flags)
            assert ours.cert_store_stats() == theirs.cert_store_stats()
