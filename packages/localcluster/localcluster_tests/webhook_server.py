"""An HTTPS admission webhook server for tests of localcluster's webhook calls: a CA and a serving certificate of
its own (made with `cryptography`), an aiohttp app on 127.0.0.1 answering AdmissionReviews by path with the
test's handlers, and every review it received kept for the test to read."""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import json
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

Handler = Callable[[dict], Awaitable[dict | web.Response] | dict | web.Response]


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_ca() -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name("test-webhook-ca")).issuer_name(_name("test-webhook-ca"))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return key, cert


def make_serving(ca: tuple, names: tuple[str, ...]) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) for DNS names and IP addresses, signed by `ca`."""
    ca_key, ca_cert = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    sans: list[x509.GeneralName] = []
    for name in names:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            sans.append(x509.DNSName(name))
    cert = (x509.CertificateBuilder().subject_name(_name(names[0])).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def allow(review: dict, **response) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True, **response}}


def deny(review: dict, message: str = "", code: int | None = None, reason: str = "", causes=None, **response) -> dict:
    status: dict = {}
    if message:
        status["message"] = message
    if code is not None:
        status["code"] = code
    if reason:
        status["reason"] = reason
    if causes is not None:
        status["details"] = {"causes": causes}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": False, "status": status, **response}}


def json_patch(review: dict, operations: list) -> dict:
    patch = base64.b64encode(json.dumps(operations).encode()).decode()
    return allow(review, patch=patch, patchType="JSONPatch")


class WebhookServer:
    """`handlers[path](review)` answers; a path without a handler allows. `reviews` is [(path, review)]."""

    def __init__(self, names: tuple[str, ...] = ("127.0.0.1", "localhost"), ca: tuple | None = None) -> None:
        self.ca = ca or make_ca()
        self.names = names
        self.handlers: dict[str, Handler] = {}
        self.reviews: list[tuple[str, dict]] = []
        self.arrived = asyncio.Condition()
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def ca_bundle(self) -> str:
        """The CA as a webhook configuration's caBundle carries it (base64 of PEM)."""
        return base64.b64encode(self.ca[1].public_bytes(serialization.Encoding.PEM)).decode()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    async def start(self) -> WebhookServer:
        cert, key = make_serving(self.ca, self.names)
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "tls.crt").write_bytes(cert)
            (Path(tmp) / "tls.key").write_bytes(key)
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(Path(tmp) / "tls.crt", Path(tmp) / "tls.key")
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._serve)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        review = await request.json()
        review["_query"] = dict(request.query)
        review["_host"] = request.headers.get("Host", "")
        async with self.arrived:
            self.reviews.append((request.path, review))
            self.arrived.notify_all()
        handler = self.handlers.get(request.path)
        answer = handler(review) if handler is not None else allow(review)
        if asyncio.iscoroutine(answer):
            answer = await answer
        return answer if isinstance(answer, web.StreamResponse) else web.json_response(answer)

    def paths(self) -> list[str]:
        return [path for path, _ in self.reviews]

    def requests(self, path: str) -> list[dict]:
        return [review["request"] for p, review in self.reviews if p == path]

    async def wait_for(self, count: int, timeout: float = 10.0) -> None:
        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: len(self.reviews) >= count), timeout)
