"""localcluster's own tests: which are slow, and the fixtures they share (the cluster and a user's clients are
the plugin's, localcluster.testing.plugin)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from localcluster.testing import Kubectl

HERE = Path(__file__).parent

# What `make test-fast` leaves out (the `slow` marker): the files that start kubectl (named so), localcluster or
# pods' processes, or explore long (hypothesis), and those that compile every CEL rule of the CRDs (their cost,
# their round trips).
SLOW_FILES = {
    "test_attacks_server_process.py", "test_cli.py", "test_fuzz_decoding.py", "test_logs_previous.py",
    "test_pod_exec.py", "test_pod_network.py", "test_portforward.py", "test_process_runner.py",
    "test_process_runner_logs.py", "test_kept_logs.py", "test_pod_network_claims.py",
    "test_crd_round_trip.py", "test_cel_cost.py", "test_builtin_schemas.py", "test_gen_k8s_protobuf.py",
}


def is_slow(name: str) -> bool:
    return name in SLOW_FILES or "kubectl" in name


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.parent == HERE and is_slow(item.path.name):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def namespace(cluster, request) -> str:
    """A namespace of the test's own, named after it, made in `cluster`: tests sharing a cluster keep apart."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.removeprefix("test_").lower())[:50].strip("-")
    cluster.api.ensure_namespace(name)
    return name


@pytest.fixture
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
