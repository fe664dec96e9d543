"""The fixtures localcluster's own tests share (the cluster and a user's clients are the plugin's,
localcluster.testing.plugin)."""

from __future__ import annotations

import re

import pytest

from localcluster.testing import Kubectl, starts_processes


@pytest.fixture
def namespace(cluster, request) -> str:
    """A namespace of the test's own, named after it, made in `cluster`: tests sharing a cluster keep apart."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.removeprefix("test_").lower())[:50].strip("-")
    cluster.api.ensure_namespace(name)
    return name


@pytest.fixture
@starts_processes
def kubectl(cluster, tmp_path, namespace) -> Kubectl:
    """The installed kubectl, working in the test's namespace (test_kubectl.py has its own, in `default`)."""
    return Kubectl(cluster, tmp_path, namespace=namespace)


@pytest.fixture
async def server():
    """An HTTPS admission webhook of the test's own (webhook_server.py), answering by path."""
    from .webhook_server import WebhookServer

    running = await WebhookServer().start()
    yield running
    await running.stop()


@pytest.fixture
async def rest(cluster):
    """A REST client of the cluster (rest.py), as its admin."""
    from .rest import connect

    async with connect(cluster) as client:
        yield client


@pytest.fixture
async def http(cluster):
    """A session that trusts the cluster's certificate and sends no token of its own."""
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=cluster.credentials.ssl_context)) as session:
        yield session


@pytest.fixture
def network(cluster):
    """The process runner's pod network, which must give pods their own addresses and names (`make test` installs
    what it needs: a machine without it fails, not skips)."""
    net = cluster.runner.network
    assert net.own_addresses and net.names_resolve, net.summary()
    return net
