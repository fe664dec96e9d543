"""Fixtures shared by every test: a localcluster over real HTTP and clients for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes_asyncio import client, config
from prometheus_client import CollectorRegistry

from controller.runtime.metrics import RequestMetrics
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient
from localcluster import LocalCluster

TESTS = Path(__file__).parent
pytest_plugins = ["tests.real.fixtures"]  # the envtest tier: its session control plane, the `real` marker


def pytest_configure(config):
    config.addinivalue_line("markers", "runner(kind): the pod runner of the `cluster` fixture (default none)")


# What `make test-fast` leaves out (the `slow` marker, pyproject.toml), by place, so that a new test there is slow
# without a word: the folders whose tests start the programs as processes or run whole controllers and suites; the
# files that start kubectl (named so), localcluster or pods' processes, or explore long (hypothesis); and those
# that compile every CEL rule of the CRDs (their cost, their round trips).
SLOW_FOLDERS = ("program", "e2e", "chaos", "bench", "mutation", "controller/model")
SLOW_FILES = {
    "localcluster/test_attacks_server_process.py", "localcluster/test_cli.py", "localcluster/test_fuzz_decoding.py",
    "localcluster/test_logs_previous.py", "localcluster/test_pod_exec.py", "localcluster/test_pod_network.py",
    "localcluster/test_portforward.py", "localcluster/test_process_runner.py",
    "localcluster/test_process_runner_logs.py", "localcluster/test_kept_logs.py",
    "localcluster/test_pod_network_claims.py",
    "localcluster/test_crd_round_trip.py", "localcluster/test_cel_cost.py", "localcluster/test_builtin_schemas.py",
    "controller/test_crd_cost.py", "controller/test_crd.py",
}


def is_slow(relative: str) -> bool:
    """`relative`: a test file's path under tests/."""
    return (relative in SLOW_FILES or relative.startswith(tuple(f"{folder}/" for folder in SLOW_FOLDERS))
            or "kubectl" in relative.rpartition("/")[2])


def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_slow(item.path.relative_to(TESTS).as_posix()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
async def cluster(request):
    marker = request.node.get_closest_marker("runner")
    runner = marker.args[0] if marker else "none"
    async with LocalCluster(runner=runner, bookmark_interval=1.0) as running:
        yield running


@pytest.fixture
async def api_client(cluster):
    """A kubernetes_asyncio client built from the cluster's kubeconfig, as a user's would be: what tests use to
    act on the cluster (its generated API classes), never what the controller uses."""
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
    async with client.ApiClient(configuration) as api:
        yield api


@pytest.fixture
async def rest_client(cluster):
    """The controller's client (kubeclient.rest.RestClient) for the same kubeconfig, its requests counted."""
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
    async with RestClient(settings_from_configuration(configuration), observer=RequestMetrics(CollectorRegistry())
                          ) as rest:
        yield rest


@pytest.fixture
def core(api_client):
    return client.CoreV1Api(api_client)


@pytest.fixture
def custom(api_client):
    return client.CustomObjectsApi(api_client)
