"""`local`'s admission webhook, wired into localcluster as a cluster wires the controller's (issue 34).

`genericjob-controller local` serves the controller's validating webhook (controller/jobs/schema/admission.py) on a free
loopback port, and registers it in its localcluster as an install does: the Service `genericjob-controller-webhook`
in `genericjob-system` (without a selector: its Endpoints and EndpointSlice, written here, point at 127.0.0.1:PORT,
which is how localcluster's webhook calls resolve a service reference) and the ValidatingWebhookConfiguration
`genericjob-controller` (manifests/webhook.yaml when the project's files are there, else the same generated from
admission.path()/webhook_name()), its caBundle set. So `kubectl apply` of a bad job is refused with the API
server's words, `admission webhook "..." denied the request: spec...`, as on a cluster.

Certificates: a pair made with the openssl command, as localcluster's own serving certificate is
(localcluster/auth/tls.py), served from a private directory in the webhook's cert-dir mode (certs.CertWatcher),
its certificate the caBundle. Not the self-managed CertKeeper: that needs the `cryptography` package, which
requirements-local.lock leaves out (`make local` on a fresh machine does not install it), and a local run lives
far shorter than any certificate, so there is nothing to rotate. `wire` is also what the tests use to put a
webhook started elsewhere (with a CertKeeper, say) behind the same Service and configuration.
"""

from __future__ import annotations

import base64
import copy
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

from apimachinery.errors import ApiStatusError
from controller.jobs.kind import JobKind
from controller.jobs.schema import admission, crd
from controller.kinds import registry
from controller.runtime.webhook_server import Webhook, WebhookConfig
from kubeclient.rest import RestClient
from localcluster.host import openssl

NAMESPACE = "genericjob-system"  # the install's namespace (manifests/namespace.yaml)
SERVICE = "genericjob-controller-webhook"
CONFIGURATION = "genericjob-controller"
PORT_NAME = "webhook"
WEBHOOK_MANIFEST = crd.MANIFEST_DIR.parent / "webhook.yaml"
CERT_DAYS = 30
CONFIGURATIONS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


def configuration(namespace: str = NAMESPACE, service: str = SERVICE, *, ca_bundle: bytes | None = None,
                  failure_policy: str | None = None, manifest: Path = WEBHOOK_MANIFEST,
                  kinds: Sequence[JobKind] | None = None) -> dict:
    """The ValidatingWebhookConfiguration: the install's (`manifest`, when there), else generated from the kinds;
    its webhooks calling `service` in `namespace`, with `ca_bundle` (PEM) and `failure_policy` if given."""
    served = kinds if kinds is not None else registry.select()
    found = _from_manifest(manifest) if manifest.is_file() else None
    made = found or generated(served)
    if found is not None:  # only the webhooks of the kinds served here: the others would be called and never answer
        names = {admission.webhook_name(kind.api) for kind in served}
        made["webhooks"] = [hook for hook in made["webhooks"] if hook["name"] in names]
    for hook in made["webhooks"]:
        hook["clientConfig"]["service"].update(namespace=namespace, name=service)
        if ca_bundle is not None:
            hook["clientConfig"]["caBundle"] = base64.b64encode(ca_bundle).decode()
        if failure_policy is not None:
            hook["failurePolicy"] = failure_policy
    return made


def _from_manifest(path: Path) -> dict | None:
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc.get("kind") == "ValidatingWebhookConfiguration":
            return copy.deepcopy(doc)
    return None


def generated(kinds: Sequence[JobKind]) -> dict:
    """The interface's configuration (docs of issue 34): one webhook per kind, what manifests/webhook.yaml says."""
    hooks = [{"name": admission.webhook_name(kind.api),
              "clientConfig": {"service": {"name": SERVICE, "namespace": NAMESPACE, "path": admission.path(kind.api),
                                           "port": 443}},
              "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [kind.api.group],
                         "apiVersions": [kind.api.version], "resources": [kind.api.plural], "scope": "Namespaced"}],
              "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}, "sideEffects": "None",
              "admissionReviewVersions": ["v1"], "timeoutSeconds": 10, "failurePolicy": "Fail"} for kind in kinds]
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": CONFIGURATION, "labels": {"app.kubernetes.io/name": "genericjob-controller"}},
            "webhooks": hooks}


def service_objects(port: int, namespace: str = NAMESPACE, service: str = SERVICE,
                    address: str = "127.0.0.1") -> list[tuple[str, dict]]:
    """(collection path, object) of the Service without a selector and the endpoints that put it at address:port,
    an Endpoints and an EndpointSlice (localcluster reads the slices first, as the API server's resolver does)."""
    meta = {"name": service, "namespace": namespace}
    ports = [{"name": PORT_NAME, "port": port, "protocol": "TCP"}]
    return [
        (f"/api/v1/namespaces/{namespace}/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"ports": [{"name": PORT_NAME, "port": 443, "targetPort": PORT_NAME, "protocol": "TCP"}]}}),
        (f"/api/v1/namespaces/{namespace}/endpoints", {
            "apiVersion": "v1", "kind": "Endpoints", "metadata": meta,
            "subsets": [{"addresses": [{"ip": address}], "ports": ports}]}),
        (f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices", {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": {**meta, "name": f"{service}-local", "labels": {"kubernetes.io/service-name": service}},
            "endpoints": [{"addresses": [address], "conditions": {"ready": True}}], "ports": ports})]


async def call(rest: RestClient, method: str, path: str, body: dict | None = None) -> dict:
    """One request of the admin client; ApiStatusError when refused."""
    return await rest.call(method, path, body) or {}


async def wire(rest: RestClient, port: int, *, namespace: str = NAMESPACE, ca_bundle: bytes | None = None,
               failure_policy: str | None = None) -> dict:
    """The Service at 127.0.0.1:`port` and the configuration calling it (a `ca_bundle` of None: the webhook's
    CertKeeper writes it). The namespace is created when missing. The configuration, as stored."""
    try:
        await call(rest, "POST", "/api/v1/namespaces",
                   {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    except ApiStatusError as exc:
        if exc.code != 409:
            raise
    for path, body in service_objects(port, namespace):
        await call(rest, "POST", path, body)
    return await call(rest, "POST", CONFIGURATIONS,
                      configuration(namespace, ca_bundle=ca_bundle, failure_policy=failure_policy))


def serving_pair(directory: Path, namespace: str = NAMESPACE, service: str = SERVICE) -> bytes:
    """tls.crt and tls.key in `directory`, a self-signed certificate for the Service's names (its own CA, as
    localcluster/auth/tls.py makes its own); the certificate (PEM), the caBundle."""
    names = [f"DNS:{service}.{namespace}.svc", f"DNS:{service}.{namespace}.svc.cluster.local", "DNS:localhost",
             "IP:127.0.0.1"]
    key, cert = directory / "tls.key", directory / "tls.crt"
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", str(key), "-out", str(cert), "-days", str(CERT_DAYS), "-subj", f"/CN={service}",
            "-addext", "subjectAltName=" + ",".join(names), "-addext", "basicConstraints=critical,CA:TRUE", timeout=30)
    return cert.read_bytes()


class LocalWebhook:
    """The webhook of `local`: started on a loopback port (`port`, 0: a free one, `local`'s default) with its own
    pair, then wired into the cluster."""

    host = "127.0.0.1"  # the cluster reaches it through the Service's endpoints, written with this address

    def __init__(self, rest: RestClient, metrics_registry=None, port: int = 0) -> None:
        self.rest, self.metrics_registry, self.port = rest, metrics_registry, port
        self.webhook: Webhook | None = None
        self.address: str | None = None
        self._dir: str | None = None

    async def start(self) -> str:
        """The address served ("127.0.0.1:PORT"), once the configuration is in place; OSError when the port is
        taken."""
        self._dir = tempfile.mkdtemp(prefix="genericjob-local-webhook-")  # 0700: the key is this user's
        bundle = serving_pair(Path(self._dir))
        self.webhook = admission.make_webhook(None, WebhookConfig(port=self.port, host=self.host, cert_dir=self._dir),
                                              self.metrics_registry, kinds=registry.select())
        self.address = await self.webhook.start()
        await wire(self.rest, int(self.address.rpartition(":")[2]), ca_bundle=bundle)
        return self.address

    async def stop(self) -> None:
        if self.webhook is not None:
            await self.webhook.stop()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
