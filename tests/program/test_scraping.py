"""Scraping the metrics: a bound token, verified with cert-manager, fenced by a NetworkPolicy.

- every ServiceMonitor (kustomize's components, the chart) presents Prometheus's own projected pod token
  (`bearerTokenFile`: bound to the pod, expiring, renewed by the kubelet), and the install binds the
  metrics reader role to Prometheus's ServiceAccount; no ServiceAccount token Secret (a token that never
  expires) is made anywhere;
- overlays/cert-manager (components/cert-manager; Helm `metrics.certManager.enabled`) issues the metrics
  certificate, mounts its Secret where `--metrics-cert-dir` reads it, and has the ServiceMonitor verify it
  (the Secret's CA, the Service's DNS name, no insecureSkipVerify); a controller serving such a certificate
  passes exactly that verification;
- components/networkpolicy (Helm `networkPolicy.enabled`) admits only the monitoring namespace, only to
  the metrics port.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import shutil
import ssl

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from controller.runtime.certs import CERT_FILE, KEY_FILE
from localcluster.testing import Kubectl
from tests.slow import starts_processes

from .inprocess import cluster_with_crds
from .manifests_support import MANIFESTS, NAME, NAMESPACE, ROOT, find
from .packaging_support import (
    OVERLAYS,
    PROMETHEUS_OPERATOR_CRDS,
    assert_same_objects,
    by_key,
    crd_stub,
    render,
    template,
)
from .test_metrics_security import served_certificate, serving

CERT_MANAGER_CRDS = [crd_stub("cert-manager.io", "issuers", "Issuer"),
                     crd_stub("cert-manager.io", "certificates", "Certificate")]
SERVICE = f"{NAME}-metrics"
CERTIFICATE = f"{NAME}-metrics-cert"  # the webhook's has its own (test_install_webhook.py)


@pytest.fixture
async def cluster():
    """With the project's CRDs: the controller of the verification test starts."""
    async with cluster_with_crds() as running:
        yield running


@pytest.fixture(scope="module")
@starts_processes
def monitoring() -> list[dict]:
    return render(OVERLAYS / "monitoring")




def container(objects: list[dict]) -> dict:
    [found] = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return found


# --- authentication: Prometheus's bound token, no token Secret ------------------------------------

PROJECTED_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"  # the kubelet's, renewed before expiry


@pytest.mark.slow  # kubectl kustomize
@pytest.mark.parametrize("variant", ["overlays/monitoring", "overlays/cert-manager", "helm", "helm cert-manager",
                                     "helm other prometheus"])
def test_every_servicemonitor_scrapes_with_prometheus_bound_token(variant):
    prometheus = {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}  # kube-prometheus's
    if variant.startswith("helm"):
        values = ["metrics.serviceMonitor.enabled=true"]
        values += ["metrics.certManager.enabled=true"] if "cert-manager" in variant else []
        if "other" in variant:  # kube-prometheus-stack's account, in its release's namespace
            prometheus = {**prometheus, "name": "stack-kube-prometheus-prometheus", "namespace": "observability"}
            values += [f"metrics.serviceMonitor.prometheusServiceAccount.name={prometheus['name']}",
                       f"metrics.serviceMonitor.prometheusServiceAccount.namespace={prometheus['namespace']}"]
        objects = template(*values)
    else:
        objects = render(ROOT / variant)
    monitor = find(objects, "ServiceMonitor")
    for endpoint in monitor["spec"]["endpoints"]:
        assert endpoint["bearerTokenFile"] == PROJECTED_TOKEN
        assert "authorization" not in endpoint and "bearerTokenSecret" not in endpoint, endpoint
    # No token that never expires: no ServiceAccount token Secret, and no account made only to hold one.
    assert not [o for o in objects if o["kind"] == "Secret" and o.get("type") == "kubernetes.io/service-account-token"]
    assert not [o for o in objects if o["kind"] == "ServiceAccount" and "scraper" in o["metadata"]["name"]]
    # Prometheus's account, and only it, may read the metrics.
    [binding] = [o for o in objects if o["kind"] == "ClusterRoleBinding"
                 and o["roleRef"]["name"] == "genericjob-metrics-reader"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": "genericjob-metrics-reader"}
    assert binding["subjects"] == [prometheus]


def test_tls_is_verified_wherever_a_ca_exists_and_skipped_only_with_a_comment_saying_why():
    for path in [*MANIFESTS.rglob("*.yaml"), *(ROOT / "charts").rglob("*.yaml"), *OVERLAYS.rglob("*.yaml")]:
        lines = path.read_text().splitlines()
        for n, line in enumerate(lines):
            if "insecureSkipVerify: true" in line and not line.lstrip().startswith("#"):
                said = " ".join(lines[max(0, n - 1):n + 1]).lower()
                assert "no ca exists" in said, f"{path}:{n + 1}: insecureSkipVerify without saying why"
    # And every variant with a CA verifies: the cert-manager overlay and value (tests below).


def test_no_manifest_makes_a_service_account_token_secret():
    for path in [*MANIFESTS.rglob("*.yaml"), *(ROOT / "charts").rglob("*.yaml"), *OVERLAYS.rglob("*.yaml")]:
        lines = [line for line in path.read_text().splitlines()
                 if "kubernetes.io/service-account-token" in line and not line.lstrip().startswith("#")]
        assert not lines, f"{path}: {lines}"


# --- verified TLS with cert-manager ---------------------------------------------------------------


def test_cert_manager_overlay_issues_mounts_and_verifies_the_certificate(monitoring, verified):
    added = {k: o for k, o in by_key(verified).items() if k not in by_key(monitoring)}
    # With the admission webhook's certificate, whose objects test_install_webhook.py checks.
    assert set(added) == {("Issuer", f"{NAME}-selfsigned", NAMESPACE), ("Certificate", CERTIFICATE, NAMESPACE),
                          ("Certificate", f"{NAME}-webhook-serving-cert", NAMESPACE)}
    changed = {k for k, o in by_key(verified).items() if k in by_key(monitoring) and by_key(monitoring)[k] != o}
    assert changed == {("Deployment", NAME, NAMESPACE), ("ServiceMonitor", NAME, NAMESPACE),
                       ("ValidatingWebhookConfiguration", NAME, None)}

    certificate = find(verified, "Certificate", CERTIFICATE)
    assert certificate["spec"]["issuerRef"] == {"group": "cert-manager.io", "kind": "Issuer",
                                                "name": f"{NAME}-selfsigned"}
    assert "server auth" in certificate["spec"]["usages"]
    assert certificate["spec"]["privateKey"]["rotationPolicy"] == "Always"  # a renewal brings a new key
    secret = certificate["spec"]["secretName"]

    # The Secret is mounted, read-only and whole (renewals reach it), where --metrics-cert-dir reads it.
    pod = find(verified, "Deployment")["spec"]["template"]["spec"]
    [flag] = [a for a in container(verified)["args"] if a.startswith("--metrics-cert-dir=")]
    cert_dir = flag.partition("=")[2]
    [mount] = [m for m in container(verified)["volumeMounts"] if m["mountPath"] == cert_dir]
    assert mount.get("readOnly") is True and "subPath" not in mount
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["secretName"] == secret
    assert [a for a in container(verified)["args"] if not a.startswith("--webhook-cert-dir=")][:-1] == \
        container(monitoring)["args"]

    # The ServiceMonitor trusts the Secret's CA and checks the name the certificate carries.
    [endpoint] = find(verified, "ServiceMonitor")["spec"]["endpoints"]
    tls = endpoint["tlsConfig"]
    assert tls == {"ca": {"secret": {"name": secret, "key": "ca.crt"}},
                   "serverName": f"{SERVICE}.{NAMESPACE}.svc", "insecureSkipVerify": False}
    assert tls["serverName"] in certificate["spec"]["dnsNames"]
    assert find(verified, "Service", SERVICE)["metadata"]["namespace"] == NAMESPACE


@pytest.mark.slow  # kubectl kustomize
def test_cert_manager_overlay_follows_another_namespace(tmp_path):
    """The certificate's DNS names and the ServiceMonitor's serverName name the Service's namespace: set
    `namespace:` in the overlay (its replacements run after it), and both follow."""
    for tree in ("manifests", "overlays"):
        shutil.copytree(ROOT / tree, tmp_path / tree, symlinks=True)
    overlay = tmp_path / "overlays" / "cert-manager" / "kustomization.yaml"
    overlay.write_text(overlay.read_text() + "namespace: metrics-team\n")
    objects = render(overlay.parent)
    service = f"{SERVICE}.metrics-team.svc"
    assert find(objects, "Service", SERVICE)["metadata"]["namespace"] == "metrics-team"
    assert find(objects, "Certificate", CERTIFICATE)["spec"]["dnsNames"] == [service, f"{service}.cluster.local"]
    assert find(objects, "ServiceMonitor")["spec"]["endpoints"][0]["tlsConfig"]["serverName"] == service


def test_helm_cert_manager_value_renders_the_cert_manager_overlay(verified):
    assert_same_objects(template("metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true",
                                 "metrics.grafanaDashboard.enabled=true", "metrics.certManager.enabled=true",
                                 "namespace.create=true"), verified)


@pytest.mark.slow  # helm
def test_helm_cert_manager_value_follows_the_release():
    objects = template("metrics.serviceMonitor.enabled=true", "metrics.certManager.enabled=true",
                       "fullnameOverride=jobs")
    certificate = find(objects, "Certificate", "jobs-metrics-cert")
    assert certificate["spec"]["dnsNames"][0] == f"jobs-metrics.{NAMESPACE}.svc"
    [service] = [o for o in objects if o["kind"] == "Service" and o["metadata"]["labels"].get(
        "app.kubernetes.io/component") == "metrics"]
    assert service["metadata"]["name"] == "jobs-metrics"
    tls = find(objects, "ServiceMonitor")["spec"]["endpoints"][0]["tlsConfig"]
    assert tls["serverName"] == f"jobs-metrics.{NAMESPACE}.svc"
    assert tls["ca"]["secret"]["name"] == certificate["spec"]["secretName"]
    # Plain HTTP metrics have no certificate to issue (the webhook's, which follows the switch, is issued).
    objects = template("metrics.secure=false", "metrics.certManager.enabled=true")
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Certificate"] == [f"{NAME}-webhook-serving-cert"]
    kinds = {o["kind"] for o in template("metrics.secure=false", "metrics.certManager.enabled=true",
                                         "webhook.certManager.enabled=false")}
    assert not kinds & {"Issuer", "Certificate"}


async def test_cert_manager_overlay_applies_with_the_crds(cluster, tmp_path, verified):
    kubectl = Kubectl(cluster, tmp_path)
    refused = await kubectl.run("apply", "-k", str(OVERLAYS / "cert-manager"))
    assert refused.code != 0, refused.out  # needs cert-manager's and the operator's CRDs
    await kubectl.ok("apply", "-f", "-", stdin=yaml.safe_dump_all(PROMETHEUS_OPERATOR_CRDS + CERT_MANAGER_CRDS))
    applied = await kubectl.ok("apply", "-k", str(OVERLAYS / "cert-manager"))
    assert len(applied.out.splitlines()) == len(verified), applied.out
    got = json.loads((await kubectl.ok("get", "-n", NAMESPACE, "certificate", CERTIFICATE, "-o", "json")).out)
    assert got["spec"] == find(verified, "Certificate", CERTIFICATE)["spec"]


def issued(dns_names: list[str]) -> tuple[bytes, bytes]:
    """What cert-manager's self-signed Issuer puts in the Secret for the Certificate: (tls.crt, tls.key); its
    ca.crt is tls.crt."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(days=90))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


async def handshake(address: str, ca: bytes, server_name: str) -> bytes:
    """A TLS handshake as the ServiceMonitor's tlsConfig makes Prometheus do it: only `ca` trusted, the
    certificate checked for `server_name`."""
    context = ssl.create_default_context(cadata=ca.decode())
    host, port = address.rsplit(":", 1)
    _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port), ssl=context,
                                                               server_hostname=server_name), 10)
    try:
        return writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()


async def test_the_controller_passes_the_servicemonitors_verification(tmp_path, rest_client, verified):
    """The Secret the Certificate asks for, in the directory the Deployment mounts: the controller serves it, and
    a client configured as the ServiceMonitor (its CA, its serverName) verifies it; one trusting another CA,
    or expecting another name, does not."""
    certificate = find(verified, "Certificate", CERTIFICATE)
    cert, key = issued(certificate["spec"]["dnsNames"])
    (tmp_path / CERT_FILE).write_bytes(cert)
    (tmp_path / KEY_FILE).write_bytes(key)
    (tmp_path / "ca.crt").write_bytes(cert)
    tls = find(verified, "ServiceMonitor")["spec"]["endpoints"][0]["tlsConfig"]
    async with serving(rest_client, metrics_cert_dir=str(tmp_path)) as (running, scraper):
        address = running.manager.server.addresses["metrics"]
        served = await handshake(address, (tmp_path / tls["ca"]["secret"]["key"]).read_bytes(), tls["serverName"])
        assert served == await served_certificate(scraper)
        with pytest.raises(ssl.SSLCertVerificationError):
            await handshake(address, issued(certificate["spec"]["dnsNames"])[0], tls["serverName"])
        with pytest.raises(ssl.SSLCertVerificationError):
            await handshake(address, cert, f"{SERVICE}.elsewhere.svc")


# --- the NetworkPolicy ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
@starts_processes
def fenced(tmp_path_factory) -> list[dict]:
    """manifests/ with the components line the component's comment documents."""
    copy = tmp_path_factory.mktemp("fenced") / "manifests"
    shutil.copytree(MANIFESTS, copy, symlinks=True)
    kustomization = yaml.safe_load((copy / "kustomization.yaml").read_text())
    kustomization["components"] = ["components/networkpolicy"]
    (copy / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return render(copy)


def test_networkpolicy_admits_only_the_monitoring_namespace_to_the_metrics_port(fenced):
    base = render(MANIFESTS)
    assert not [o for o in base if o["kind"] == "NetworkPolicy"], "opt-in: not in the default install"
    added = {k: o for k, o in by_key(fenced).items() if k not in by_key(base)}
    assert set(added) == {("NetworkPolicy", NAME, NAMESPACE)}
    policy = added[("NetworkPolicy", NAME, NAMESPACE)]["spec"]
    pod = find(fenced, "Deployment")["spec"]["template"]
    assert policy["podSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert policy["podSelector"]["matchLabels"] == find(fenced, "Deployment")["spec"]["selector"]["matchLabels"]
    assert policy["policyTypes"] == ["Ingress"]  # egress (to the API server) is not restricted
    # The webhook's rule (the API server's calls, from anywhere: test_install_webhook.py) comes second.
    rule, _ = policy["ingress"]
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    ports = {p["name"]: p for p in container(fenced)["ports"]}
    # Only the metrics port: the health port (the kubelet's probes come from the node, always allowed) is in
    # no rule, so no pod reaches it.
    assert rule["ports"] == [{"port": "https", "protocol": "TCP"}]
    assert ports["https"]["containerPort"] == 8443 and ports["health"]["containerPort"] == 8081
    assert "health" not in json.dumps(policy) and "8081" not in json.dumps(policy)
    # The metrics Service's target port is the one admitted.
    [service_port] = find(fenced, "Service", SERVICE)["spec"]["ports"]
    assert service_port["targetPort"] == "https"


def test_helm_networkpolicy_value_renders_the_component(fenced):
    assert not [o for o in template() if o["kind"] == "NetworkPolicy"]
    assert_same_objects(template("networkPolicy.enabled=true", "namespace.create=true"), fenced)


@pytest.mark.slow  # helm
def test_helm_networkpolicy_namespaces_are_configurable():
    objects = template("networkPolicy.enabled=true", "networkPolicy.metricsNamespaces={prometheus,observability}",
                       "metrics.secure=false")
    rule, _ = find(objects, "NetworkPolicy")["spec"]["ingress"]  # and the webhook's
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}
                            for ns in ("prometheus", "observability")]
    assert rule["ports"] == [{"port": "http", "protocol": "TCP"}]  # follows the metrics port's name


@pytest.mark.slow  # helm
@pytest.mark.parametrize("value", ["networkPolicy.metricsNamespaces={Not_A_Namespace}",
                                   "networkPolicy.metricsNamespaces=monitoring", "networkPolicy.enable=true",
                                   "metrics.certManager.enabld=true"])
def test_helm_refuses_networkpolicy_and_cert_manager_values_that_cannot_work(value):
    import subprocess

    from .packaging_support import BIN, CHART

    refused = subprocess.run([str(BIN / "helm"), "template", NAME, str(CHART), "--set", value],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0, refused.stdout[-500:]


@pytest.mark.slow  # helm
def test_helm_lint_with_cert_manager_and_networkpolicy():
    from .packaging_support import CHART, helm

    out = helm("lint", "--strict", str(CHART), "--set", "metrics.serviceMonitor.enabled=true",
               "--set", "metrics.certManager.enabled=true", "--set", "networkPolicy.enabled=true")
    assert "0 chart(s) failed" in out, out
