"""Fixtures and hooks of the controller's tests. The cluster and a user's clients for it (`cluster`, `api_client`,
`core`, `custom`, the `runner` marker) are localcluster's pytest plugin's (localcluster.testing.plugin); here, the
controller's own client for it, which tests are slow, what a fast test may start, and the run's order."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client, config
from prometheus_client import CollectorRegistry

from controller.runtime.metrics import RequestMetrics
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient

from . import slow

pytest_plugins = ["tests.real.fixtures"]  # the envtest tier: its session control plane, the `real` marker


# What `make test-fast` leaves out (the `slow` marker), what a test not marked slow may start, and the order of the
# run: tests/slow.py.
@pytest.hookimpl(tryfirst=True)  # before `-m "not slow"` deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if slow.is_slow(item):
            item.add_marker(pytest.mark.slow)


class _RunOrder:
    """Long tests first (slow.run_order), once the other hooks have deselected and reordered."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        worker = getattr(config, "workerinput", {})
        items[:] = slow.run_order(items, worker.get("workercount", 0), worker.get("dist", "no"),
                                  worker.get("maxschedchunk"))


def pytest_configure(config):
    config.pluginmanager.register(_RunOrder(), "run-order")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist's controller: tell the workers, which collect and order the tests, how they will be handed out."""
    node.workerinput["dist"] = node.config.getvalue("dist")
    node.workerinput["maxschedchunk"] = node.config.getvalue("maxschedchunk")


@pytest.fixture
async def rest_client(cluster):
    """The controller's client (kubeclient.rest.RestClient) for the same kubeconfig, its requests counted."""
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
    async with RestClient(settings_from_configuration(configuration), observer=RequestMetrics(CollectorRegistry())
                          ) as rest:
        yield rest
