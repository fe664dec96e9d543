"""The install's RBAC on either server's authorizer: the manifests' ServiceAccount, Roles and bindings applied over
the API, a token for the ServiceAccount from the server's TokenRequest, and the controller run with it under
leader election through a job that makes pods, Services, a PodGroup and Events. No request may be refused: on the
real API server, a verb the manifests lack is the real RBAC authorizer's 403, which fails the test (the second
test shows it, with one verb taken out). The exact set of rules, none granted in excess, is
tests/program/test_rbac_exactness.py's."""

from __future__ import annotations

import asyncio
import contextlib
import copy

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio import config as kube_config
from prometheus_client import CollectorRegistry

from apimachinery.errors import ApiStatusError
from controller.jobs.execution.config import JobConfig
from controller.runtime.leader import LeaderElectionConfig
from controller.runtime.metrics import RequestMetrics
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient
from tests.program.manifests_support import NAME, NAMESPACE, ROLES, kustomize

from .conftest import QUICK, genericjob
from .test_leader_election import Candidate

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)
APPLIED = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
PATHS = {"ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
         "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
         "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
         "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
         "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"}


async def install_rbac(admin: RestClient, objects: list[dict]) -> None:
    """The install's namespace, ServiceAccount and RBAC objects, created over the API by the admin."""
    with contextlib.suppress(ApiStatusError):  # already there
        await admin.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": NAMESPACE}})
    for obj in objects:
        if obj["kind"] in APPLIED:
            path = PATHS[obj["kind"]].format(ns=obj["metadata"].get("namespace", NAMESPACE))
            await admin.call("POST", path, copy.deepcopy(obj))


async def service_account_token(admin: RestClient) -> str:
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    made = await admin.call("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{NAME}/token", request)
    return made["status"]["token"]


@contextlib.asynccontextmanager
async def client_with(cluster, token: str):
    """The controller's client as the ServiceAccount, and the registry counting its requests by code."""
    configuration = client.Configuration()
    await kube_config.load_kube_config_from_dict(cluster.kubeconfig(token=token),
                                                 client_configuration=configuration)
    registry = CollectorRegistry()
    async with RestClient(settings_from_configuration(configuration), observer=RequestMetrics(registry)) as rest:
        yield rest, registry


def refused(registry: CollectorRegistry) -> dict[tuple[str, str], float]:
    return {(s.labels["verb"], s.labels["resource"]): s.value for metric in registry.collect() for s in metric.samples
            if s.name == "rest_client_requests_total" and s.labels["code"] in ("401", "403") and s.value}


async def run_a_job(rest: RestClient, config: JobConfig, jobs) -> None:
    """The controller as the ServiceAccount, leading by the install's Lease, through a job that succeeds with
    Services, a PodGroup and Events."""
    candidate = Candidate(rest, config, "rbac-e2e", LeaderElectionConfig(NAME, NAMESPACE, "rbac-e2e"))
    await candidate.start()
    try:
        await asyncio.wait_for(candidate.leading.wait(), 15)
        await jobs.submit(genericjob("rbac", {"master": 1, "worker": 1}, script=QUICK,
                                     service={"ports": [{"name": "http", "port": 2222}]},
                                     scheduler={"t9kScheduler": {"queue": "default"}}))
        await jobs.wait_phase("rbac", "Succeeded")
    finally:
        await candidate.crash()


async def test_the_controller_as_the_installs_service_account_is_refused_nothing(cluster, rest_client, config, jobs):
    await install_rbac(rest_client, kustomize())
    async with client_with(cluster, await service_account_token(rest_client)) as (rest, registry):
        await run_a_job(rest, config, jobs)
    assert not refused(registry), f"requests refused under the manifests' RBAC: {refused(registry)}"


async def test_a_verb_the_manifests_lack_is_refused_and_seen(cluster, rest_client, config, jobs):
    objects = kustomize()
    role = next(o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == ROLES["ClusterRole"])
    for rule in role["rules"]:
        if "events" in rule["resources"]:
            rule["verbs"] = [verb for verb in rule["verbs"] if verb != "create"]
    await install_rbac(rest_client, objects)
    async with client_with(cluster, await service_account_token(rest_client)) as (rest, registry):
        await run_a_job(rest, config, jobs)
    assert refused(registry).get(("create", "events")), refused(registry)
