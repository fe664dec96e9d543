"""The admission webhook's certificates when the controller manages its own (no --webhook-cert-dir), as JobSet's
and Kueue's cert-controller do: a CA and the serving certificate it signs, kept in one Secret that every replica
shares, and the CA in the `caBundle` of every webhook of the ValidatingWebhookConfiguration.

    keeper = CertKeeper(rest_client, CertKeeperConfig(namespace="genericjob-system"))
    task = asyncio.create_task(keeper.run())        # serve keeper.context; ready once keeper.serving
    ...
    task.cancel()

Every replica runs the same loop, every `poll` seconds (10 s), none waiting for leadership:
1. read the Secret (`secret_name`, type kubernetes.io/tls: tls.crt, tls.key, ca.crt, ca.key); if missing, create
   it. A 409 on create means another replica made it first: it is read again and served instead;
2. renew what needs it (`renewed`, pure): a CA valid `ca_validity` (10 years) and a serving certificate valid
   `cert_validity` (1 year, never past its CA), each renewed once less than `renew_fraction` (a third) of its life
   is left; the serving certificate also when it names other DNS names, or no CA of the bundle signed it. A
   renewed CA goes first in `ca.crt`, the old one stays after it until it expires, and the serving certificate it
   signed stays in use until its own renewal: API servers given the new bundle verify it, and those still holding
   the old bundle verify the old certificate. The update carries the Secret's resourceVersion: a 409 means
   another replica renewed first, and its Secret is read at the next round (after a short back-off, never at once);
3. serve what the Secret holds (new connections get it; open ones keep theirs);
4. set the `caBundle` of every webhook of the ValidatingWebhookConfiguration (`configuration_name`) to `ca.crt`
   when it differs (a PUT with its resourceVersion; a 409 is retried the same way). A configuration that does not
   exist is logged at info, once, and looked for again at every round: the webhook may be installed off.
Every request is bounded by `request_timeout`; a failed round is retried after a back-off that grows to `poll`.
The durations are constructor arguments, so a test rotates in seconds.

RBAC this needs (manifests/ and the chart grant it, in the controller's namespace and on the one configuration):
- core `secrets`, in the controller's namespace: `create` (it cannot be limited by name), and `get`, `update`
  with resourceNames [genericjob-controller-webhook-cert];
- admissionregistration.k8s.io `validatingwebhookconfigurations`: `get`, `update` with resourceNames
  [genericjob-controller]. (No `patch`: every write is a PUT with the resourceVersion read.)

`cryptography` is imported only here, when a certificate is read or made: with --webhook-cert-dir (cert-manager's
mode, certs.CertWatcher) nothing of this runs.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import structlog

from controller.runtime.certs import CERT_FILE, KEY_FILE, ServingContext, context_from_pem, issue
from informers import ApiStatusError
from informers.backoff import Backoff, BackoffPolicy
from kubeclient.rest import TRANSIENT_ERRORS, RestClient

log = structlog.get_logger("controller.runtime.webhook_certs")

CA_CERT, CA_KEY = "ca.crt", "ca.key"
SECRET_TYPE = "kubernetes.io/tls"
CONFIGURATIONS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MANAGED_BY = {"app.kubernetes.io/managed-by": "genericjob-controller",
              "app.kubernetes.io/component": "webhook-certificate"}
_ROUND_ERRORS = (ApiStatusError, ValueError, *TRANSIENT_ERRORS)


@dataclass(frozen=True)
class CertKeeperConfig:
    namespace: str
    secret_name: str = "genericjob-controller-webhook-cert"
    service_name: str = "genericjob-controller-webhook"
    configuration_name: str = "genericjob-controller"
    ca_validity: datetime.timedelta = datetime.timedelta(days=3650)
    cert_validity: datetime.timedelta = datetime.timedelta(days=365)
    renew_fraction: float = 1 / 3  # renewed once less than this share of its life is left
    poll: float = 10.0  # seconds between rounds (the Secret re-read, the caBundle checked)
    request_timeout: float = 5.0
    # More names for the serving certificate (DNS names or IP addresses), e.g. for a webhook called by URL.
    extra_names: tuple[str, ...] = ()
    backoff: BackoffPolicy = field(default_factory=lambda: BackoffPolicy(initial=0.5, cap=10.0, jitter=0.5))

    @property
    def dns_names(self) -> list[str]:
        """The Service's names, as the API server dials it (`<service>.<namespace>.svc`), plus the extra ones."""
        service = f"{self.service_name}.{self.namespace}.svc"
        return [service, f"{service}.cluster.local", *self.extra_names]

    @property
    def secret_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/secrets/{self.secret_name}"


# --- what the Secret should hold (pure) --------------------------------------------------------------------------


def renewed(data: dict[str, bytes], config: CertKeeperConfig, now: datetime.datetime) -> dict[str, bytes] | None:
    """The Secret's new data (every key, PEM), or None when what it holds is good: see the module's doc."""
    from cryptography import x509

    ca_cert, ca_key, others = _current_ca(data, now, config.renew_fraction)
    if ca_cert is None:
        ca_pem, ca_key = issue(f"{config.service_name}-ca@{int(now.timestamp())}", (), config.ca_validity, ca=True,
                               backdate=_backdate(config.ca_validity))
        ca_cert = x509.load_pem_x509_certificate(ca_pem)
    bundle = [ca_cert, *(c for c in others if c.not_valid_after_utc > now and c != ca_cert)]
    bundle_pem = b"".join(_pem(c) for c in bundle)
    tls_cert, tls_key = data.get(CERT_FILE, b""), data.get(KEY_FILE, b"")
    if not _serving_ok(tls_cert, tls_key, bundle, config, now):
        tls_cert, tls_key = issue(config.service_name, _dns(config.dns_names), config.cert_validity,
                                  ips=_ips(config.dns_names), issuer=(_pem(ca_cert), ca_key),
                                  not_after=ca_cert.not_valid_after_utc, backdate=_backdate(config.cert_validity))
    new = {CERT_FILE: tls_cert, KEY_FILE: tls_key, CA_CERT: bundle_pem, CA_KEY: ca_key}
    return None if all(data.get(key) == value for key, value in new.items()) else new


def _current_ca(data: dict[str, bytes], now: datetime.datetime, fraction: float):
    """(the signing CA, its key PEM, the other CA certificates of ca.crt); the CA None when it must be made anew
    (missing, not matching its key, or due for renewal: the old one then stays among the others)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        certs = [cert for cert in x509.load_pem_x509_certificates(data.get(CA_CERT, b"")) if _is_ca(cert)]
    except ValueError:
        certs = []
    try:
        key = serialization.load_pem_private_key(data.get(CA_KEY, b""), password=None)
    except (ValueError, TypeError):
        return None, b"", certs
    if not certs or key.public_key() != certs[0].public_key() or _due(certs[0], now, fraction):
        return None, b"", certs
    return certs[0], data[CA_KEY], certs[1:]


def _is_ca(cert) -> bool:
    from cryptography import x509

    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return False


def _serving_ok(cert_pem: bytes, key_pem: bytes, bundle: list, config: CertKeeperConfig,
                now: datetime.datetime) -> bool:
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization

    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        key = serialization.load_pem_private_key(key_pem, password=None)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, TypeError, x509.ExtensionNotFound):
        return False
    wanted = set(_dns(config.dns_names)), set(_ips(config.dns_names))
    have = set(names.get_values_for_type(x509.DNSName)), {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    if key.public_key() != cert.public_key() or have != wanted or _due(cert, now, config.renew_fraction):
        return False
    for ca in bundle:
        try:
            cert.verify_directly_issued_by(ca)
            return True
        except (ValueError, TypeError, InvalidSignature):
            continue
    return False


def _backdate(validity: datetime.timedelta) -> datetime.timedelta:
    """Valid from a little before now, for clocks a little behind: five minutes, a tenth of a short validity."""
    return min(datetime.timedelta(minutes=5), validity / 10)


def _due(cert, now: datetime.datetime, fraction: float) -> bool:
    """Less than `fraction` of the certificate's life left (or not valid yet: a clock that went back)."""
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return now < start or (end - now) < (end - start) * fraction


def _pem(cert) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _is_ip(name: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _dns(names: Sequence[str]) -> list[str]:
    return [name for name in names if not _is_ip(name)]


def _ips(names: Sequence[str]) -> list[str]:
    import ipaddress

    return [str(ipaddress.ip_address(name)) for name in names if _is_ip(name)]


# --- the loop ----------------------------------------------------------------------------------------------------


class CertKeeper:
    """Keeps the Secret, serves it (`context`, `serving`) and sets the caBundle; see the module's doc."""

    def __init__(self, rest: RestClient, config: CertKeeperConfig,
                 now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC)) -> None:
        self.api, self.config, self.now = rest, config, now
        self._context = ServingContext()
        self._served = ""  # a digest of the pair served
        self._backoff = Backoff(config.backoff)
        self._said_missing = False
        self._poked = asyncio.Event()
        self.bundle = b""  # ca.crt as last read: what the caBundle should be
        self.rounds = 0  # completed rounds, for tests and logs

    @property
    def context(self):
        """The listener's TLS context (new connections get the pair served last)."""
        return self._context.context

    @property
    def serving(self) -> bool:
        return self._context.serving

    async def run(self) -> None:
        """Round after round until cancelled; `poke()` starts the next one at once."""
        while True:
            delay = await self.round()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poked.wait(), delay)
            self._poked.clear()

    def poke(self) -> None:
        """Read the Secret again now (a test, or someone who knows it changed), not at the next poll."""
        self._poked.set()

    async def round(self) -> float:
        """One round (read, renew, serve, caBundle); the seconds to wait before the next one."""
        try:
            data = await self._ensure_secret()
            if data is not None:
                self._serve(data)
                await self._ensure_ca_bundle(data[CA_CERT])
        except Exception as err:  # whatever it is, the next round tries again: never a dead loop
            delay = self._backoff.next_delay()
            conflict = isinstance(err, ApiStatusError) and err.code == 409
            (log.info if conflict else log.warning)(
                "another replica wrote the webhook configuration first; reading it again" if conflict else
                "cannot keep the webhook certificate; retrying", error=str(err) or type(err).__name__,
                retry_in=round(delay, 2), exc_info=not isinstance(err, _ROUND_ERRORS))
            return min(delay, self.config.poll)
        self.rounds += 1
        return self.config.poll

    async def _ensure_secret(self) -> dict[str, bytes] | None:
        """The Secret's data once it holds what it should (written by us if needed). None after a 409: read at
        the next round."""
        secret = await self._get(self.config.secret_path)
        data = _decode((secret or {}).get("data"))
        new = renewed(data, self.config, self.now())
        if new is None:
            return data
        what = "created" if secret is None else "renewed"
        try:
            written = await (self._create(new) if secret is None else self._update(secret, new))
        except ApiStatusError as err:
            if err.code != 409:
                raise
            # Another replica made or renewed it first: serve theirs, read (after the round's short wait).
            log.info("another replica wrote the webhook certificate first", operation=what)
            return await self._after_conflict()
        log.info(f"{what} the webhook certificate", name=f"{self.config.namespace}/{self.config.secret_name}",
                 **_describe(new))
        return _decode(written.get("data")) or new

    async def _after_conflict(self) -> dict[str, bytes] | None:
        await asyncio.sleep(self._backoff.next_delay())
        data = _decode(((await self._get(self.config.secret_path)) or {}).get("data"))
        return data if renewed(data, self.config, self.now()) is None else None

    def _serve(self, data: dict[str, bytes]) -> None:
        digest = hashlib.sha256(data[CERT_FILE] + data[KEY_FILE]).hexdigest()
        if digest == self._served:
            return
        self._context.serve(context_from_pem(data[CERT_FILE], data[KEY_FILE]))
        self._served = digest
        log.info("serving the webhook certificate", **_describe(data))

    async def _ensure_ca_bundle(self, bundle: bytes) -> None:
        self.bundle = bundle
        name = self.config.configuration_name
        configuration = await self._get(f"{CONFIGURATIONS}/{name}")
        if configuration is None:
            if not self._said_missing:
                log.info("no ValidatingWebhookConfiguration to give the CA to (the webhook may be installed off); "
                         "looking again at every round", name=name)
                self._said_missing = True
            return
        self._said_missing = False
        wanted = base64.b64encode(bundle).decode()
        webhooks = configuration.get("webhooks") or []
        stale = [hook.get("name") for hook in webhooks if (hook.get("clientConfig") or {}).get("caBundle") != wanted]
        if not stale:
            return
        for hook in webhooks:
            hook.setdefault("clientConfig", {})["caBundle"] = wanted
        await self._request("PUT", f"{CONFIGURATIONS}/{name}", configuration)
        log.info("set the caBundle of the webhooks", configuration=name, webhooks=",".join(map(str, stale)))

    # --- requests ------------------------------------------------------------------------------------------------

    async def _get(self, path: str) -> dict | None:
        try:
            return await self._request("GET", path)
        except ApiStatusError as err:
            if err.code == 404:
                return None
            raise

    async def _create(self, data: dict[str, bytes]) -> dict:
        body = {"apiVersion": "v1", "kind": "Secret", "type": SECRET_TYPE,
                "metadata": {"name": self.config.secret_name, "namespace": self.config.namespace,
                             "labels": dict(MANAGED_BY)},
                "data": _encode(data)}
        return await self._request("POST", f"/api/v1/namespaces/{self.config.namespace}/secrets", body)

    async def _update(self, secret: dict, data: dict[str, bytes]) -> dict:
        """A PUT with the resourceVersion read: 409 when another replica wrote it since."""
        return await self._request("PUT", self.config.secret_path, {**secret, "data": _encode(data)})

    async def _request(self, method: str, path: str, body: dict | None = None) -> dict:
        async with asyncio.timeout(self.config.request_timeout):
            return await self.api.call(method, path, body, timeout=self.config.request_timeout + 1.0) or {}


def _decode(data) -> dict[str, bytes]:
    if not isinstance(data, dict):
        return {}
    decoded = {}
    for key, value in data.items():
        try:
            decoded[key] = base64.b64decode(value or "", validate=True)
        except (ValueError, TypeError):
            decoded[key] = b""
    return decoded


def _encode(data: dict[str, bytes]) -> dict[str, str]:
    return {key: base64.b64encode(value).decode() for key, value in data.items()}


def _describe(data: dict[str, bytes]) -> dict:
    """The serving certificate's and the CAs' expiry, for the log line."""
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(data[CERT_FILE])
        cas = x509.load_pem_x509_certificates(data[CA_CERT])
    except (KeyError, ValueError):
        return {}
    return {"not_after": cert.not_valid_after_utc.isoformat(),
            "ca_not_after": ",".join(ca.not_valid_after_utc.isoformat() for ca in cas)}


__all__ = ["CA_CERT", "CA_KEY", "CertKeeper", "CertKeeperConfig", "renewed"]
