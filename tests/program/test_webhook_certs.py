"""The webhook's own certificates (controller/runtime/webhook_certs.py) against localcluster: the Secret is made
once and shared by every replica, the caBundle of every webhook is set, the certificate is renewed (and the CA,
the old one staying in the bundle until it expires), a renewed certificate is served to new connections, and a
conflict between replicas is survived. Durations are seconds here, not years."""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import ssl

import pytest
from cryptography import x509

from controller.runtime.webhook_certs import CA_CERT, CertKeeper, CertKeeperConfig, renewed
from controller.runtime.webhook_server import WebhookServer
from informers.backoff import BackoffPolicy
from tests.program.subprocesses import until

NAMESPACE = "default"
SERVICE_NAME = "genericjob-controller-webhook"
HOST = f"{SERVICE_NAME}.{NAMESPACE}.svc"
SECRETS = f"/api/v1/namespaces/{NAMESPACE}/secrets"
CONFIGURATIONS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
HOOKS = ("genericjobs", "tensorflowtrainingjobs", "pytorchtrainingjobs")
QUICK = BackoffPolicy(initial=0.05, cap=0.2, jitter=0.2)


def keeper_config(**changes) -> CertKeeperConfig:
    return CertKeeperConfig(namespace=NAMESPACE, poll=0.2, request_timeout=5.0, backoff=QUICK, **changes)


async def call(api_client, method: str, path: str, body: dict | None = None) -> dict:
    response = await api_client.call_api(path, method, header_params={"Accept": "application/json",
                                                                      "Content-Type": "application/json"},
                                         body=body, auth_settings=["BearerToken"], _preload_content=False)
    assert response.status < 300, await response.text()
    return await response.json()


async def make_configuration(api_client) -> dict:
    hooks = [{"name": f"{plural}.batch.tensorstack.dev", "sideEffects": "None", "admissionReviewVersions": ["v1"],
              "clientConfig": {"service": {"namespace": NAMESPACE, "name": SERVICE_NAME,
                                           "path": f"/validate-batch-tensorstack-dev-v1beta1-{plural[:-1]}"}},
              "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["batch.tensorstack.dev"],
                         "apiVersions": ["v1beta1"], "resources": [plural]}]} for plural in HOOKS]
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "genericjob-controller"}, "webhooks": hooks}
    return await call(api_client, "POST", CONFIGURATIONS, body)


async def secret(api_client) -> dict:
    return await call(api_client, "GET", f"{SECRETS}/genericjob-controller-webhook-cert")


def data(stored: dict) -> dict[str, bytes]:
    return {key: base64.b64decode(value) for key, value in stored["data"].items()}


async def ca_bundles(api_client) -> list[bytes]:
    configuration = await call(api_client, "GET", f"{CONFIGURATIONS}/genericjob-controller")
    return [base64.b64decode(hook["clientConfig"].get("caBundle", "")) for hook in configuration["webhooks"]]


async def served(port: int, ca: bytes) -> bytes:
    """The certificate a new connection gets, verified against `ca` for the Service's name."""
    context = ssl.create_default_context(cadata=ca.decode())
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname=HOST)
    try:
        return writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()


def der(pem: bytes) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


async def test_the_secret_is_made_and_the_ca_bundle_of_every_webhook_set(api_client, rest_client):
    await make_configuration(api_client)
    keeper = CertKeeper(rest_client, keeper_config())
    assert not keeper.serving
    assert await keeper.round() == keeper.config.poll and keeper.serving
    stored = await secret(api_client)
    assert stored["type"] == "kubernetes.io/tls" and set(stored["data"]) == {"tls.crt", "tls.key", "ca.crt", "ca.key"}
    held = data(stored)
    cert = x509.load_pem_x509_certificate(held["tls.crt"])
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [HOST, f"{HOST}.cluster.local"]
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == datetime.timedelta(days=365, minutes=5)
    [ca] = x509.load_pem_x509_certificates(held["ca.crt"])
    assert ca.not_valid_after_utc - ca.not_valid_before_utc == datetime.timedelta(days=3650, minutes=5)
    cert.verify_directly_issued_by(ca)
    assert await ca_bundles(api_client) == [held["ca.crt"]] * 3
    server = WebhookServer({})
    await server.start("127.0.0.1", 0, keeper.context)
    try:
        assert await served(int(server.address.rpartition(":")[2]), held["ca.crt"]) == der(held["tls.crt"])
    finally:
        await server.stop()
    # Nothing to do on the next round: no write.
    version = stored["metadata"]["resourceVersion"]
    await keeper.round()
    assert (await secret(api_client))["metadata"]["resourceVersion"] == version


async def test_a_second_replica_serves_the_same_secret_without_writing_it(api_client, rest_client):
    first = CertKeeper(rest_client, keeper_config())
    await first.round()
    stored = await secret(api_client)
    second = CertKeeper(rest_client, keeper_config())
    await second.round()
    assert second.serving and (await secret(api_client))["metadata"]["resourceVersion"] == \
        stored["metadata"]["resourceVersion"]
    assert second._served == first._served


async def test_replicas_starting_together_make_one_secret_and_serve_it(api_client, rest_client):
    """All find no Secret and make one; a create that loses (409) reads and serves the winner's."""
    keepers = [CertKeeper(rest_client, keeper_config()) for _ in range(3)]
    await asyncio.gather(*(keeper.round() for keeper in keepers))
    assert all(keeper.serving for keeper in keepers)
    stored = data(await secret(api_client))
    digest = hashlib.sha256(stored["tls.crt"] + stored["tls.key"]).hexdigest()
    assert {keeper._served for keeper in keepers} == {digest}


async def test_a_missing_configuration_is_looked_for_again(api_client, rest_client, caplog):
    keeper = CertKeeper(rest_client, keeper_config())
    assert await keeper.round() == keeper.config.poll and keeper.serving  # served all the same
    await keeper.round()
    await make_configuration(api_client)
    await keeper.round()
    assert await ca_bundles(api_client) == [data(await secret(api_client))[CA_CERT]] * 3


async def test_a_changed_ca_bundle_is_set_back(api_client, rest_client):
    await make_configuration(api_client)
    keeper = CertKeeper(rest_client, keeper_config())
    await keeper.round()
    configuration = await call(api_client, "GET", f"{CONFIGURATIONS}/genericjob-controller")
    configuration["webhooks"][1]["clientConfig"]["caBundle"] = base64.b64encode(b"someone else's").decode()
    await call(api_client, "PUT", f"{CONFIGURATIONS}/genericjob-controller", configuration)
    await keeper.round()
    assert await ca_bundles(api_client) == [keeper.bundle] * 3


async def test_the_certificate_is_renewed_and_served_to_new_connections(api_client, rest_client):
    await make_configuration(api_client)
    config = keeper_config(cert_validity=datetime.timedelta(seconds=6))
    keeper = CertKeeper(rest_client, config)
    task = asyncio.create_task(keeper.run())
    server = WebhookServer({})
    try:
        await until(lambda: keeper.serving, what="a certificate served")
        await server.start("127.0.0.1", 0, keeper.context)
        port = int(server.address.rpartition(":")[2])
        first = data(await secret(api_client))
        _, open_writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=ssl.create_default_context(cadata=first["ca.crt"].decode()), server_hostname=HOST)
        assert await served(port, first["ca.crt"]) == der(first["tls.crt"])

        async def renewal():
            now = data(await secret(api_client))
            return now if now["tls.crt"] != first["tls.crt"] else None

        second = await until(renewal, timeout=15, what="the certificate renewed")
        assert second["ca.crt"] == first["ca.crt"]  # the CA (ten years) stays

        async def new_connection_gets_it():
            return await served(port, second["ca.crt"]) == der(second["tls.crt"])

        await until(new_connection_gets_it, timeout=5, what="the renewed certificate served")
        # The connection opened before keeps the certificate it had.
        assert open_writer.get_extra_info("ssl_object").getpeercert(binary_form=True) == der(first["tls.crt"])
        open_writer.close()
        cert = x509.load_pem_x509_certificate(second["tls.crt"])
        life = cert.not_valid_after_utc - cert.not_valid_before_utc
        assert datetime.timedelta(seconds=6) <= life <= datetime.timedelta(seconds=8)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await server.stop()


@pytest.mark.slow  # runs long: waits for a CA's renewal, then its expiry (9 s, loaded)
async def test_a_renewed_ca_joins_the_bundle_until_the_old_one_expires(api_client, rest_client):
    await make_configuration(api_client)
    config = keeper_config(ca_validity=datetime.timedelta(seconds=9), cert_validity=datetime.timedelta(seconds=30))
    keeper = CertKeeper(rest_client, config)
    task = asyncio.create_task(keeper.run())
    try:
        await until(lambda: keeper.serving, what="a certificate served")
        first = data(await secret(api_client))
        [old_ca] = x509.load_pem_x509_certificates(first["ca.crt"])

        async def cas():
            return x509.load_pem_x509_certificates(data(await secret(api_client))["ca.crt"])

        both = await until(lambda: _when(cas(), lambda found: len(found) == 2), timeout=15, what="a second CA")
        assert both[1] == old_ca  # the new CA first, the old one after it
        bundle = data(await secret(api_client))["ca.crt"]
        await until(lambda: _when(ca_bundles(api_client), lambda got: got == [bundle] * 3), what="the caBundle")
        # The serving certificate, capped at its CA's end, is renewed by the new CA in its turn.
        def by_new_ca(held: dict) -> bool:
            try:
                x509.load_pem_x509_certificate(held["tls.crt"]).verify_directly_issued_by(both[0])
            except Exception:
                return False
            return True

        await until(lambda: _when(secret(api_client), lambda got: by_new_ca(data(got))), timeout=10,
                    what="the serving certificate signed by the new CA")
        # Once the old CA has expired it leaves the bundle.
        alone = await until(lambda: _when(cas(), lambda found: old_ca not in found), timeout=15,
                            what="the old CA dropped")
        assert alone[0].not_valid_after_utc > datetime.datetime.now(datetime.UTC)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _when(awaitable, predicate):
    value = await awaitable
    return value if predicate(value) else None


async def test_replicas_renewing_together_agree(api_client, rest_client):
    """Two replicas find the certificate due at once: one update wins, the other gets 409, reads it again and
    serves the winner's; neither writes again nor loops."""
    await make_configuration(api_client)
    config = keeper_config(cert_validity=datetime.timedelta(seconds=3))
    keepers = [CertKeeper(rest_client, config) for _ in range(2)]
    await keepers[0].round()
    first = data(await secret(api_client))
    await until(lambda: renewed(first, config, datetime.datetime.now(datetime.UTC)) is not None, timeout=10,
                what="the certificate due")
    await asyncio.gather(*(keeper.round() for keeper in keepers))
    for keeper in keepers:
        await keeper.round()
    now = data(await secret(api_client))
    assert now["tls.crt"] != first["tls.crt"]
    assert keepers[0]._served == keepers[1]._served
    assert await ca_bundles(api_client) == [now["ca.crt"]] * 3


def test_renewal_rules():
    """Pure: what makes the keeper write (module doc, step 2)."""
    config = keeper_config()
    now = datetime.datetime.now(datetime.UTC)
    made = renewed({}, config, now)
    assert made is not None and renewed(made, config, now) is None
    # Other names: a new serving certificate by the same CA.
    other = renewed(made, keeper_config(service_name="elsewhere"), now)
    assert other["ca.crt"] == made["ca.crt"] and other["tls.crt"] != made["tls.crt"]
    # A third of the life left: renewed; a bit more: kept.
    assert renewed(made, config, now + datetime.timedelta(days=365 * 2 // 3 + 2)) is not None
    assert renewed(made, config, now + datetime.timedelta(days=365 * 2 // 3 - 2)) is None
    # A key that is not the certificate's, or a CA key lost: made again.
    assert renewed({**made, "tls.key": other["tls.key"]}, config, now)["tls.crt"] != made["tls.crt"]
    assert renewed({**made, "ca.key": b""}, config, now)["ca.crt"] != made["ca.crt"]
    # Extra names (a webhook called by URL, as `local` may) are in the certificate.
    extra = renewed({}, keeper_config(extra_names=("localhost", "127.0.0.1")), now)
    cert = x509.load_pem_x509_certificate(extra["tls.crt"])
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]

