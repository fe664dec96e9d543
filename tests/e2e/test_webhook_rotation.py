"""The webhook's certificates rotated end to end: localcluster (the API server) keeps calling the controller's
webhook successfully across renewals of its serving certificate and of its CA, with the caBundle the CertKeeper
keeps in the ValidatingWebhookConfiguration (test_webhook_certs.py checks the keeper's rounds one by one; here,
the API server's view of them). The Service and configuration are wired as `local` wires them."""

from __future__ import annotations

import asyncio
import base64
import datetime
import json

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from controller.devtools.local_webhook import CONFIGURATION, CONFIGURATIONS, call, wire
from controller.jobs.schema import admission
from controller.kinds.registry import KINDS
from controller.runtime.webhook_certs import CertKeeperConfig
from controller.runtime.webhook_server import WebhookConfig
from informers.backoff import BackoffPolicy
from tests.e2e.conftest import CRDS
from tests.program.subprocesses import until

NAMESPACE = "default"
GROUP, VERSION = "batch.tensorstack.dev", "v1beta1"


def job(name: str, **spec) -> dict:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "GenericJob", "metadata": {"name": name},
            "spec": {**spec, "replicaSpecs": [{"type": "worker", "replicas": 1, "template": {"spec": {
                "containers": [{"name": "main", "image": "ignored", "command": ["true"]}]}}}]}}


async def test_the_api_server_keeps_calling_the_webhook_across_rotations(cluster, rest_client, custom):
    cluster.apply_crds(CRDS)
    keeper = CertKeeperConfig(namespace=NAMESPACE, ca_validity=datetime.timedelta(seconds=8),
                              cert_validity=datetime.timedelta(seconds=3), poll=0.2,
                              backoff=BackoffPolicy(initial=0.05, cap=0.2))
    webhook = admission.make_webhook(rest_client, WebhookConfig(port=0, host="127.0.0.1", keeper=keeper),
                                     kinds=list(KINDS.values()))
    await webhook.start()
    try:
        await wire(rest_client, int(webhook.address.rpartition(":")[2]), namespace=NAMESPACE)

        async def served() -> tuple[bytes, bytes, set[str]]:
            secret = await call(rest_client, "GET", keeper.secret_path)
            configuration = await call(rest_client, "GET", f"{CONFIGURATIONS}/{CONFIGURATION}")
            bundle = {hook["clientConfig"].get("caBundle", "") for hook in configuration["webhooks"]}
            return base64.b64decode(secret["data"]["ca.crt"]), base64.b64decode(secret["data"]["tls.crt"]), bundle

        async def bundle_set() -> bool:
            return webhook.unready() is None and all((await served())[2])

        await until(bundle_set, what="a certificate served and the caBundle set")
        certificates, cas = set(), set()
        checked = 0
        async with asyncio.timeout(40):
            while len(certificates) < 4 or len(cas) < 2:  # three renewals of the certificate, one of the CA
                ca, certificate, bundles = await served()
                certificates.add(certificate)
                cas.add(ca)
                checked += 1
                with pytest.raises(ApiException) as refused:  # the webhook answers: its words, not a failed call
                    await custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "genericjobs",
                                                                 job(f"bad-{checked}", failureRules=[{"chief": [0]}]))
                message = json.loads(refused.value.body)["message"]
                assert refused.value.status == 422 and message.startswith(
                    'admission webhook "genericjobs.batch.tensorstack.dev" denied the request: '), message
                await custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "genericjobs",
                                                             job(f"good-{checked}"))
        assert len(bundles) == 1 and bundles.pop(), "every webhook's caBundle set, the same"
    finally:
        await webhook.stop()
