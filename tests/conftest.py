"""Fixtures shared by every test: a localcluster over real HTTP and clients for it."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client, config
from prometheus_client import CollectorRegistry

from controller.runtime.metrics import RequestMetrics
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient
from localcluster import LocalCluster

from . import slow


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
    config.addinivalue_line("markers", "runner(kind): the pod runner of the `cluster` fixture (default none)")
    config.pluginmanager.register(_RunOrder(), "run-order")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist's controller: tell the workers, which collect and order the tests, how they will be handed out."""
    node.workerinput["dist"] = node.config.getvalue("dist")
    node.workerinput["maxschedchunk"] = node.config.getvalue("maxschedchunk")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if item.get_closest_marker("slow"):
        return (yield)
    with slow.ProcessGuard(item).watching():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    slow.fail_refused(item, report)
    return report


def _runs_pods(item) -> bool:
    marker = item.get_closest_marker("runner")
    return marker is not None and marker.args[0] == "process"


@pytest.fixture
@slow.starts_processes(when=_runs_pods)
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
