"""The secure metrics endpoint's serving certificate: from --metrics-cert-dir, else self-signed at start.

A Secret mounted at the directory (cert-manager's, say) gives `tls.crt` and `tls.key`, the names
controller-runtime's metrics server reads. `CertWatcher` serves them and, as controller-runtime's
certwatcher, re-reads them every few seconds: when the files' content changes (cert-manager renewed
the Secret and the kubelet swapped the volume's files), new connections get the new chain, with no
restart; connections already open keep theirs. A pair that does not load (a key written before its
certificate) is logged and counted, and the old one is served until the next read succeeds.

Without a directory the controller makes a self-signed certificate in memory at every start, as
controller-runtime does: Prometheus then scrapes with `insecure_skip_verify` (the default
ServiceMonitor's `tlsConfig.insecureSkipVerify`), and the bearer token, not the certificate, is
what protects the page. overlays/cert-manager gives the verified variant.

The admission webhook's server uses the same pieces (webhook_certs.py): `CertWatcher` on --webhook-cert-dir,
`ServingContext` (the listener's context, handing each new connection the pair served last) and `issue`
(a CA and the serving certificate it signs, when the controller manages its own).
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import ipaddress
import socket
import ssl
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import structlog
from prometheus_client import CollectorRegistry, Counter

from controller.runtime.metrics import shared

log = structlog.get_logger("controller.runtime.certs")

CERT_FILE, KEY_FILE = "tls.crt", "tls.key"
SELF_SIGNED_DAYS = 365
POLL_SECONDS = 10.0  # controller-runtime's certwatcher polls every 10 s too


class CertificateError(ValueError):
    """The certificate directory cannot be used: says which file and why."""


def _new_context() -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def _load(cert_dir: str, flag: str = "--metrics-cert-dir") -> tuple[ssl.SSLContext, str]:
    """A context holding the directory's pair, and a fingerprint of the files' content."""
    cert, key = Path(cert_dir) / CERT_FILE, Path(cert_dir) / KEY_FILE
    for path in (cert, key):
        if not path.is_file():
            raise CertificateError(f"{flag} {cert_dir}: no {path.name} there (the directory must "
                                   f"hold {CERT_FILE} and {KEY_FILE}, as a kubernetes.io/tls Secret does)")
    context = _new_context()
    try:
        fingerprint = _fingerprint(cert_dir)
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as err:
        raise CertificateError(f"{flag} {cert_dir}: cannot load {CERT_FILE}/{KEY_FILE}: {err}") from err
    return context, fingerprint


def _read_counters(registry: CollectorRegistry) -> tuple[Counter, Counter]:
    return shared(registry, "certwatcher", lambda: (
        Counter("certwatcher_read_certificate_total", "Total number of certificate reads", registry=registry),
        Counter("certwatcher_read_certificate_errors_total", "Total number of certificate read errors",
                registry=registry)))


def context_from_pem(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """A server context holding the pair (PEM); ssl.SSLError when they do not load or do not match."""
    context = _new_context()
    # The ssl module loads key pairs only from files: a private temporary directory, gone at once.
    with tempfile.TemporaryDirectory(prefix="genericjob-tls-") as tmp:
        (Path(tmp) / CERT_FILE).write_bytes(cert_pem)
        (Path(tmp) / KEY_FILE).write_bytes(key_pem)
        context.load_cert_chain(Path(tmp) / CERT_FILE, Path(tmp) / KEY_FILE)
    return context


def _fingerprint(cert_dir: str) -> str:
    """The content, not the mtime: a Secret volume swaps a symlink, and a copy may keep the old mtime."""
    digest = hashlib.sha256()
    for name in (CERT_FILE, KEY_FILE):
        digest.update((Path(cert_dir) / name).read_bytes())
    return digest.hexdigest()


class ServingContext:
    """A listener's TLS context whose pair can change: its SNI callback (called for every handshake, with or
    without SNI) hands each new connection the context of the pair `serve`d last; connections already open keep
    theirs. Until a pair is served, handshakes fail (and `serving` is False)."""

    def __init__(self, current: ssl.SSLContext | None = None) -> None:
        self._current = current
        self.context = _new_context()
        self.context.sni_callback = self._choose

    @property
    def serving(self) -> bool:
        return self._current is not None

    def serve(self, context: ssl.SSLContext) -> None:
        self._current = context

    def _choose(self, ssl_object: ssl.SSLObject, server_name: str | None, _context: ssl.SSLContext) -> int | None:
        if self._current is None:
            return ssl.ALERT_DESCRIPTION_HANDSHAKE_FAILURE  # nothing to serve yet
        ssl_object.context = self._current
        return None


class CertWatcher(ServingContext):
    """The directory's pair, served by `context` and re-read every `interval` seconds by `watch()`. `flag` and
    `what` name it in messages (--metrics-cert-dir, "metrics"; --webhook-cert-dir, "webhook")."""

    def __init__(self, cert_dir: str, interval: float = POLL_SECONDS, registry: CollectorRegistry | None = None,
                 *, flag: str = "--metrics-cert-dir", what: str = "metrics") -> None:
        self.cert_dir, self.interval, self.flag, self.what = cert_dir, interval, flag, what
        current, self._fingerprint = _load(cert_dir, flag)  # CertificateError: the program cannot start
        super().__init__(current)
        # controller-runtime's certwatcher metrics, same names: one family per registry, every watcher counts in it.
        self.reads, self.errors = (_read_counters(registry) if registry is not None else
                                   (Counter("certwatcher_read_certificate_total", "", registry=None),
                                    Counter("certwatcher_read_certificate_errors_total", "", registry=None)))

    def reload_if_changed(self) -> bool:
        """Read the files; a changed pair that loads is served from now on. True if it changed."""
        self.reads.inc()
        try:
            if _fingerprint(self.cert_dir) == self._fingerprint:
                return False
            current, self._fingerprint = _load(self.cert_dir, self.flag)
        except (OSError, CertificateError) as err:
            # A half-written pair (the key renewed before its certificate): keep serving the old one.
            self.errors.inc()
            log.error(f"cannot reload the {self.what} certificate; serving the previous one", error=str(err))
            return False
        self.serve(current)
        log.info(f"reloaded the {self.what} certificate", cert_dir=self.cert_dir)
        return True

    async def watch(self) -> None:
        """Poll until cancelled."""
        while True:
            await asyncio.sleep(self.interval)
            self.reload_if_changed()


def server_context(cert_dir: str | None) -> ssl.SSLContext:
    """A TLS server context with the directory's key pair (not reloaded: see CertWatcher), or a self-signed one."""
    if cert_dir:
        return _load(cert_dir)[0]
    return context_from_pem(*self_signed())


def self_signed(hostname: str | None = None) -> tuple[bytes, bytes]:
    """(certificate, key) in PEM: ECDSA P-256, valid a year, for this host, localhost and 127.0.0.1."""
    hostname = hostname or socket.gethostname()
    cert, key = issue(f"{hostname}@genericjob-controller", sorted({hostname, "localhost"}),
                      datetime.timedelta(days=SELF_SIGNED_DAYS), ips=("127.0.0.1", "::1"))
    return cert, key


def issue(common_name: str, dns_names: Sequence[str], validity: datetime.timedelta, *, ips: Sequence[str] = (),
          ca: bool = False, issuer: tuple[bytes, bytes] | None = None,
          not_after: datetime.datetime | None = None,
          backdate: datetime.timedelta = datetime.timedelta(minutes=5)) -> tuple[bytes, bytes]:
    """(certificate, key) in PEM, a new ECDSA P-256 key: a CA (`ca`, for signing only) or a serving certificate
    for `dns_names` and `ips`; signed by `issuer` (its certificate and key, PEM), else by itself. Valid from
    `backdate` ago (clock skew) for `validity`, and never past `not_after` (a certificate outliving its CA is
    useless)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.types import (
        CertificateIssuerPrivateKeyTypes,
        CertificateIssuerPublicKeyTypes,
    )
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    signer: CertificateIssuerPrivateKeyTypes = key
    issuer_public: CertificateIssuerPublicKeyTypes = key.public_key()
    issuer_name = name
    if issuer is not None:
        issuer_cert = x509.load_pem_x509_certificate(issuer[0])
        # The issuer's key and certificate may be of any kind PEM holds; one that cannot sign (X25519, DH...)
        # fails below with cryptography's TypeError, so they are taken as signing kinds here.
        signer = cast(CertificateIssuerPrivateKeyTypes, serialization.load_pem_private_key(issuer[1], password=None))
        issuer_name = issuer_cert.subject
        issuer_public = cast(CertificateIssuerPublicKeyTypes, issuer_cert.public_key())
    now = datetime.datetime.now(datetime.UTC)
    until = now + validity if not_after is None else min(now + validity, not_after)
    builder = (x509.CertificateBuilder()
               .subject_name(name).issuer_name(issuer_name).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - backdate)
               .not_valid_after(until)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_public), critical=False))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False), critical=True)
    else:
        builder = (builder
                   .add_extension(x509.SubjectAlternativeName(
                       [x509.DNSName(n) for n in dns_names] + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]),
                       critical=False)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
    cert = builder.sign(signer, hashes.SHA256())
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


__all__ = ["CERT_FILE", "KEY_FILE", "POLL_SECONDS", "CertWatcher", "CertificateError", "ServingContext",
           "context_from_pem", "issue", "self_signed", "server_context"]
