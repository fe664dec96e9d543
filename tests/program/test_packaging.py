"""The install variants and the minimum Kubernetes version.

- overlays/monitoring (and the documented `components:` line) adds the ServiceMonitor, PrometheusRule and
  dashboard; it needs Prometheus Operator's CRDs, which is why the default install leaves it out;
- overlays/namespaced replaces the ClusterRole by a Role per watched namespace and keeps only the
  cluster-scoped TokenReview/SubjectAccessReview grant that secure metrics need;
- the minimum Kubernetes version stated in the README and Chart.yaml is what the manifests use;
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil

import pytest
import yaml
from kubernetes_asyncio import client, config

from controller.jobs.execution.controller import JobController
from controller.kinds.genericjob.kind import GENERICJOB
from controller.runtime.controller import ControllerConfig
from controller.runtime.leader import LeaderElectionConfig, LeaderElector
from localcluster.testing import Kubectl, kubectl_binary
from tests.clients import controller_client
from tests.e2e.conftest import CRDS, FAST, QUICK, Jobs, genericjob

from .manifests_support import MANIFESTS, NAME, NAMESPACE, ROOT, apply_rbac, find, refused, service_account_client
from .packaging_support import BIN, CHART, OVERLAYS, PROMETHEUS_OPERATOR_CRDS, WATCHED, by_key, render

# Resources of cluster-scoped APIs in the controller's rules: a Role cannot grant them.
CLUSTER_SCOPED = {("authentication.k8s.io", "tokenreviews"), ("authorization.k8s.io", "subjectaccessreviews")}


# --- monitoring: an opt-in component -------------------------------------------------------------



# API groups every Kubernetes 1.28+ server serves.
BUILT_IN_GROUPS = {"", "apps", "policy", "rbac.authorization.k8s.io", "apiextensions.k8s.io", "coordination.k8s.io",
                   "admissionregistration.k8s.io"}


def test_default_install_needs_no_other_projects_api(base):
    """Every kind is built in or defined by the install's own CRDs: nothing can fail for a missing CRD."""
    own = {crd["spec"]["group"] for crd in base if crd["kind"] == "CustomResourceDefinition"}
    foreign = sorted({o["apiVersion"] for o in base if o["apiVersion"].rpartition("/")[0] not in BUILT_IN_GROUPS})
    assert not foreign, f"the default install uses APIs of other projects: {foreign}"
    assert not [o for o in base if o["apiVersion"].rpartition("/")[0] in own], "custom resources in the install"


def test_install_script_installs_helm_next_to_an_older_kubectl(tmp_path):
    """`make test` on a machine set up before helm was added: a kubectl alone is not 'installed'."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("install_kubectl", ROOT / "scripts" / "install_kubectl.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    (tmp_path / "kubectl").symlink_to(kubectl_binary())
    assert not script._installed(tmp_path)
    (tmp_path / "helm").symlink_to(BIN / "helm")
    assert script._installed(tmp_path)


def test_monitoring_overlay_adds_servicemonitor_rule_and_dashboard(base, monitoring):
    added = {k: o for k, o in by_key(monitoring).items() if k not in by_key(base)}
    scraper = f"{NAME}-metrics-scraper"
    assert set(added) == {("ServiceMonitor", NAME, NAMESPACE), ("PrometheusRule", NAME, NAMESPACE),
                          ("ConfigMap", f"{NAME}-dashboard", NAMESPACE), ("ClusterRoleBinding", scraper, None)}
    assert {k: o for k, o in by_key(monitoring).items() if k in by_key(base)} == by_key(base)

    service = find(monitoring, "Service", f"{NAME}-metrics")
    [port] = service["spec"]["ports"]
    monitor = find(monitoring, "ServiceMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    # Secure metrics without cert-manager: Prometheus's own bound pod token (no token Secret), the self-signed
    # certificate not verified, as no CA exists for it (overlays/cert-manager verifies it: test_scraping.py).
    assert monitor["spec"]["endpoints"] == [{
        "port": port["name"], "scheme": "https", "path": "/metrics", "interval": "30s",
        "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
        "tlsConfig": {"insecureSkipVerify": True}}]
    assert port["name"] == "https"
    # Prometheus's account (kube-prometheus's, by default) may only read the metrics.
    binding = added[("ClusterRoleBinding", scraper, None)]
    assert binding["roleRef"]["name"] == "genericjob-metrics-reader"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}]

    dashboard = find(monitoring, "ConfigMap")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["genericjob-controller.json"]) == json.loads(
        (MANIFESTS / "components" / "monitoring" / "dashboard.json").read_text())


def test_documented_components_line_enables_monitoring(tmp_path, monitoring):
    """manifests/kustomization.yaml's commented `components:` lines, uncommented, give the overlay's objects."""
    copy = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, copy)
    text = (copy / "kustomization.yaml").read_text()
    enabled = re.sub(r"^# components:.*\n#   - components/monitoring$", "components:\n  - components/monitoring", text,
                     flags=re.MULTILINE)
    assert enabled != text, "the commented components: lines are gone from manifests/kustomization.yaml"
    (copy / "kustomization.yaml").write_text(enabled)
    assert by_key(render(copy)) == by_key(monitoring)


async def test_monitoring_overlay_needs_prometheus_operator_crds(cluster, tmp_path, monitoring):
    """Why monitoring is opt-in: without the operator's CRDs the overlay cannot apply (the base can,
    test_manifests.py); with them it applies whole."""
    kubectl = Kubectl(cluster, tmp_path)
    refused = await kubectl.run("apply", "-k", str(OVERLAYS / "monitoring"))
    assert refused.code != 0, refused.out

    await kubectl.ok("apply", "-f", "-", stdin=yaml.safe_dump_all(PROMETHEUS_OPERATOR_CRDS))
    applied = await kubectl.ok("apply", "-k", str(OVERLAYS / "monitoring"))
    assert len(applied.out.splitlines()) == len(monitoring), applied.out
    got = await kubectl.ok("get", "-n", NAMESPACE, "servicemonitor,prometheusrule,configmap", "-o", "json")
    names = {(o["kind"], o["metadata"]["name"]) for o in json.loads(got.out)["items"]}
    assert {("ServiceMonitor", NAME), ("PrometheusRule", NAME), ("ConfigMap", f"{NAME}-dashboard")} <= names



# --- the namespaced install ----------------------------------------------------------------------



def triples(rules: list[dict]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def test_namespaced_overlay_grants_the_cluster_roles_rules_per_watched_namespace(base, namespaced):
    account = {"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}
    cluster_rules = triples(find(base, "ClusterRole", NAME)["rules"])
    kinds = {(o["kind"], o["metadata"]["name"]) for o in namespaced}
    assert ("ClusterRole", NAME) not in kinds and ("ClusterRoleBinding", NAME) not in kinds

    [container] = find(namespaced, "Deployment")["spec"]["template"]["spec"]["containers"]
    [flag] = [a for a in container["args"] if a.startswith("--namespace")]
    assert flag == f"--namespace={','.join(WATCHED)}"
    assert container["args"][:len(find(base, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"])] == \
        find(base, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]

    roles = [o for o in namespaced if o["kind"] == "Role" and o["metadata"]["name"] == NAME]
    bindings = [o for o in namespaced if o["kind"] == "RoleBinding" and o["metadata"]["name"] == NAME]
    assert sorted(r["metadata"]["namespace"] for r in roles) == WATCHED
    assert sorted(b["metadata"]["namespace"] for b in bindings) == WATCHED
    for role in roles:
        # Everything the ClusterRole grants on namespaced resources, nothing more.
        assert triples(role["rules"]) == {t for t in cluster_rules if t[:2] not in CLUSTER_SCOPED}
    for binding in bindings:
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME}
        assert binding["subjects"] == [account]

    # Secure metrics: TokenReview and SubjectAccessReview are cluster-scoped whatever is watched.
    auth = find(namespaced, "ClusterRole", f"{NAME}-metrics-auth")
    assert triples(auth["rules"]) == {(g, r, "create") for g, r in CLUSTER_SCOPED}
    auth_binding = find(namespaced, "ClusterRoleBinding", f"{NAME}-metrics-auth")
    assert auth_binding["roleRef"]["name"] == f"{NAME}-metrics-auth"
    assert auth_binding["subjects"] == [account]
    # The admission webhook is called for the watched namespaces' jobs only, each webhook alike.
    webhooks = find(namespaced, "ValidatingWebhookConfiguration")["webhooks"]
    assert [w["namespaceSelector"] for w in webhooks] == [{"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": WATCHED}]}] * len(webhooks)
    assert [{**w, "namespaceSelector": {}} for w in webhooks] == \
        find(base, "ValidatingWebhookConfiguration")["webhooks"]
    # The rest is the default install, unchanged (the webhook certificates' RBAC included: the Secret is in the
    # controller's namespace, the configuration cluster-scoped).
    changed = ("Deployment", "ValidatingWebhookConfiguration")
    rest = {k: o for k, o in by_key(namespaced).items() if k in by_key(base) and k[0] not in changed}
    assert rest == {k: o for k, o in by_key(base).items() if k[0] not in changed and (
        k[1] != NAME or k[0] not in ("ClusterRole", "ClusterRoleBinding"))}


async def test_namespaced_overlay_applies_to_localcluster(cluster, tmp_path, namespaced):
    for namespace in WATCHED:
        cluster.api.ensure_namespace(namespace)
    kubectl = Kubectl(cluster, tmp_path)
    applied = await kubectl.ok("apply", "-k", str(OVERLAYS / "namespaced"))
    assert len(applied.out.splitlines()) == len(namespaced), applied.out
    for namespace in WATCHED:
        role = json.loads((await kubectl.ok("get", "role", NAME, "-n", namespace, "-o", "json")).out)
        assert role["rules"] == find([o for o in namespaced if o["metadata"].get("namespace") == namespace],
                                     "Role", NAME)["rules"]


@pytest.mark.runner("scripted")
async def test_namespaced_install_runs_a_job_with_only_its_roles(cluster, namespaced):
    """The controller, as the manifests' ServiceAccount with only overlays/namespaced's RBAC (RBAC and the
    owner-references admission plugin enforced), runs a job with Services and a PodGroup in each watched
    namespace without one refused request; the account can read nothing cluster-wide."""
    cluster.apply_crds(CRDS)
    for namespace in WATCHED:
        cluster.api.ensure_namespace(namespace)
    apply_rbac(cluster, namespaced)
    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client:
        # Every namespace of the overlay's --namespace list, as the Deployment runs it.
        controller = JobController(GENERICJOB, rest_client, ControllerConfig(
            namespaces=tuple(WATCHED), workers=2, qps=0, informer_options=FAST, shutdown_timeout=5.0))
        controller.start_informers()
        await controller.wait_for_sync(10)
        leading = asyncio.Event()

        async def lead() -> None:
            controller.run_workers()
            leading.set()
            await asyncio.Event().wait()

        election = asyncio.create_task(LeaderElector(rest_client, LeaderElectionConfig(NAME, NAMESPACE), lead,
                                                     lambda: None).run())
        try:
            await asyncio.wait_for(leading.wait(), 10)
            job = genericjob("team-job", {"master": 1, "worker": 1}, script=QUICK,
                             service={"ports": [{"name": "http", "port": 2222}]},
                             scheduler={"t9kScheduler": {"queue": "default"}})
            async with client.ApiClient(await admin_configuration(cluster)) as admin:
                jobs = Jobs(admin)
                for namespace in WATCHED:
                    await jobs.submit(job, namespace=namespace)
                for namespace in WATCHED:
                    await jobs.wait_phase("team-job", "Succeeded", namespace=namespace)
        finally:
            election.cancel()
            await asyncio.gather(election, return_exceptions=True)
            await controller.stop()

        assert not refused(cluster), f"requests refused under the namespaced RBAC: {refused(cluster)}"
        pods = client.CoreV1Api(api_client)
        with pytest.raises(client.ApiException) as cluster_wide:
            await pods.list_pod_for_all_namespaces()
        assert cluster_wide.value.status == 403
    assert {("", "services", "create"), ("", "pods", "create")} <= {
        ("", resource, verb) for verb, resource, code in cluster.faults.requests if code < 300}


async def admin_configuration(cluster) -> client.Configuration:
    """The cluster's admin, for the test's own requests (a user submitting a job)."""
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
    return configuration



# --- the minimum Kubernetes version --------------------------------------------------------------


def walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def required_kubernetes(objects: list[dict]) -> tuple[int, int]:
    """The oldest minor release that accepts every object: a feature -> the release that serves it by default."""
    needs = [(1, 21)]  # policy/v1 PodDisruptionBudget
    for obj in objects:
        if obj["kind"] == "PodDisruptionBudget" and "unhealthyPodEvictionPolicy" in obj["spec"]:
            needs.append((1, 27))  # beta, on by default
        for node in walk(obj):
            for rule in node.get("x-kubernetes-validations") or ():
                needs.append((1, 25))  # CEL validation rules (beta, on by default)
                if "messageExpression" in rule:
                    needs.append((1, 27))
                if "fieldPath" in rule or "reason" in rule:
                    needs.append((1, 28))
    return max(needs)


def test_minimum_kubernetes_version_is_stated_where_users_look(base):
    major, minor = required_kubernetes(base)
    assert (major, minor) == (1, 28), "the manifests' needs changed: update README, Chart.yaml and this test"
    readme = (ROOT / "README.md").read_text()
    assert f"Kubernetes {major}.{minor} or later" in readme
    assert yaml.safe_load((CHART / "Chart.yaml").read_text())["kubeVersion"] == f">={major}.{minor}.0-0"
    assert f"Needs Kubernetes {major}.{minor} or later" in (MANIFESTS / "kustomization.yaml").read_text()
