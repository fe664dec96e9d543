"""The admission webhook's install, run as a cluster runs it (issue 34), against localcluster with the controller's
own webhook code:

- the install end to end: `kubectl apply -k manifests/` and a replica of its Deployment (the controller's webhook
  as the manifests' ServiceAccount, behind a Ready pod the Service selects): before it is up and after it is down,
  job creates are refused with the API server's "failed calling webhook" (failurePolicy Fail); while it is up, an
  invalid job is refused with the field named and a valid one is made; with docs/operations.md's Ignore overlay,
  jobs are admitted while it is down. The same with overlays/cert-manager's certificate and injected caBundle;
- the self-managed certificates' RBAC (manifests/webhook-rbac.yaml) is exactly what their keeper uses, run under it.
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from controller.kinds.registry import KINDS
from localcluster.testing import Kubectl
from tests.clients import controller_client

from .manifests_support import NAME, NAMESPACE, ROOT, WEBHOOK, WEBHOOK_SECRET, find
from .packaging_support import OVERLAYS
from .test_install_webhook import SERVING_CERT, ignore_overlay

# --- the self-managed certificates' RBAC, against what the keeper does -------------------------------------


async def test_the_certificates_rbac_is_exactly_what_the_keeper_uses(cluster, base):
    """controller/runtime/webhook_certs.py's keeper, as the manifests' ServiceAccount with their RBAC enforced in
    localcluster, makes the Secret, sets every caBundle and renews the certificate without one refused request;
    and the webhook Role and ClusterRole grant nothing it did not use (as test_rbac_exactness.py does
    for the ClusterRole)."""
    import asyncio
    import base64
    import datetime

    from controller.runtime.webhook_certs import CertKeeper, CertKeeperConfig
    from informers.backoff import BackoffPolicy
    from localcluster import ApiError

    from .manifests_support import apply_rbac, refused, resource_rules, service_account_client
    from .subprocesses import until

    apply_rbac(cluster, base)
    configurations = cluster.registry.by_kind("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")
    cluster.api.create(configurations, None, find(base, "ValidatingWebhookConfiguration"))  # not over HTTP
    secrets = cluster.registry.get("", "v1", "secrets")

    def stored_certificate() -> str:
        try:
            return cluster.api.get(secrets, NAMESPACE, WEBHOOK_SECRET)["data"]["tls.crt"]
        except ApiError as err:  # not made yet
            assert err.code == 404
            return ""

    def bundles() -> list[str]:
        return [w["clientConfig"].get("caBundle", "") for w in cluster.api.get(configurations, None, NAME)["webhooks"]]

    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client:
        keeper = CertKeeper(rest_client, CertKeeperConfig(
            namespace=NAMESPACE, poll=0.2, cert_validity=datetime.timedelta(seconds=3),
            backoff=BackoffPolicy(initial=0.05, cap=0.2, jitter=0.2)))
        task = asyncio.create_task(keeper.run())
        try:
            await until(lambda: keeper.serving and all(bundles()), what="certificate served, caBundle set")
            first = stored_certificate()
            assert base64.b64decode(bundles()[0]).startswith(b"-----BEGIN CERTIFICATE-----")
            await until(lambda: stored_certificate() not in ("", first), timeout=20, what="certificate renewed")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    assert not refused(cluster), f"requests refused under the manifests' RBAC: {refused(cluster)}"
    groups = {"secrets": "", "validatingwebhookconfigurations": "admissionregistration.k8s.io"}
    used = {(groups[resource], resource, verb) for verb, resource, _ in cluster.faults.requests}
    assert used == {("", "secrets", "create"), ("", "secrets", "get"), ("", "secrets", "update"),
                    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "get"),
                    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "update")}
    granted = {rule[:3] for kind in ("Role", "ClusterRole") for rule in resource_rules(find(base, kind, WEBHOOK))}
    assert granted == used


# --- the install, end to end: localcluster calls the webhook through the install's own objects -----------------


@pytest.fixture
async def routed():
    """A localcluster whose endpoints controller runs (by default only with the process runner): the install's
    webhook Service gets the addresses of the Ready pods it selects, as on a cluster."""
    from localcluster import LocalCluster

    async with LocalCluster(bookmark_interval=1.0, endpoint_controllers=True) as running:
        yield running


async def start_replica(cluster, base: list[dict], config) -> tuple:
    """The controller's webhook as a replica of the installed Deployment serves it: as the manifests' ServiceAccount
    (their RBAC, applied with them), behind a pod of the Deployment's template (Ready, at 127.0.0.1, its port
    `webhook` where the server listens) that the install's Service selects. Returns (webhook, clients, pod)."""
    import copy

    from controller.jobs.schema.admission import make_webhook

    from .manifests_support import service_account_client
    from .subprocesses import until

    accounts = service_account_client(cluster)
    api_client = await accounts.__aenter__()
    rest_client = controller_client(api_client)
    webhook = make_webhook(rest_client, config, kinds=list(KINDS.values()))
    await webhook.start()
    port = int(webhook.address.rpartition(":")[2])
    template = copy.deepcopy(find(base, "Deployment")["spec"]["template"])
    [container] = template["spec"]["containers"]
    container["ports"] = [{**p, "containerPort": port} if p["name"] == "webhook" else p for p in container["ports"]]
    pods = cluster.registry.get("", "v1", "pods")
    pod = cluster.api.create(pods, NAMESPACE, {"apiVersion": "v1", "kind": "Pod", **template,
                                               "metadata": {**template["metadata"], "name": "controller-0"}})
    ready = [{"type": "Ready", "status": "True"}]
    cluster.api.system_write(pods, {**pod, "status": {"phase": "Running", "podIP": "127.0.0.1",
                                                      "podIPs": [{"ip": "127.0.0.1"}], "conditions": ready}},
                             manager="kubelet", subresource="status")

    def endpoint() -> list:
        endpoints = cluster.store.get(("", "endpoints"), (NAMESPACE, WEBHOOK)) or {}
        return [a for subset in endpoints.get("subsets") or () for a in subset.get("addresses") or ()]

    await until(endpoint, what="the Service's endpoint: the replica's pod")
    return webhook, (accounts, rest_client), pod


async def stop_replica(cluster, webhook, client, pod) -> None:
    """The controller down: its server stopped, its pod gone (no endpoint left)."""
    await webhook.stop()
    await client[1].close()
    await client[0].__aexit__(None, None, None)
    cluster.api.remove_now(cluster.registry.get("", "v1", "pods"), cluster.api.get(
        cluster.registry.get("", "v1", "pods"), NAMESPACE, pod["metadata"]["name"]))


async def jobs_refused_and_admitted(kubectl: Kubectl) -> None:
    """kubectl apply of an invalid job is refused with the webhook's words and the field; a valid one is made."""

    from tests.e2e.conftest import QUICK, genericjob

    bad = genericjob("bad", {"worker": 1}, script=QUICK, successRules=[{"chief": [0]}])
    refused = await kubectl.run("apply", "-f", "-", stdin=json.dumps(bad))
    # A 422 with its causes: kubectl words it as it does the CRD's own refusals (docs/user-guide.md), the field first.
    assert (refused.code, refused.err) == (1, 'The GenericJob "bad" is invalid: spec.successRules[0]: replica type '
                                              '"chief" is not in spec.replicaSpecs\n'), refused.err
    await kubectl.ok("apply", "-f", "-", stdin=json.dumps(genericjob("good", {"worker": 1}, script=QUICK)))


async def ca_bundles(kubectl: Kubectl) -> list[str]:
    got = await kubectl.ok("get", "validatingwebhookconfiguration", NAME, "-o",
                           "jsonpath={range .webhooks[*]}{.clientConfig.caBundle}{'\\n'}{end}")
    return [line for line in got.out.splitlines() if line]


async def test_the_installed_webhook_refuses_until_the_controller_is_down_then_fail_or_ignore(routed, tmp_path,
                                                                                              base):
    """`kubectl apply -k manifests/`, then, as a cluster would: no replica yet, every job create is refused with
    the API server's "failed calling webhook" (failurePolicy Fail); a replica up (its own certificate, the caBundle
    it sets, the Service's endpoint), an invalid job is refused naming the field and a valid one is made; the
    replica down, Fail refuses again; with the page's Ignore overlay applied, jobs are admitted while it is down."""
    cluster = routed

    from controller.runtime.webhook_certs import CertKeeperConfig
    from controller.runtime.webhook_server import WebhookConfig
    from informers.backoff import BackoffPolicy
    from tests.e2e.conftest import CRDS, QUICK, genericjob

    from .subprocesses import until

    kubectl = Kubectl(cluster, tmp_path)
    await kubectl.ok("apply", "-k", str(ROOT / "manifests"))
    cluster.apply_crds(CRDS)  # served at once (kubectl's apply made them too)
    job = json.dumps(genericjob("early", {"worker": 1}, script=QUICK))
    down = await kubectl.run("apply", "-f", "-", stdin=job)
    assert down.code != 0
    assert ('Internal error occurred: failed calling webhook "genericjobs.batch.tensorstack.dev": failed to call '
            'webhook: Post "https://genericjob-controller-webhook.genericjob-system.svc:443/'
            'validate-batch-tensorstack-dev-v1beta1-genericjob?timeout=10s": no endpoints available for service '
            '"genericjob-controller-webhook"') in down.err, down.err  # as docs/operations.md shows it

    keeper = CertKeeperConfig(namespace=NAMESPACE, poll=0.2, backoff=BackoffPolicy(initial=0.05, cap=0.2))
    webhook, client, pod = await start_replica(cluster, base, WebhookConfig(port=0, host="127.0.0.1", keeper=keeper))
    configurations = cluster.registry.get("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")

    def bundled() -> bool:  # read in the server's store: a kubectl per poll would only cost time
        stored = cluster.api.get(configurations, None, NAME)
        return webhook.unready() is None and all(w["clientConfig"].get("caBundle") for w in stored["webhooks"])

    try:
        await until(bundled, what="the replica serving and every caBundle set")
        assert len(await ca_bundles(kubectl)) == len(KINDS)  # as kubectl reads them
        await jobs_refused_and_admitted(kubectl)
    finally:
        await stop_replica(cluster, webhook, client, pod)

    down = await kubectl.run("apply", "-f", "-", stdin=job)
    assert down.code != 0 and 'failed calling webhook "genericjobs.batch.tensorstack.dev"' in down.err, down.err
    # docs/operations.md's overlay: Ignore, over the installed objects (the caBundle the controller set is kept).
    overlay = tmp_path / "overlays" / "webhook-ignore"
    overlay.mkdir(parents=True)
    shutil.copytree(ROOT / "manifests", tmp_path / "manifests", symlinks=True)
    (overlay / "kustomization.yaml").write_text(ignore_overlay())
    await kubectl.ok("apply", "-k", str(overlay))
    assert len(await ca_bundles(kubectl)) == len(KINDS)
    await kubectl.ok("apply", "-f", "-", stdin=job)  # admitted: the controller would judge it


async def test_the_cert_manager_install_serves_the_certificate_the_api_server_trusts(routed, tmp_path, verified):
    """overlays/cert-manager: the Secret cert-manager issues for the Certificate (self-signed, its names) in the
    directory the Deployment mounts, the caBundle as the cainjector writes it (the Secret's ca.crt): the API server
    verifies the replica's certificate for the Service's name, and the webhook refuses and admits as above."""
    cluster = routed
    import base64

    from controller.runtime.certs import CERT_FILE, KEY_FILE
    from controller.runtime.webhook_server import WebhookConfig

    from .packaging_support import PROMETHEUS_OPERATOR_CRDS
    from .subprocesses import until
    from .test_scraping import CERT_MANAGER_CRDS, issued

    kubectl = Kubectl(cluster, tmp_path)
    await kubectl.ok("apply", "-f", "-", stdin=yaml.safe_dump_all(PROMETHEUS_OPERATOR_CRDS + CERT_MANAGER_CRDS))
    await kubectl.ok("apply", "-k", str(OVERLAYS / "cert-manager"))
    cert, key = issued(find(verified, "Certificate", SERVING_CERT)["spec"]["dnsNames"])
    mounted = tmp_path / "webhook-certs"
    mounted.mkdir()
    (mounted / CERT_FILE).write_bytes(cert)
    (mounted / KEY_FILE).write_bytes(key)
    # cert-manager's cainjector, as the configuration's annotation asks: ca.crt (the certificate itself) everywhere.
    bundle = base64.b64encode(cert).decode()
    inject = [{"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle} for i in range(3)]
    await kubectl.ok("patch", "validatingwebhookconfiguration", NAME, "--type=json", "-p", json.dumps(inject))
    webhook, client, pod = await start_replica(cluster, verified,
                                               WebhookConfig(port=0, host="127.0.0.1", cert_dir=str(mounted)))
    try:
        await until(lambda: webhook.unready() is None, what="the mounted certificate served")
        await jobs_refused_and_admitted(kubectl)
    finally:
        await stop_replica(cluster, webhook, client, pod)
