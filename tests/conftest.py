"""Fixtures shared by the controller's tests. The cluster and a user's clients for it (`cluster`, `api_client`,
`core`, `custom`, the `runner` marker) are localcluster's pytest plugin's (localcluster.testing.plugin); here, the
controller's own client for it, and which tests are slow."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes_asyncio import client, config
from prometheus_client import CollectorRegistry

from controller.runtime.metrics import RequestMetrics
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient

TESTS = Path(__file__).parent


# What `make test-fast` leaves out (the `slow` marker, pyproject.toml), by place, so that a new test there is slow
# without a word: the folders whose tests start the programs as processes or run whole controllers and suites; the
# files that start kubectl (named so), localcluster or pods' processes, or explore long (hypothesis); and those
# that compile every CEL rule of the CRDs (their cost, their round trips).
SLOW_FOLDERS = ("program", "e2e", "chaos", "bench", "mutation", "controller/model")
SLOW_FILES = {
    "controller/test_crd_cost.py", "controller/test_crd.py",
}


def is_slow(relative: str) -> bool:
    """`relative`: a test file's path under tests/."""
    return (relative in SLOW_FILES or relative.startswith(tuple(f"{folder}/" for folder in SLOW_FOLDERS))
            or "kubectl" in relative.rpartition("/")[2])


def pytest_collection_modifyitems(config, items):
    for item in items:  # localcluster's own tests are marked by their conftest
        if item.path.is_relative_to(TESTS) and is_slow(item.path.relative_to(TESTS).as_posix()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
async def rest_client(cluster):
    """The controller's client (kubeclient.rest.RestClient) for the same kubeconfig, its requests counted."""
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
    async with RestClient(settings_from_configuration(configuration), observer=RequestMetrics(CollectorRegistry())
                          ) as rest:
        yield rest
