"""The deployment manifests: `kubectl kustomize manifests/` renders the expected objects (Deployment, Services,
PodDisruptionBudget, the admission webhook), and they apply to localcluster with `kubectl apply -k`, with no
Prometheus Operator CRDs in the cluster (issue 12, fault 4)."""

from __future__ import annotations

import copy
import json
from collections import Counter

from controller.jobs.children.podgroup import GROUP as PG_GROUP
from controller.jobs.children.podgroup import PLURAL as PG_PLURAL
from controller.kinds import registry
from controller.kinds.genericjob.models import GROUP, PLURAL
from localcluster.testing import Kubectl, default_pod_template

from .manifests_support import (
    EXPECTED,
    IMAGE,
    MANIFESTS,
    METRICS_PORT,
    NAME,
    NAMESPACE,
    ROLES,
    WEBHOOK,
    WEBHOOK_PORT,
    WEBHOOK_SECRET,
    apply_rbac,
    find,
    load_file,
    resource_rules,
    service_account_client,
)

# --- rendering ----------------------------------------------------------------------------------


def test_kustomize_renders_every_object_into_the_namespace(rendered):
    assert Counter((o["kind"], o["metadata"]["name"]) for o in rendered) == Counter(list(EXPECTED))
    for obj in rendered:
        namespaced = EXPECTED[(obj["kind"], obj["metadata"]["name"])]
        assert obj["metadata"].get("namespace") == (NAMESPACE if namespaced else None), obj["metadata"]
    # The CRDs go through untouched: they are exactly what `python -m controller.kinds.genericjob.crd` generated.
    for path in sorted((MANIFESTS / "crds").glob("*.yaml")):
        [generated] = load_file(path)
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



def test_webhook_certificates_rbac_names_the_secret_and_the_configuration(rendered):
    """The self-managed certificates need one Secret in the controller's namespace (made once: `create` cannot
    be limited by name) and the caBundle of one ValidatingWebhookConfiguration: granted by name, nothing more
    (test_install_webhook.py runs the certificates' keeper under these rules: it gets and PUTs, never patches)."""
    assert resource_rules(find(rendered, "Role", WEBHOOK)) == {
        ("", "secrets", "create", None),
        *{("", "secrets", verb, WEBHOOK_SECRET) for verb in ("get", "update")}}
    assert resource_rules(find(rendered, "ClusterRole", WEBHOOK)) == {
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", verb, NAME) for verb in ("get", "update")}
    # The controller's own ClusterRole grants no webhook configuration at all, and of Secrets only what an MPIJob's
    # SSH keys need: made once, watched by label; never read by name, changed or deleted.
    assert {r for r in resource_rules(find(rendered, "ClusterRole", NAME)) if r[1] in (
        "secrets", "validatingwebhookconfigurations")} == {("", "secrets", verb, None)
                                                           for verb in ("list", "watch", "create")}


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
            assert not await can(verb, "validatingwebhookconfigurations", NAME, "", "admissionregistration.k8s.io")
        for verb in ("delete", "patch"):
            assert not await can(verb, "secrets")
            assert not await can(verb, "secrets", WEBHOOK_SECRET)
        # An MPIJob's SSH keys (the controller's ClusterRole): made in any namespace, listed and watched by label.
        assert await can("create", "secrets", namespace="default") and await can("list", "secrets")
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
                                    f"crd/tensorflowtrainingjobs.{GROUP}", f"crd/pytorchtrainingjobs.{GROUP}",
                                    f"crd/mpijobs.{GROUP}")
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
