"""The deployment manifests and the Dockerfile.

- `kubectl kustomize manifests/` (the real kubectl) renders the expected objects, in the controller's
  namespace, with the Deployment's security settings and probes;
- the rendered output applies to localcluster with `kubectl apply` (and `apply -k` again is a no-op), with no
  Prometheus Operator CRDs in the cluster (issue 12, fault 4): monitoring is an opt-in component (test_packaging.py);
- RBAC: the controller runs in-process under leader election through every path that calls the API,
  authenticating as the manifests' ServiceAccount against localcluster with the manifests' RBAC applied,
  RBAC and the OwnerReferencesPermissionEnforcement admission plugin enforced; the (verb, resource) pairs
  localcluster saw must be exactly what the ClusterRole and the Role allow, and none was refused.
  Without the `genericjobs/finalizers` rule every pod create is refused (403) by that plugin;
- the admission webhook (issue 34): its Service reaches every replica's port `webhook`, its
  ValidatingWebhookConfiguration has the interface's webhook names, paths and rules, and the self-managed
  certificates' RBAC grants exactly the Secret and the configuration by name (webhook-rbac.yaml);
- user-rbac.yaml: users bound to the built-in `edit` / `view` roles can create / read jobs;
- the Dockerfile's structure (it is not built here: there is no Docker engine in the test environment).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import re
import shlex
import subprocess
import tomllib
from collections import Counter
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client, config

from controller.jobs.children.podgroup import GROUP as PG_GROUP
from controller.jobs.children.podgroup import PLURAL as PG_PLURAL
from controller.jobs.execution.controller import JobController
from controller.kinds import registry
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.genericjob.models import GROUP, PLURAL, VERSION
from controller.kinds.registry import make_controller
from controller.runtime.controller import ControllerConfig
from controller.runtime.group import ControllerGroup
from controller.runtime.leader import LeaderElectionConfig, LeaderElector
from controller.runtime.preflight import preflight
from localcluster.errors import ApiError
from localcluster.validation.builtins import default_pod_template
from tests.builders import PYTORCH as PYTORCH_KIND
from tests.builders import TENSORFLOW as TENSORFLOW_KIND
from tests.builders import JobBuilder
from tests.clients import controller_client
from tests.e2e.conftest import (
    CRDS,
    FAIL,
    FAST,
    FOREVER,
    LABEL_JOB_NAME,
    MERGE,
    QUICK,
    condition,
    genericjob,
    phase,
    replicas,
    template,
)
from tests.localcluster.kubectl import ENV, TIMEOUT, Kubectl, kubectl_binary

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
NAMESPACE = "genericjob-system"
IMAGE = "ghcr.io/t9k/genericjob-controller:0.1.0"
NAME = "genericjob-controller"
# The controller's own roles (user-rbac.yaml adds user-facing ClusterRoles next to them), whose rules the RBAC test
# compares with the requests the controller makes; the webhook's certificates have a Role and a ClusterRole of
# their own (WEBHOOK_RBAC), by resource name.
ROLES = {"ClusterRole": NAME, "Role": f"{NAME}-leader-election"}
WEBHOOK = f"{NAME}-webhook"  # the webhook's Service, and its certificates' Role and ClusterRole
WEBHOOK_SECRET = f"{NAME}-webhook-cert"  # the self-managed certificates' Secret (--webhook-secret-name)
WEBHOOK_PORT = 9443

# What `kubectl kustomize manifests/` must produce: (kind, name) -> namespaced?
EXPECTED = {
    ("Namespace", NAMESPACE): False,
    ("CustomResourceDefinition", f"{PLURAL}.{GROUP}"): False,
    ("CustomResourceDefinition", f"tensorflowtrainingjobs.{GROUP}"): False,
    ("CustomResourceDefinition", f"pytorchtrainingjobs.{GROUP}"): False,
    ("CustomResourceDefinition", f"{PG_PLURAL}.{PG_GROUP}"): False,
    ("ServiceAccount", NAME): True,
    ("ClusterRole", NAME): False,
    ("ClusterRoleBinding", NAME): False,
    ("Role", f"{NAME}-leader-election"): True,
    ("RoleBinding", f"{NAME}-leader-election"): True,
    ("ClusterRole", "genericjob-metrics-reader"): False,
    ("ClusterRole", "genericjob-edit"): False,
    ("ClusterRole", "genericjob-view"): False,
    ("Deployment", NAME): True,
    ("PodDisruptionBudget", NAME): True,
    ("Service", f"{NAME}-metrics"): True,
    ("Service", WEBHOOK): True,
    ("ValidatingWebhookConfiguration", NAME): False,
    ("Role", WEBHOOK): True,
    ("RoleBinding", WEBHOOK): True,
    ("ClusterRole", WEBHOOK): False,
    ("ClusterRoleBinding", WEBHOOK): False,
}
METRICS_PORT = 8443


def kustomize() -> list[dict]:
    out = subprocess.run([str(kubectl_binary()), "kustomize", str(MANIFESTS)], capture_output=True, text=True,
                         env=ENV, timeout=TIMEOUT)
    assert out.returncode == 0, f"kubectl kustomize manifests/ failed:\n{out.stderr}"
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc is not None]


@pytest.fixture(scope="module")
def rendered() -> list[dict]:
    return kustomize()


def find(objects: list[dict], kind: str, name: str | None = None) -> dict:
    [found] = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    return found


# --- rendering ----------------------------------------------------------------------------------


def test_kustomize_renders_every_object_into_the_namespace(rendered):
    assert Counter((o["kind"], o["metadata"]["name"]) for o in rendered) == Counter(list(EXPECTED))
    for obj in rendered:
        namespaced = EXPECTED[(obj["kind"], obj["metadata"]["name"])]
        assert obj["metadata"].get("namespace") == (NAMESPACE if namespaced else None), obj["metadata"]
    # The CRDs go through untouched: they are exactly what `python -m controller.kinds.genericjob.crd` generated.
    for path in sorted((MANIFESTS / "crds").glob("*.yaml")):
        generated = yaml.safe_load(path.read_text())
        assert find(rendered, "CustomResourceDefinition", generated["metadata"]["name"]) == generated


def test_bindings_grant_the_roles_to_the_deployment_service_account(rendered):
    account = find(rendered, "ServiceAccount")["metadata"]["name"]
    pod = find(rendered, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account
    for binding_kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        for role in (ROLES[role_kind], WEBHOOK):
            binding = find(rendered, binding_kind, role)
            assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                                          "name": find(rendered, role_kind, role)["metadata"]["name"]}
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]
    # The lease Role and the webhook Secret's live where the Deployment runs (the Lease's namespace and the
    # Secret's come from the downward API).
    for role in (ROLES["Role"], WEBHOOK):
        assert find(rendered, "Role", role)["metadata"]["namespace"] == \
            find(rendered, "Deployment")["metadata"]["namespace"]


def test_deployment_runs_two_hardened_replicas_under_leader_election(rendered):
    deployment = find(rendered, "Deployment")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    [container] = pod["containers"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["replicas"] == 2
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    assert container["image"] == IMAGE
    assert container["args"] == ["run", "--leader-elect", "--log-format", "json", f"--metrics-address=:{METRICS_PORT}",
                                 f"--webhook-port={WEBHOOK_PORT}"]
    assert "command" not in container  # the image's ENTRYPOINT runs
    own_namespace = {"valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}
    # The Lease's namespace, and the self-managed webhook certificate's (--webhook-namespace's default).
    assert container["env"] == [{"name": "GENERICJOB_LEASE_NAMESPACE", **own_namespace},
                                {"name": "POD_NAMESPACE", **own_namespace}]
    assert pod.get("automountServiceAccountToken", True) is True  # it needs the API

    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"https": METRICS_PORT, "health": 8081, "webhook": WEBHOOK_PORT}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert ports.get(get["port"], get["port"]) == 8081, f"{probe} is not on the health port"

    resources = container["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"}
    assert set(resources["limits"]) == {"cpu", "memory"}

    uid = pod["securityContext"]["runAsUser"]
    assert isinstance(uid, int) and uid > 0
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] == uid
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert "add" not in security["capabilities"]
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not security.get("privileged")
    # A read-only root needs any writable path to be a volume; only an emptyDir /tmp is mounted.
    assert [(m["name"], m["mountPath"]) for m in container["volumeMounts"]] == [("tmp", "/tmp")]
    assert [v["name"] for v in pod["volumes"] if "emptyDir" in v] == ["tmp"]
    assert not any(key in pod for key in ("hostNetwork", "hostPID", "hostIPC"))

    [term] = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= labels.items()
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in pod["affinity"]["podAntiAffinity"]


def test_metrics_service_reaches_the_https_metrics_port(rendered):
    deployment = find(rendered, "Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    service = find(rendered, "Service", f"{NAME}-metrics")
    assert service["spec"]["selector"].items() <= labels.items()
    [port] = service["spec"]["ports"]
    assert (port["name"], port["port"]) == ("https", METRICS_PORT)
    assert port["targetPort"] in {p["name"] for p in container["ports"] if p["containerPort"] == METRICS_PORT}


def test_disruption_budget_keeps_one_of_the_two_replicas(rendered):
    deployment = find(rendered, "Deployment")
    budget = find(rendered, "PodDisruptionBudget")
    assert budget["apiVersion"] == "policy/v1"
    assert budget["spec"] == {"minAvailable": 1, "selector": deployment["spec"]["selector"],
                              "unhealthyPodEvictionPolicy": "AlwaysAllow"}  # a crash-looping pod never blocks a drain
    assert deployment["spec"]["replicas"] > budget["spec"]["minAvailable"]  # a drain can still evict one


# --- the admission webhook (issue 34) -------------------------------------------------------------


def test_webhook_service_reaches_every_replicas_webhook_port(rendered):
    """Every replica serves the webhook, leader or not: the Service selects the Deployment's pods, not the leader."""
    deployment = find(rendered, "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    service = find(rendered, "Service", WEBHOOK)
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert not service["spec"].get("publishNotReadyAddresses")  # only Ready replicas, serving a certificate
    [port] = service["spec"]["ports"]
    assert (port["port"], port["targetPort"], port["protocol"]) == (443, "webhook", "TCP")
    assert {p["name"]: p["containerPort"] for p in container["ports"]}["webhook"] == WEBHOOK_PORT


def test_webhook_configuration_is_the_interfaces(rendered):
    """One webhook per registered kind, named and routed as the controller serves it (the plan's interface)."""
    configuration = find(rendered, "ValidatingWebhookConfiguration")
    assert configuration["metadata"]["name"] == NAME and "namespace" not in configuration["metadata"]
    assert "caBundle" not in json.dumps(configuration)  # the controller writes it (cert-manager's cainjector, there)
    assert "annotations" not in configuration["metadata"]
    kinds = list(registry.KINDS.values())
    assert [w["name"] for w in configuration["webhooks"]] == [f"{k.api.plural}.{k.api.group}" for k in kinds]
    for webhook, kind in zip(configuration["webhooks"], kinds, strict=True):
        assert webhook["clientConfig"] == {"service": {
            "name": WEBHOOK, "namespace": NAMESPACE, "port": 443,
            "path": f"/validate-{kind.api.group.replace('.', '-')}-{kind.api.version}-{kind.api.kind.lower()}"}}
        # The main resource only: the controller's status writes and every delete go unchecked.
        assert webhook["rules"] == [{"operations": ["CREATE", "UPDATE"], "apiGroups": [kind.api.group],
                                     "apiVersions": [kind.api.version], "resources": [kind.api.plural],
                                     "scope": "Namespaced"}]
        assert {k: v for k, v in webhook.items() if k not in ("name", "clientConfig", "rules")} == {
            "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}, "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "timeoutSeconds": 10, "failurePolicy": "Fail"}


def resource_rules(role: dict) -> set[tuple[str, str, str, str | None]]:
    """(apiGroup, resource, verb, resourceName or None) of a role's rules."""
    return {(g, r, v, n) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"] for n in rule.get("resourceNames") or [None]}


def test_webhook_certificates_rbac_names_the_secret_and_the_configuration(rendered):
    """The self-managed certificates need one Secret in the controller's namespace (made once: `create` cannot
    be limited by name) and the caBundle of one ValidatingWebhookConfiguration: granted by name, nothing more
    (test_install_webhook.py runs the certificates' keeper under these rules: it gets and PUTs, never patches)."""
    assert resource_rules(find(rendered, "Role", WEBHOOK)) == {
        ("", "secrets", "create", None),
        *{("", "secrets", verb, WEBHOOK_SECRET) for verb in ("get", "update")}}
    assert resource_rules(find(rendered, "ClusterRole", WEBHOOK)) == {
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", verb, NAME) for verb in ("get", "update")}
    # The controller's own ClusterRole grants no secret and no webhook configuration at all.
    assert not {r for r in resource_rules(find(rendered, "ClusterRole", NAME)) if r[1] in (
        "secrets", "validatingwebhookconfigurations")}


async def test_webhook_certificates_rbac_allows_only_those_objects(cluster, rendered):
    """The manifests' RBAC in localcluster (RBAC enforced), asked as the ServiceAccount: the Secret and the
    configuration by name, nothing else of their kinds."""
    from kubernetes_asyncio.client import AuthorizationV1Api

    apply_rbac(cluster, rendered)
    async with service_account_client(cluster) as api_client:
        reviews = AuthorizationV1Api(api_client)

        async def can(verb: str, resource: str, name: str = "", namespace: str = NAMESPACE,
                      group: str = "") -> bool:
            review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {
                "resourceAttributes": {"verb": verb, "group": group, "resource": resource, "name": name,
                                       "namespace": namespace}}}
            return (await reviews.create_self_subject_access_review(review)).status.allowed

        assert await can("create", "secrets")
        for verb in ("get", "update"):
            assert await can(verb, "secrets", WEBHOOK_SECRET)
            assert not await can(verb, "secrets", "another-secret")
            assert not await can(verb, "secrets", WEBHOOK_SECRET, namespace="default")
            assert await can(verb, "validatingwebhookconfigurations", NAME, "", "admissionregistration.k8s.io")
            assert not await can(verb, "validatingwebhookconfigurations", "another", "", "admissionregistration.k8s.io")
        for verb in ("list", "watch", "delete", "patch"):
            assert not await can(verb, "secrets")
            assert not await can(verb, "validatingwebhookconfigurations", NAME, "", "admissionregistration.k8s.io")
        assert not await can("create", "secrets", namespace="default")
        assert not await can("create", "validatingwebhookconfigurations", "", "", "admissionregistration.k8s.io")


# --- applying to localcluster -------------------------------------------------------------------


async def test_apply_k_manifests_succeeds_without_prometheus_operator(cluster, tmp_path, rendered):
    """Issue 12, fault 4: on a cluster without the Prometheus Operator (no ServiceMonitor kind) the install
    applies whole; it used to fail on the ServiceMonitor after half the objects were created."""
    assert not [crd for crd in cluster.store.objects(("apiextensions.k8s.io", "customresourcedefinitions"), None)
                if crd["spec"]["group"] == "monitoring.coreos.com"]
    kubectl = Kubectl(cluster, tmp_path)
    applied = await kubectl.ok("apply", "-k", str(MANIFESTS))  # the README's install command
    assert len(applied.out.splitlines()) == len(EXPECTED), applied.out
    assert all(line.endswith(" created") for line in applied.out.splitlines()), applied.out

    namespaced = await kubectl.ok("get", "-n", NAMESPACE, "-o", "json",
                                  "serviceaccount,role,rolebinding,deployment,service,poddisruptionbudget")
    found = {(o["kind"], o["metadata"]["name"]) for o in json.loads(namespaced.out)["items"]}
    # and the namespace's `default` ServiceAccount, which the serviceaccount controller makes in every namespace
    assert found == {key for key, ns in EXPECTED.items() if ns} | {("ServiceAccount", "default")}
    cluster_wide = await kubectl.ok("get", "-o", "json", f"namespace/{NAMESPACE}",
                                    f"validatingwebhookconfiguration/{NAME}",
                                    *(f"clusterrolebinding/{name}" for kind, name in EXPECTED
                                      if kind == "ClusterRoleBinding"),
                                    *(f"clusterrole/{name}" for kind, name in EXPECTED if kind == "ClusterRole"),
                                    f"crd/{PLURAL}.{GROUP}", f"crd/{PG_PLURAL}.{PG_GROUP}",
                                    f"crd/tensorflowtrainingjobs.{GROUP}", f"crd/pytorchtrainingjobs.{GROUP}")
    found = {(o["kind"], o["metadata"]["name"]) for o in json.loads(cluster_wide.out)["items"]}
    assert found == {key for key, ns in EXPECTED.items() if not ns}

    # The stored objects are the manifests (no field pruned or rewritten on the way), plus the defaults a
    # server writes on a pod template (terminationMessagePath and the like).
    stored = json.loads((await kubectl.ok("get", "-n", NAMESPACE, "deployment", NAME, "-o", "json")).out)
    template = copy.deepcopy(find(rendered, "Deployment")["spec"]["template"])
    default_pod_template(template)
    assert stored["spec"]["template"]["spec"]["containers"] == template["spec"]["containers"]
    assert all(c["terminationMessagePath"] == "/dev/termination-log" for c in template["spec"]["containers"])
    stored = json.loads((await kubectl.ok("get", "clusterrole", NAME, "-o", "json")).out)
    assert stored["rules"] == find(rendered, "ClusterRole", NAME)["rules"]
    # The webhooks as written: every field the server would default is spelled out, and none is dropped.
    stored = json.loads((await kubectl.ok("get", "validatingwebhookconfiguration", NAME, "-o", "json")).out)
    assert stored["webhooks"] == find(rendered, "ValidatingWebhookConfiguration")["webhooks"]

    # The README's install command, on top: nothing to change. A PodDisruptionBudget is always
    # "configured": policy/v1's selector has patchStrategy replace, so kubectl's patch is never empty
    # (a real server answers the same way; the patch changes nothing).
    again = await kubectl.ok("apply", "-k", str(MANIFESTS))
    assert len(again.out.splitlines()) == len(EXPECTED), again.out
    assert all(line.endswith(" unchanged") or line == f"poddisruptionbudget.policy/{NAME} configured"
               for line in again.out.splitlines()), again.out


# --- RBAC: the rules against the requests the controller really makes ---------------------------

# The API group of each resource the controller may request (localcluster counts requests by resource
# name only). Events are core/v1: controller/runtime/client.py posts them to /api/v1, never to events.k8s.io.
GROUPS = {
    # Every registered kind, its subresources and its dependents (the TensorBoard).
    **{f"{kind.api.plural}{sub}": kind.api.group for kind in registry.KINDS.values()
       for sub in ("", "/status", "/finalizers")},
    **{dependent.resource.plural: dependent.resource.group for kind in registry.KINDS.values()
       for dependent in kind.dependent_resources},
    "podgroups": PG_GROUP,
    "pods": "",
    "services": "",
    "events": "",
    "leases": "coordination.k8s.io",
    "tokenreviews": "authentication.k8s.io",
    "subjectaccessreviews": "authorization.k8s.io",
}
NAMESPACED_ROLE = {"leases"}  # granted by the Role in the controller's namespace, not the ClusterRole

Rule = tuple[str, str, str]  # (apiGroup, resource, verb)

# Permissions the controller needs but that the scenario below cannot make it request: (group, resource,
# verb) -> why it is needed. Every other rule is exercised: even the live `get pods` of reconciler.py's
# `_cache_lags` (by force-deleting a running pod, which the cache then misses while the job's status still
# records it running), and the force-delete of a pod stuck terminating needs no more than `delete pods`,
# which clean-up and restarts use.
NOT_EXERCISED: dict[Rule, str] = {
    (GROUP, "genericjobs/finalizers", "update"):
        "checked by OwnerReferencesPermissionEnforcement on every child's create, never requested: "
        "test_without_the_finalizers_rule_every_pod_create_is_refused shows the need",
    (GROUP, "tensorflowtrainingjobs/finalizers", "update"):
        "as genericjobs/finalizers: checked on every child's create of a TensorFlowTrainingJob, never requested",
    (GROUP, "pytorchtrainingjobs/finalizers", "update"):
        "as genericjobs/finalizers: checked on every child's create of a PyTorchTrainingJob, never requested",
    ("scheduler.tensorstack.dev", "podgroups", "get"):
        "who holds a PodGroup name a create found taken (not met in this run, where each PodGroup is made once): "
        "tests/e2e/test_live_conflicts.py::test_a_podgroup_taken_by_a_job_of_another_kind_holds_the_pods_back",
    ("authentication.k8s.io", "tokenreviews", "create"):
        "the secure metrics endpoint, scraped under these rules in test_metrics_security.py",
    ("authorization.k8s.io", "subjectaccessreviews", "create"):
        "the secure metrics endpoint, scraped under these rules in test_metrics_security.py",
}


def apply_rbac(cluster, objects: list[dict]) -> None:
    """Create the manifests' RBAC objects inside localcluster (not over HTTP: the requests counted are
    then the controller's alone)."""
    cluster.api.ensure_namespace(NAMESPACE)
    for obj in objects:
        if obj["kind"] in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
            rt = cluster.registry.by_kind(obj["apiVersion"], obj["kind"])
            cluster.api.create(rt, obj["metadata"].get("namespace"), copy.deepcopy(obj))


@contextlib.asynccontextmanager
async def service_account_client(cluster):
    """A kubernetes_asyncio client authenticating with a token of the manifests' ServiceAccount."""
    cluster.api.ensure_namespace(NAMESPACE)
    token = cluster.service_account_token(NAMESPACE, NAME)
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(token=token), client_configuration=configuration)
    async with client.ApiClient(configuration) as api:
        yield api


def refused(cluster) -> dict:
    return {key: n for key, n in cluster.faults.requests.items() if key[2] in (401, 403) and n}


def rules_of(role: dict) -> set[Rule]:
    allowed = set()
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, f"unexpected rule fields (resourceNames?): {rule}"
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], f"wildcard in {role['kind']} {field}: {rule}"
        allowed |= {(g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    return allowed


def describe(rule: Rule) -> str:
    group, resource, verb = rule
    return f"{verb} {resource}.{group}" if group else f"{verb} {resource}"


class InProcess:
    """The test's own reads and writes, made inside localcluster instead of over HTTP: every request
    the server counts is then the controller's (or its leader elector's)."""

    def __init__(self, cluster) -> None:
        self.api = cluster.api
        self.store = cluster.store
        self.jobs = cluster.registry.get(GROUP, VERSION, PLURAL)
        self.pod_type = cluster.registry.get("", "v1", "pods")

    def submit(self, job: dict) -> dict:
        return self.api.create(self.jobs, "default", copy.deepcopy(job))

    def job(self, name: str) -> dict | None:
        try:
            return self.api.get(self.jobs, "default", name)
        except ApiError as err:
            if err.code == 404:
                return None
            raise

    def patch(self, name: str, body: dict) -> None:
        self.api.patch(self.jobs, "default", name, MERGE, body)

    def delete(self, name: str) -> None:
        self.api.delete(self.jobs, "default", name, {"propagationPolicy": "Background"})

    def force_delete_pod(self, name: str) -> None:
        """`kubectl delete pod --force --grace-period=0`: gone at once, whatever its kubelet says."""
        _, gone = self.api.delete(self.pod_type, "default", name, {"gracePeriodSeconds": 0})
        assert gone

    def children(self, group: str, plural: str, job: str) -> list[dict]:
        return [o for o in self.store.objects((group, plural), "default")
                if (o["metadata"].get("labels") or {}).get(LABEL_JOB_NAME) == job
                or any(r.get("name") == job and r.get("kind") == "GenericJob"
                       for r in o["metadata"].get("ownerReferences") or ())]

    def pods(self, job: str) -> list[dict]:
        return self.children("", "pods", job)

    def services(self, job: str) -> list[dict]:
        return self.children("", "services", job)

    def podgroups(self, job: str) -> list[dict]:
        return self.children(PG_GROUP, PG_PLURAL, job)

    def events(self, job: str) -> list[dict]:
        return [e for e in self.store.objects(("", "events"), "default") if e["involvedObject"]["name"] == job]

    async def wait(self, what: str, check, timeout: float = 15.0):
        last = None
        try:
            async with asyncio.timeout(timeout):
                while True:
                    last = check()
                    if last:
                        return last
                    await asyncio.sleep(0.02)
        except TimeoutError:
            pytest.fail(f"{what}: not reached in {timeout}s (last: {last!r})")

    async def wait_phase(self, name: str, wanted: str) -> dict:
        return await self.wait(f"job {name} {wanted}", lambda: (j := self.job(name)) and phase(j) == wanted and j)


def controller_idle(controller: JobController) -> bool:
    """Nothing queued or being reconciled, and every Event recorded has been sent."""
    return len(controller.queue) == 0 and not controller.queue._processing and controller.recorder._idle.is_set()


async def run_every_api_path(cluster, group: ControllerGroup) -> None:
    """Jobs that between them make the controller call every API it has."""
    local = InProcess(cluster)
    controller = next(member for member in group.members if member.kind is GENERICJOB)

    # A TensorFlowTrainingJob that succeeds: its kind's list, watch and status writes; its TensorBoard made,
    # then patched when its tensorboardSpec is edited.
    board = {"image": "tensorflow/tensorflow:2.11.0"}
    pod = template(FOREVER)
    pod["spec"]["containers"][0]["name"] = "tensorflow"
    tfjob = JobBuilder("tf", kind=TENSORFLOW_KIND).replica("worker", 1, template=pod).spec(tensorboardSpec=board).obj()
    local.api.create(cluster.registry.get(GROUP, VERSION, "tensorflowtrainingjobs"), "default", tfjob)
    # A PyTorchTrainingJob: its kind's list, watch and status writes.
    pjob = JobBuilder("pj", kind=PYTORCH_KIND).replica("master", 1, template=template(QUICK)).obj()
    local.api.create(cluster.registry.get(GROUP, VERSION, "pytorchtrainingjobs"), "default", pjob)

    # Succeeds: pods created, status written, Events created.
    local.submit(genericjob("succeeds", {"worker": 2}, script=QUICK))
    # A restart (OnFailure, limit 1): the failed pod is deleted and made again under the same name, so
    # the second "Created pod" Event within the dedupe window is a PATCH of the first.
    local.submit(genericjob("restarts", {"worker": 1}, script=[FAIL, QUICK], restart={"policy": "OnFailure",
                                                                                      "limit": 1}))
    # cleanUpPolicy All, with Services and a PodGroup: on success, pods, Services and the PodGroup are deleted.
    service = {"ports": [{"name": "http", "port": 2222}]}
    scheduler = {"t9kScheduler": {"queue": "default", "priority": 5}}
    local.submit(genericjob("cleanup", {"master": 1, "worker": 1}, script=QUICK, cleanUpPolicy="All",
                            service=service, scheduler=scheduler))
    # spec.service and t9kScheduler on a running job: Services and the PodGroup are created.
    local.submit(genericjob("served", {"master": 1, "worker": 2}, script=FOREVER, service=service,
                            scheduler=scheduler))
    # Paused while running (its pods are deleted), then the job is deleted.
    local.submit(genericjob("paused", {"worker": 2}, script=FOREVER))
    # InvalidSpec: a success rule naming a type the job does not have.
    local.submit(genericjob("invalid", {"worker": 1}, script=QUICK, successRules=[{"chief": [0]}]))
    # A running pod force-deleted: the cache loses it while the job's status still records it running,
    # so the reconciler asks the server (a live GET, 404) before counting the replica as lost.
    local.submit(genericjob("lost", {"worker": 1}, script=FOREVER))

    assert replicas(await local.wait_phase("succeeds", "Succeeded"))
    restarted = await local.wait_phase("restarts", "Succeeded")
    assert restarted["status"]["tasks"][0]["restartCount"] == 1
    await local.wait("restart's repeated Event patched",
                     lambda: any(e.get("count", 1) >= 2 for e in local.events("restarts")))

    await local.wait_phase("cleanup", "Succeeded")
    await local.wait("cleanup's pods, Services and PodGroup deleted",
                     lambda: not (local.pods("cleanup") or local.services("cleanup") or local.podgroups("cleanup")))

    await local.wait_phase("served", "Running")
    await local.wait("served's Services and PodGroup",
                     lambda: len(local.services("served")) == 3 and len(local.podgroups("served")) == 1)
    # Edits of a running job: a scale edit patches the PodGroup's minMember, a ports edit every Service.
    served = local.job("served")
    specs = [{**s, "replicas": 3} if s["type"] == "worker" else s for s in served["spec"]["replicaSpecs"]]
    local.patch("served", {"spec": {"replicaSpecs": specs, "service": {"ports": [{"name": "http", "port": 2223}]}}})
    await local.wait("served's PodGroup and Services follow the edit", lambda: len(local.services("served")) == 4
                     and local.podgroups("served")[0]["spec"]["minMember"] == 4
                     and all(s["spec"]["ports"][0]["port"] == 2223 for s in local.services("served")))

    await local.wait_phase("paused", "Running")
    local.patch("paused", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await local.wait_phase("paused", "Paused")
    await local.wait("paused's pods deleted", lambda: not local.pods("paused"))
    local.delete("paused")
    await local.wait("paused deleted", lambda: local.job("paused") is None)

    invalid = await local.wait_phase("invalid", "Failed")
    assert condition(invalid, "Failed")["reason"] == "InvalidSpec"

    # Only once the controller's own cache shows the replica running is the force-deletion a lost pod.
    def cached_running() -> bool:
        cached = controller.jobs.lister.get("default/lost")
        return bool(cached) and (replicas(cached).get("lost-worker-0") or {}).get("phase") == "Running"

    await local.wait("lost's replica running in the controller's cache", cached_running)
    local.force_delete_pod("lost-worker-0")
    await local.wait_phase("lost", "Failed")  # restartPolicy Never: a lost pod has failed for good

    tf_jobs = cluster.registry.get(GROUP, VERSION, "tensorflowtrainingjobs")
    boards = cluster.registry.get("tensorstack.dev", "v1beta1", "tensorboards")
    await local.wait("the TensorFlowTrainingJob's TensorBoard", lambda: local.store.objects(
        ("tensorstack.dev", "tensorboards"), "default"))
    local.api.patch(tf_jobs, "default", "tf", MERGE, {"spec": {"tensorboardSpec": {"image": "tensorflow:2.12"}}})
    await local.wait("the TensorBoard follows the edit", lambda: local.api.get(boards, "default", "tf")["spec"]
                     == {"image": "tensorflow:2.12"})
    local.api.delete(tf_jobs, "default", "tf", {"propagationPolicy": "Background"})
    await local.wait("controller idle", lambda: all(controller_idle(member) for member in group.members))

    # localcluster counts a request when its response ends, and the informers' watches are still open:
    # end them (the informers re-watch) so that they are counted too.
    watches = sum(n for (verb, _, _), n in cluster.faults.requests.items() if verb == "watch")
    dropped = cluster.drop_watches()
    await local.wait("the dropped watches counted", lambda: sum(
        n for (verb, _, _), n in cluster.faults.requests.items() if verb == "watch") >= watches + dropped)


async def run_under_leader_election(cluster, rest_client) -> None:
    """Run every API path as `genericjob-controller run --leader-elect` would, with `rest_client`'s identity."""
    # Every kind, as `run` serves them by default: one controller per kind, sharing their informers.
    controller = make_controller(rest_client, ControllerConfig(workers=4, qps=0, informer_options=FAST,
                                                              shutdown_timeout=5.0), None)
    # As `genericjob-controller run --leader-elect` does: the start-up checks (their requests are counted
    # too), informers warm up, workers run only while leading.
    await preflight(rest_client, [(i.resource, i.namespace) for i in controller.factory.informers],
                    lease=(NAMESPACE, NAME), timeout=10)
    controller.start_informers()
    await controller.wait_for_sync(10)
    leading, lost = asyncio.Event(), asyncio.Event()

    async def lead() -> None:
        controller.run_workers()
        leading.set()
        await asyncio.Event().wait()

    elector = LeaderElector(rest_client, LeaderElectionConfig(NAME, NAMESPACE), lead, lost.set)
    election = asyncio.create_task(elector.run())
    try:
        await asyncio.wait_for(leading.wait(), 10)
        await run_every_api_path(cluster, controller)
        assert not lost.is_set(), "leadership lost during the scenario"
    finally:
        election.cancel()  # a clean shutdown: the lease is released (GET, then PUT)
        await asyncio.gather(election, return_exceptions=True)
        await controller.stop()
    lease = cluster.api.get(cluster.registry.get("coordination.k8s.io", "v1", "leases"), NAMESPACE, NAME)
    assert lease["spec"]["holderIdentity"] == "", "the lease was not released"


@pytest.mark.runner("scripted")
async def test_rbac_rules_are_exactly_what_the_controller_uses(cluster, rendered, tmp_path):
    cluster.apply_crds(CRDS)
    for name, definition in registry.local_crds().items():  # the platform's APIs (the TensorBoard)
        (tmp_path / name).write_text(yaml.safe_dump(definition))
    cluster.apply_crds(tmp_path)
    apply_rbac(cluster, rendered)
    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client:
        await run_under_leader_election(cluster, rest_client)
    assert not refused(cluster), f"requests refused under the manifests' RBAC: {refused(cluster)}"
    assert cluster.access.admission.owner_references  # the plugin was on: the finalizers rule was needed

    seen = cluster.faults.requests
    unknown = sorted({resource for _, resource, _ in seen if resource not in GROUPS})
    assert not unknown, f"requests for resources the test cannot map to an API group: {unknown}"
    used = {(GROUPS[resource], resource, verb) for verb, resource, _ in seen}
    cluster_rules = rules_of(find(rendered, "ClusterRole", NAME))
    role_rules = rules_of(find(rendered, "Role", ROLES["Role"]))

    def granted(rule: Rule) -> bool:
        return rule in (role_rules if rule[1] in NAMESPACED_ROLE else cluster_rules)

    missing = sorted(describe(r) for r in used if not granted(r))
    assert not missing, f"the controller used permissions the manifests do not grant: {missing}"
    assert not {r for r in role_rules if r[1] not in NAMESPACED_ROLE}, "the Role grants more than leases"
    assert not {r for r in cluster_rules if r[1] in NAMESPACED_ROLE}, "leases belong in the namespaced Role"
    unused = sorted(describe(r) for r in (cluster_rules | role_rules) - used - set(NOT_EXERCISED))
    assert not unused, f"permissions granted but never used (over-broad; remove them or explain in " \
                       f"NOT_EXERCISED): {unused}"



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

# --- the Dockerfile (structure only: no Docker engine to build it here) -------------------------


def dockerfile_stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile as stages of (INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    lines, current = [], ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        current += " " + stripped.removesuffix("\\").strip()
        if not stripped.endswith("\\"):
            lines.append(current.strip())
            current = ""
    assert not current, "the Dockerfile ends inside a continued line"
    stages: list[list[tuple[str, str]]] = []
    for line in lines:
        instruction, _, args = line.partition(" ")
        if instruction.upper() == "FROM":
            stages.append([])
        assert stages, f"instruction before the first FROM: {line}"
        stages[-1].append((instruction.upper(), args.strip()))
    return stages


def args_of(stage: list[tuple[str, str]], instruction: str) -> list[str]:
    return [args for name, args in stage if name == instruction]


def test_dockerfile_is_multi_stage_with_only_the_runtime_in_the_final_image(rendered):
    stages = dockerfile_stages()
    assert len(stages) >= 2, "not a multi-stage build"
    [builder_from] = args_of(stages[0], "FROM")
    # Each by the digest of its tag (test_supply_chain.py): a Debian 12 builder whose python3.11 is the final
    # image's, at the same path (/usr/bin/python3.11), so the venv made in one runs in the other.
    assert re.fullmatch(r"debian:12-slim@sha256:[0-9a-f]{64}\s+AS\s+builder", builder_from, re.IGNORECASE), \
        builder_from
    assert re.search(r"python3\.11 -m venv /opt/venv", " ".join(args_of(stages[0], "RUN")))
    final = stages[-1]
    [final_from] = args_of(final, "FROM")
    assert re.fullmatch(r"gcr\.io/distroless/python3-debian12:nonroot@sha256:[0-9a-f]{64}", final_from), final_from
    # The final stage takes the installed runtime from the builder, and builds and installs nothing itself.
    assert any(a.startswith("--from=builder ") for a in args_of(final, "COPY")), "runtime not copied from builder"
    final_runs = " ".join(args_of(final, "RUN"))
    assert not re.search(r"\bpip\b|apt-get install|\bgcc\b|build-essential", final_runs), final_runs
    assert not [a for a in args_of(final, "COPY") if not a.startswith("--from=")], "sources copied into the image"

    # Runtime dependencies only: no `[test]` extra, no test tools (comments aside).
    instructions = " ".join(args for stage in stages for _, args in stage)
    assert not re.search(r"\.\[|\[test\]|pytest|ruff", instructions), "test dependencies installed"
    builder_runs = " ".join(args_of(stages[0], "RUN"))
    assert "pip wheel" in builder_runs and "pip install" in builder_runs

    env = " ".join(args_of(final, "ENV"))
    assert re.search(r"\bPYTHONUNBUFFERED=1\b", env) and re.search(r"\bPYTHONDONTWRITEBYTECODE=1\b", env), env


def test_dockerfile_runs_the_cli_as_the_deployments_non_root_user(rendered):
    final = dockerfile_stages()[-1]
    users = args_of(final, "USER")
    assert users, "the final image runs as root"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) != 0, f"USER must be a numeric non-root UID, got {users[-1]!r}"
    pod_security = find(rendered, "Deployment")["spec"]["template"]["spec"]["securityContext"]
    assert int(uid) == pod_security["runAsUser"]
    if gid:
        assert int(gid) == pod_security["runAsGroup"]
    # A user of that UID exists (so tools that look it up find a name): the distroless base's `nonroot` is
    # 65532:65532, and its :nonroot variant runs as it; the final stage has no shell to add one with.
    [base] = args_of(final, "FROM")
    assert base.startswith("gcr.io/distroless/") and ":nonroot@" in base and (int(uid), int(gid)) == (65532, 65532)
    assert not args_of(final, "RUN"), "a distroless stage has no shell to RUN in"

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert NAME in scripts
    assert [json.loads(a) for a in args_of(final, "ENTRYPOINT")] == [[NAME]]
    assert [json.loads(a) for a in args_of(final, "CMD")] == [["run"]]
    exposed = sorted(int(p) for a in args_of(final, "EXPOSE") for p in a.split())
    [container] = find(rendered, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert exposed == sorted(p["containerPort"] for p in container["ports"]) == [8081, METRICS_PORT, WEBHOOK_PORT]


def test_dockerfile_copies_what_run_needs_and_dockerignore_keeps_the_context_small():
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    for pattern in (".git", ".venv", "tests", "bench", "__pycache__", ".pytest_cache", ".ruff_cache"):
        assert pattern in ignored, f".dockerignore does not exclude {pattern}"
    builder = dockerfile_stages()[0]
    sources = set()
    for args in args_of(builder, "COPY"):
        parts = shlex.split(args)
        sources |= {p.rstrip("/") for p in parts[:-1] if not p.startswith("--")}
    # Everything the wheel is built from is sent in the context, and every package of the project is in it.
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: no such file"
        assert source not in ignored, f"COPY {source}, but .dockerignore excludes it"
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    # The image holds what `run` imports and nothing else: the test server and the development tools
    # stay out of the context (so out of the wheel), and with them their dependencies (the `local` extra).
    wanted = {p.rstrip("*") for p in packages["include"]} - {"localcluster"}
    assert sources & wanted == wanted
    assert "localcluster" not in sources and "localcluster" in ignored
    assert "controller/devtools" in ignored
    assert {"pyproject.toml", "README.md"} <= sources  # pyproject's readme is read at build time
