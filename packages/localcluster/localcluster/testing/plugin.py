"""The pytest plugin (entry point `localcluster`, loaded wherever this distribution is installed): a LocalCluster
over real HTTP per test, and kubernetes_asyncio clients for it, as a user's would be.

    @pytest.mark.runner("process")          # the pod runner (default "none": pods stay Pending); the test is slow
    async def test_something(cluster, core):
        await core.create_namespaced_pod("default", {...})
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client, config

from localcluster import LocalCluster

from .processes import started_by_fixtures, starts_processes


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "runner(kind): the pod runner of the `cluster` fixture (default none)")
    config.addinivalue_line("markers", "slow: starts processes or runs long (`make test-fast` leaves it out)")


@pytest.hookimpl(tryfirst=True)  # before `-m "not slow"` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not item.get_closest_marker("slow") and started_by_fixtures(item):
            item.add_marker(pytest.mark.slow)


def _runs_pods(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("runner")
    return marker is not None and marker.args[0] == "process"


@pytest.fixture
@starts_processes(when=_runs_pods)
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[LocalCluster]:
    marker = request.node.get_closest_marker("runner")
    runner = marker.args[0] if marker else "none"
    async with LocalCluster(runner=runner, bookmark_interval=1.0) as running:
        yield running


@pytest.fixture
async def api_client(cluster: LocalCluster) -> AsyncIterator[client.ApiClient]:
    """A kubernetes_asyncio client built from the cluster's kubeconfig, as a user's would be: what tests use to
    act on the cluster (its generated API classes), never what the controller uses."""
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
    async with client.ApiClient(configuration) as api:
        yield api


@pytest.fixture
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)
