"""What the manifests' roles grant: each dependent's verbs, the `genericjobs/finalizers` rule (without it every
pod create is refused), and user-rbac.yaml's roles (users bound to `edit` / `view` can create / read jobs)."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from kubernetes_asyncio import client

from controller.jobs.execution.controller import JobController
from controller.kinds import registry
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.genericjob.models import GROUP, VERSION
from controller.runtime.controller import ControllerConfig
from localcluster.testing import Kubectl
from tests.clients import controller_client
from tests.e2e.conftest import CRDS, FAST, QUICK, genericjob

from .manifests_support import MANIFESTS, NAME, InProcess, apply_rbac, find, rules_of, service_account_client


def test_the_cluster_role_grants_each_dependent_what_its_kind_declares(rendered):
    """A kind declares its dependents' RBAC (JobKind.dependent_resources): the ClusterRole grants exactly that."""
    rules = rules_of(find(rendered, "ClusterRole", NAME))
    declared = [dependent for kind in registry.KINDS.values() for dependent in kind.dependent_resources]
    assert declared  # the TensorFlowTrainingJob's TensorBoard
    for dependent in declared:
        resource = dependent.resource
        granted = {verb for group, plural, verb in rules if (group, plural) == (resource.group, resource.plural)}
        assert granted == set(dependent.verbs), f"{resource}: granted {sorted(granted)}, declared {dependent.verbs}"


def without_finalizers_rule(rendered: list[dict]) -> list[dict]:
    objects = copy.deepcopy(rendered)
    role = find(objects, "ClusterRole", NAME)
    role["rules"] = [r for r in role["rules"] if "genericjobs/finalizers" not in r["resources"]]
    assert len(role["rules"]) == len(find(rendered, "ClusterRole", NAME)["rules"]) - 1
    return objects


@pytest.mark.runner("scripted")
async def test_without_the_finalizers_rule_every_pod_create_is_refused(cluster, rendered):
    """What the issue saw on OpenShift: children carry blockOwnerDeletion, so the admission plugin asks
    for `update genericjobs/finalizers`; without it every pod create is 403 and no pod exists."""
    cluster.apply_crds(CRDS)
    apply_rbac(cluster, without_finalizers_rule(rendered))
    local = InProcess(cluster)
    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client:
        controller = JobController(GENERICJOB, rest_client, ControllerConfig(workers=2, qps=0, informer_options=FAST,
                                                             shutdown_timeout=5.0))
        controller.start_informers()
        await controller.wait_for_sync(10)
        controller.run_workers()
        try:
            job = local.submit(genericjob("refused", {"worker": 2}, script=QUICK))
            await local.wait("a pod create refused with 403",
                             lambda: cluster.faults.requests.get(("create", "pods", 403), 0) >= 1)
            assert not local.pods("refused")
            assert cluster.faults.requests.get(("create", "pods", 201), 0) == 0
        finally:
            await controller.stop()
        # The server's answer, as the controller got it: the plugin's message.
        core = client.CoreV1Api(api_client)
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "refused-worker-0", "ownerReferences": [
                   {"apiVersion": f"{GROUP}/{VERSION}", "kind": "GenericJob", "name": "refused",
                    "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        with pytest.raises(client.ApiException) as refusal:
            await core.create_namespaced_pod("default", pod)
        assert refusal.value.status == 403
        assert json.loads(refusal.value.body)["message"] == (
            'pods "refused-worker-0" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to '
            "a resource you can't set finalizers on: , <nil>")


async def test_namespace_users_get_genericjobs_through_edit_and_view(tmp_path, rendered):
    """user-rbac.yaml's ClusterRoles are aggregated into the built-in roles users are bound to."""
    from localcluster import LocalCluster

    async with LocalCluster() as cluster:
        cluster.apply_crds(CRDS)
        cluster.api.ensure_namespace("team")
        admin = Kubectl(cluster, tmp_path / "admin")
        bindings = [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                     "metadata": {"name": user, "namespace": "team"},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                     "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
                    for user, role in (("ed", "edit"), ("vi", "view"))]
        await admin.ok("apply", "-f", "-", stdin="\n---\n".join(map(json.dumps, bindings)))

        async def can(user: str, *what: str, namespace: str = "team") -> str:
            return (await admin.run("auth", "can-i", *what, "-n", namespace, "--as", user)).out.strip()

        assert await can("ed", "create", "genericjobs") == "no"  # the issue's complaint, before user-rbac.yaml
        await admin.ok("apply", "-f", str(MANIFESTS / "user-rbac.yaml"))
        assert await can("ed", "create", "genericjobs") == "yes"
        assert await can("ed", "delete", "genericjobs") == "yes"
        assert await can("ed", "update", "genericjobs", "--subresource=status") == "no"  # the controller's to write
        assert await can("ed", "list", "podgroups.scheduler.tensorstack.dev") == "yes"  # view's, via edit
        assert await can("vi", "get", "genericjobs") == "yes"
        assert await can("vi", "get", "genericjobs", "--subresource=status") == "yes"
        assert await can("vi", "create", "genericjobs") == "no"
        assert await can("vi", "get", "genericjobs", namespace="default") == "no"
        assert await can("admin-less", "get", "genericjobs") == "no"
        # admin aggregates edit's rules too.
        admins = json.loads((await admin.ok("get", "clusterrole", "admin", "-o", "json")).out)["rules"]
        assert find(load_user_rbac(), "ClusterRole", "genericjob-edit")["rules"][0] in admins

        # ed creates a job with its own token; vi may read it and not delete it.
        ed = Kubectl(cluster, tmp_path / "ed")
        ed.kubeconfig = cluster.write_kubeconfig(tmp_path / "ed" / "kubeconfig", token=cluster.add_token("e", "ed"),
                                                 namespace="team")
        await ed.ok("apply", "-f", "-", stdin=json.dumps(genericjob("mine", {"worker": 1}, script=QUICK)))
        vi = Kubectl(cluster, tmp_path / "vi")
        vi.kubeconfig = cluster.write_kubeconfig(tmp_path / "vi" / "kubeconfig", token=cluster.add_token("v", "vi"),
                                                 namespace="team")
        assert "mine" in (await vi.ok("get", "genericjobs")).out
        denied = await vi.run("delete", "genericjob", "mine")
        assert denied.code != 0 and ('genericjobs.batch.tensorstack.dev "mine" is forbidden: User "vi" cannot delete '
                                     'resource "genericjobs" in API group "batch.tensorstack.dev" in the namespace '
                                     '"team"') in denied.err


def load_user_rbac() -> list[dict]:
    return [d for d in yaml.safe_load_all((MANIFESTS / "user-rbac.yaml").read_text()) if d]


def test_user_cluster_roles_are_the_contracted_ones():
    roles = {r["metadata"]["name"]: r for r in load_user_rbac()}
    assert set(roles) == {"genericjob-edit", "genericjob-view", "genericjob-metrics-reader"}
    aggregate = "rbac.authorization.k8s.io/aggregate-to-"
    assert {k: v for k, v in roles["genericjob-edit"]["metadata"]["labels"].items() if k.startswith(aggregate)} == {
        aggregate + "admin": "true", aggregate + "edit": "true"}
    assert {k: v for k, v in roles["genericjob-view"]["metadata"]["labels"].items() if k.startswith(aggregate)} == {
        aggregate + "view": "true"}
    assert roles["genericjob-metrics-reader"]["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    # No user role lets anyone write a job's status or finalizers: that is the controller's.
    for role in roles.values():
        for rule in role["rules"]:
            writes = set(rule["verbs"]) - {"get", "list", "watch"}
            assert not (writes and {"genericjobs/status", "genericjobs/finalizers"} & set(rule.get("resources", [])))
