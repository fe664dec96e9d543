"""The admission webhook's install variants (issue 34): cert-manager, the namespaced install, the NetworkPolicy,
and the Helm values; test_manifests.py checks the default install's objects, test_helm_chart.py and
test_scraping.py that Helm's defaults render each kustomize variant.

- overlays/cert-manager: cert-manager issues the webhook's certificate for the webhook Service's DNS names, the
  Deployment mounts its Secret where --webhook-cert-dir reads it, the ValidatingWebhookConfiguration names the
  Certificate for cert-manager's cainjector, and the self-managed certificates' RBAC is gone; all of it follows
  another namespace;
- components/networkpolicy: the webhook port open to any address (the API server's is not known), only it;
- Helm: `webhook.enabled=false` makes none of it and runs `--webhook-port=0`; failurePolicy, timeoutSeconds,
  port and the selectors change what they say; a renamed release names its objects and passes their names to
  the controller; webhook.certManager.enabled follows metrics.certManager.enabled unless set; values that
  cannot work are refused; what it renders applies to localcluster, which validates the configurations as
  kube-apiserver does;
- docs/operations.md's uninstall deletes the ValidatingWebhookConfiguration before anything else, and its
  failurePolicy Ignore overlay sets every webhook and nothing else.

test_install_webhook_cluster.py runs the install against localcluster with the controller's own webhook.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from controller.kinds.registry import KINDS
from localcluster.testing import Kubectl

from .manifests_support import NAME, NAMESPACE, ROOT, WEBHOOK, WEBHOOK_PORT, WEBHOOK_SECRET, find
from .packaging_support import BIN, CHART, by_key, helm, render, template

pytestmark = pytest.mark.slow  # each test runs helm or kubectl

SERVING_CERT = f"{NAME}-webhook-serving-cert"  # cert-manager's Certificate and its Secret
CERT_DIR = "/etc/genericjob-controller/webhook-certs"
WEBHOOK_RBAC = {("Role", WEBHOOK), ("RoleBinding", WEBHOOK), ("ClusterRole", WEBHOOK), ("ClusterRoleBinding", WEBHOOK)}


def container(objects: list[dict]) -> dict:
    [found] = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return found


def kinds_and_names(objects: list[dict]) -> set[tuple[str, str]]:
    return {(o["kind"], o["metadata"]["name"]) for o in objects}




# --- cert-manager ---------------------------------------------------------------------------------


def test_cert_manager_issues_mounts_and_injects_the_webhook_certificate(base, verified):
    certificate = find(verified, "Certificate", SERVING_CERT)
    service = find(verified, "Service", WEBHOOK)
    assert certificate["metadata"]["namespace"] == service["metadata"]["namespace"] == NAMESPACE
    # The names the API server checks: the Service's, as clientConfig.service makes it call it.
    assert certificate["spec"]["dnsNames"] == [f"{WEBHOOK}.{NAMESPACE}.svc", f"{WEBHOOK}.{NAMESPACE}.svc.cluster.local"]
    assert certificate["spec"]["issuerRef"] == {"group": "cert-manager.io", "kind": "Issuer",
                                                "name": f"{NAME}-selfsigned"}
    assert find(verified, "Issuer")["spec"] == {"selfSigned": {}}  # so ca.crt is the certificate itself
    assert "server auth" in certificate["spec"]["usages"]
    assert certificate["spec"]["privateKey"]["rotationPolicy"] == "Always"
    # Not the Secret the controller would keep itself: the two never write the same object.
    assert certificate["spec"]["secretName"] == SERVING_CERT != WEBHOOK_SECRET

    # The whole Secret, read-only, where --webhook-cert-dir reads it (its presence: the controller makes none).
    pod = find(verified, "Deployment")["spec"]["template"]["spec"]
    assert f"--webhook-cert-dir={CERT_DIR}" in container(verified)["args"]
    [mount] = [m for m in container(verified)["volumeMounts"] if m["mountPath"] == CERT_DIR]
    assert mount.get("readOnly") is True and "subPath" not in mount
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"] == {"secretName": SERVING_CERT}

    # cert-manager's cainjector fills every webhook's caBundle from the Certificate's Secret; nothing else changes.
    configuration = find(verified, "ValidatingWebhookConfiguration")
    assert configuration["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": f"{NAMESPACE}/{SERVING_CERT}"}
    assert configuration["webhooks"] == find(base, "ValidatingWebhookConfiguration")["webhooks"]
    # The self-managed certificates' grants are not needed, so not made.
    assert not kinds_and_names(verified) & WEBHOOK_RBAC
    assert WEBHOOK_RBAC <= kinds_and_names(base)


def test_cert_manager_webhook_objects_follow_another_namespace(tmp_path):
    for tree in ("manifests", "overlays"):
        shutil.copytree(ROOT / tree, tmp_path / tree, symlinks=True)
    overlay = tmp_path / "overlays" / "cert-manager" / "kustomization.yaml"
    overlay.write_text(overlay.read_text() + "namespace: jobs-system\n")
    objects = render(overlay.parent)
    host = f"{WEBHOOK}.jobs-system.svc"
    assert find(objects, "Service", WEBHOOK)["metadata"]["namespace"] == "jobs-system"
    assert find(objects, "Certificate", SERVING_CERT)["metadata"]["namespace"] == "jobs-system"
    assert find(objects, "Certificate", SERVING_CERT)["spec"]["dnsNames"] == [host, f"{host}.cluster.local"]
    configuration = find(objects, "ValidatingWebhookConfiguration")
    assert configuration["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": f"jobs-system/{SERVING_CERT}"}
    assert {w["clientConfig"]["service"]["namespace"] for w in configuration["webhooks"]} == {"jobs-system"}


# --- the NetworkPolicy ---------------------------------------------------------------------------


def test_networkpolicy_admits_anyone_to_the_webhook_port_only(tmp_path, base):
    copy = tmp_path / "manifests"
    shutil.copytree(ROOT / "manifests", copy, symlinks=True)
    kustomization = yaml.safe_load((copy / "kustomization.yaml").read_text())
    kustomization["components"] = ["components/networkpolicy"]
    (copy / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    _, webhook_rule = find(render(copy), "NetworkPolicy")["spec"]["ingress"]
    # No `from`: the API server's instances may be anywhere (outside the pod network, host-network pods).
    assert webhook_rule == {"ports": [{"port": "webhook", "protocol": "TCP"}]}
    ports = {p["name"]: p["containerPort"] for p in container(base)["ports"]}
    assert ports["webhook"] == WEBHOOK_PORT
    assert find(base, "Service", WEBHOOK)["spec"]["ports"][0]["targetPort"] == "webhook"
    helm_rule = find(template("networkPolicy.enabled=true"), "NetworkPolicy")["spec"]["ingress"][1]
    assert helm_rule == webhook_rule
    assert len(find(template("networkPolicy.enabled=true", "webhook.enabled=false"), "NetworkPolicy")["spec"][
        "ingress"]) == 1


# --- Helm values -------------------------------------------------------------------------------------


def test_helm_webhook_disabled_makes_none_of_it():
    on, off = template(), template("webhook.enabled=false")
    gone = kinds_and_names(on) - kinds_and_names(off)
    assert gone == {("Service", WEBHOOK), ("ValidatingWebhookConfiguration", NAME)} | WEBHOOK_RBAC
    assert kinds_and_names(off) <= kinds_and_names(on)
    assert "--webhook-port=0" in container(off)["args"]
    assert not [a for a in container(off)["args"] if a.startswith("--webhook-") and a != "--webhook-port=0"]
    assert "webhook" not in {p["name"] for p in container(off)["ports"]}
    assert "POD_NAMESPACE" not in {e["name"] for e in container(off)["env"]}
    # Nor a certificate, whoever would have issued it.
    objects = template("webhook.enabled=false", "webhook.certManager.enabled=true")
    assert not [o for o in objects if o["kind"] in ("Certificate", "Issuer")]
    assert "ValidatingWebhookConfiguration" not in helm("template", NAME, str(CHART), "--set", "webhook.enabled=false")
    assert "0 chart(s) failed" in helm("lint", "--strict", str(CHART), "--set", "webhook.enabled=false")


def test_helm_webhook_values_change_what_they_say():
    objects = template("webhook.failurePolicy=Ignore", "webhook.timeoutSeconds=5", "webhook.port=10443",
                       "webhook.objectSelector.matchLabels.admission=checked",
                       "webhook.namespaceSelector.matchExpressions[0].key=team",
                       "webhook.namespaceSelector.matchExpressions[0].operator=Exists",
                       "namespaces={team-a,team-b}")
    webhooks = find(objects, "ValidatingWebhookConfiguration")["webhooks"]
    assert len(webhooks) == len(KINDS)
    for webhook in webhooks:
        assert (webhook["failurePolicy"], webhook["timeoutSeconds"]) == ("Ignore", 5)
        assert webhook["objectSelector"] == {"matchLabels": {"admission": "checked"}}
        # The watched namespaces are required too, after the value's own expressions.
        assert webhook["namespaceSelector"] == {"matchExpressions": [
            {"key": "team", "operator": "Exists"},
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a", "team-b"]}]}
    assert "--webhook-port=10443" in container(objects)["args"]
    assert {p["name"]: p["containerPort"] for p in container(objects)["ports"]}["webhook"] == 10443
    [port] = find(objects, "Service", WEBHOOK)["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (443, "webhook")  # the container port by name


def test_helm_renamed_release_names_its_webhook_objects_and_tells_the_controller():
    objects = template("fullnameOverride=jobs")
    configuration = find(objects, "ValidatingWebhookConfiguration")
    assert configuration["metadata"]["name"] == "jobs"
    assert {w["clientConfig"]["service"]["name"] for w in configuration["webhooks"]} == {"jobs-webhook"}
    assert find(objects, "Service", "jobs-webhook")
    # The webhooks' own names are the kinds', whatever the release: unique within the configuration.
    assert [w["name"] for w in configuration["webhooks"]] == [
        "genericjobs.batch.tensorstack.dev", "mpijobs.batch.tensorstack.dev",
        "pytorchtrainingjobs.batch.tensorstack.dev", "tensorflowtrainingjobs.batch.tensorstack.dev"]
    role, cluster_role = find(objects, "Role", "jobs-webhook"), find(objects, "ClusterRole", "jobs-webhook")
    assert [r.get("resourceNames") for r in role["rules"]] == [None, ["jobs-webhook-cert"]]
    assert cluster_role["rules"][0]["resourceNames"] == ["jobs"]
    assert [a for a in container(objects)["args"] if a.startswith("--webhook-")] == [
        "--webhook-port=9443", "--webhook-service-name=jobs-webhook", "--webhook-secret-name=jobs-webhook-cert",
        "--webhook-configuration-name=jobs"]
    # With cert-manager the controller keeps no certificate: no names to pass, the Certificate's follow the release.
    objects = template("fullnameOverride=jobs", "webhook.certManager.enabled=true")
    assert [a for a in container(objects)["args"] if a.startswith("--webhook-")] == [
        "--webhook-port=9443", f"--webhook-cert-dir={CERT_DIR}"]
    certificate = find(objects, "Certificate", "jobs-webhook-serving-cert")
    assert certificate["spec"]["dnsNames"][0] == f"jobs-webhook.{NAMESPACE}.svc"
    assert find(objects, "ValidatingWebhookConfiguration")["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": f"{NAMESPACE}/jobs-webhook-serving-cert"}


@pytest.mark.parametrize(("values", "webhook_by_cert_manager", "metrics_by_cert_manager"), [
    ((), False, False),
    (("metrics.certManager.enabled=true",), True, True),  # the webhook follows the chart's switch
    (("metrics.certManager.enabled=true", "webhook.certManager.enabled=false"), False, True),
    (("webhook.certManager.enabled=true",), True, False),
    (("metrics.certManager.enabled=true", "metrics.secure=false"), True, False),  # plain HTTP has no certificate
])
def test_helm_webhook_certificates_follow_the_cert_manager_switch(values, webhook_by_cert_manager,
                                                                   metrics_by_cert_manager):
    objects = template(*values)
    certificates = {o["metadata"]["name"] for o in objects if o["kind"] == "Certificate"}
    assert (SERVING_CERT in certificates) == webhook_by_cert_manager
    assert (f"{NAME}-metrics-cert" in certificates) == metrics_by_cert_manager
    assert ("Issuer" in {o["kind"] for o in objects}) == bool(certificates)
    args = container(objects)["args"]
    assert (f"--webhook-cert-dir={CERT_DIR}" in args) == webhook_by_cert_manager
    assert bool(kinds_and_names(objects) & WEBHOOK_RBAC) != webhook_by_cert_manager
    annotations = find(objects, "ValidatingWebhookConfiguration")["metadata"].get("annotations")
    assert bool(annotations) == webhook_by_cert_manager


@pytest.mark.parametrize("value", ["webhook.failurePolicy=Never", "webhook.timeoutSeconds=31",
                                   "webhook.timeoutSeconds=0", "webhook.port=0", "webhook.enabld=false",
                                   "webhook.namespaceSelector.matchExpressions[0].operator=Equals",
                                   "webhook.objectSelector.matchLabel.a=b", "webhook.certManager.enabled=yes"])
def test_helm_refuses_webhook_values_that_cannot_work(value):
    refused = subprocess.run([str(BIN / "helm"), "template", NAME, str(CHART), "--set", value],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0, refused.stdout[-500:]


def test_helm_lint_with_webhook_values():
    out = helm("lint", "--strict", str(CHART), "--set", "webhook.failurePolicy=Ignore", "--set",
               "webhook.certManager.enabled=true", "--set", "namespaces={team-a}",
               "--set", "networkPolicy.enabled=true")
    assert "0 chart(s) failed" in out, out


async def test_what_helm_renders_applies_to_localcluster(cluster, tmp_path):
    """The API server's validation of webhook configurations (localcluster's, as kube-apiserver's) accepts the
    chart's, with selectors and another failure policy; the server stores them as rendered."""
    import json

    objects = template("webhook.failurePolicy=Ignore", "webhook.objectSelector.matchLabels.admission=checked",
                       "namespaces={team-a}", "fullnameOverride=jobs")
    wanted = [o for o in objects if o["kind"] in ("ValidatingWebhookConfiguration", "Service")
              and "webhook" in json.dumps(o["metadata"]) + o["kind"].lower()]
    assert {o["kind"] for o in wanted} == {"ValidatingWebhookConfiguration", "Service"}
    cluster.api.ensure_namespace(NAMESPACE)
    kubectl = Kubectl(cluster, tmp_path)
    await kubectl.ok("apply", "-f", "-", stdin=yaml.safe_dump_all(wanted))
    stored = json.loads((await kubectl.ok("get", "validatingwebhookconfiguration", "jobs", "-o", "json")).out)
    assert stored["webhooks"] == find(wanted, "ValidatingWebhookConfiguration")["webhooks"]


# --- uninstall ---------------------------------------------------------------------------------------


def test_the_uninstall_deletes_the_webhook_configuration_first(base):
    """Once the controller is gone, a webhook under failurePolicy Fail refuses every update of a job (a finalizer's
    removal too): docs/operations.md's uninstall deletes the configuration before anything else."""
    from .test_readme import blocks

    [block] = [b for b in blocks() if "helm uninstall genericjob-controller" in b.text]
    first, *rest = [c.split() for c in block.commands]
    assert first[:3] == ["kubectl", "delete", "validatingwebhookconfiguration"]
    selector = dict(pair.split("=") for pair in first[first.index("-l") + 1].split(","))
    labels = find(base, "ValidatingWebhookConfiguration")["metadata"]["labels"]
    assert selector.items() <= labels.items()
    assert not [c for c in rest if "validatingwebhookconfiguration" in c[2]]


# --- docs/operations.md's failurePolicy Ignore overlay ----------------------------------------------------------


def ignore_overlay() -> str:
    import re

    [block] = [b for b in re.findall(r"^```yaml\n(.*?)^```", (ROOT / "docs" / "operations.md").read_text(),
                                     re.MULTILINE | re.DOTALL) if "ValidatingWebhookConfiguration" in b]
    return block


async def test_the_documented_ignore_overlay_sets_every_webhook_and_nothing_else(cluster, tmp_path, base):
    """The page's overlay, as a user writes it next to the variants: every webhook Ignore, the rest the base's;
    it applies to localcluster."""
    shutil.copytree(ROOT / "manifests", tmp_path / "manifests", symlinks=True)
    overlay = tmp_path / "overlays" / "webhook-ignore"
    overlay.mkdir(parents=True)
    (overlay / "kustomization.yaml").write_text(ignore_overlay())
    objects = render(overlay)
    webhooks = find(objects, "ValidatingWebhookConfiguration")["webhooks"]
    assert [w["failurePolicy"] for w in webhooks] == ["Ignore"] * len(KINDS)
    assert [{**w, "failurePolicy": "Fail"} for w in webhooks] == find(base, "ValidatingWebhookConfiguration")[
        "webhooks"]
    assert {k: o for k, o in by_key(objects).items() if k[0] != "ValidatingWebhookConfiguration"} == {
        k: o for k, o in by_key(base).items() if k[0] != "ValidatingWebhookConfiguration"}
    # Helm's value gives the same configuration.
    helm_webhooks = find(template("webhook.failurePolicy=Ignore"), "ValidatingWebhookConfiguration")["webhooks"]
    assert helm_webhooks == webhooks
    kubectl = Kubectl(cluster, tmp_path)
    await kubectl.ok("apply", "-k", str(overlay))
    stored = await kubectl.ok("get", "validatingwebhookconfiguration", NAME, "-o",
                              "jsonpath={.webhooks[*].failurePolicy}")
    assert stored.out.split() == ["Ignore"] * len(KINDS)
