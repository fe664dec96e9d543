"""The controller's admission webhook registered with a `url` clientConfig (no Service): the API server calls it
over TLS, trusting the caBundle of the test's own PKI (tests/real/pki.py), and its refusal reaches the client in
the API server's words. On localcluster and on the real API server, which must agree."""

from __future__ import annotations

import base64

import pytest

from apimachinery.errors import ApiStatusError
from controller.devtools.local_webhook import CONFIGURATIONS, call, configuration
from controller.jobs.schema import admission
from controller.kinds.genericjob.kind import GENERICJOB
from controller.runtime.webhook_server import WebhookConfig
from tests.real.pki import write_pki

from .test_webhook_rotation import job

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)
JOBS = "/apis/batch.tensorstack.dev/v1beta1/namespaces/default/genericjobs"


def by_url(port: int, ca: bytes) -> dict:
    """The install's configuration for the GenericJob webhook, its clientConfig a url at 127.0.0.1:`port`."""
    made = configuration(kinds=[GENERICJOB], ca_bundle=ca)
    for hook in made["webhooks"]:
        service = hook["clientConfig"].pop("service")
        hook["clientConfig"]["url"] = f"https://127.0.0.1:{port}{service['path']}"
    return made


async def test_a_url_webhook_is_called_over_tls_and_its_refusal_is_the_api_servers_answer(cluster, rest_client,
                                                                                          tmp_path):
    pki = write_pki(tmp_path)  # a CA, and a serving certificate it signed for 127.0.0.1
    certs = tmp_path / "webhook"
    certs.mkdir()
    (certs / "tls.crt").write_bytes(pki["cert"].read_bytes())
    (certs / "tls.key").write_bytes(pki["key"].read_bytes())
    webhook = admission.make_webhook(None, WebhookConfig(port=0, host="127.0.0.1", cert_dir=str(certs)),
                                     kinds=[GENERICJOB])
    await webhook.start()
    made = by_url(int(webhook.address.rpartition(":")[2]), pki["ca"].read_bytes())
    try:
        stored = await call(rest_client, "POST", CONFIGURATIONS, made)
        assert base64.b64decode(stored["webhooks"][0]["clientConfig"]["caBundle"]) == pki["ca"].read_bytes()
        with pytest.raises(ApiStatusError) as refused:
            await call(rest_client, "POST", JOBS, job("bad", failureRules=[{"chief": [0]}]))
        assert refused.value.code == 422
        assert str(refused.value.message).startswith(
            f'admission webhook "{admission.webhook_name(GENERICJOB.api)}" denied the request: '), refused.value
        created = await call(rest_client, "POST", JOBS, job("good"))
        assert created["metadata"]["name"] == "good"
    finally:
        # before the webhook stops: its failurePolicy Fail would refuse every later write of a GenericJob
        await call(rest_client, "DELETE", f"{CONFIGURATIONS}/{made['metadata']['name']}")
        await webhook.stop()
