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
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import ipaddress
import socket
import ssl
import tempfile
from pathlib import Path

import structlog
from prometheus_client import CollectorRegistry, Counter

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


def _load(cert_dir: str) -> tuple[ssl.SSLContext, str]:
    """A context holding the directory's pair, and a fingerprint of the files' content."""
    cert, key = Path(cert_dir) / CERT_FILE, Path(cert_dir) / KEY_FILE
    for path in (cert, key):
        if not path.is_file():
            raise CertificateError(f"--metrics-cert-dir {cert_dir}: no {path.name} there (the directory must "
                                   f"hold {CERT_FILE} and {KEY_FILE}, as a kubernetes.io/tls Secret does)")
    context = _new_context()
    try:
        fingerprint = _fingerprint(cert_dir)
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as err:
        raise CertificateError(f"--metrics-cert-dir {cert_dir}: cannot load {CERT_FILE}/{KEY_FILE}: {err}") from err
    return context, fingerprint


def _fingerprint(cert_dir: str) -> str:
    """The content, not the mtime: a Secret volume swaps a symlink, and a copy may keep the old mtime."""
    digest = hashlib.sha256()
    for name in (CERT_FILE, KEY_FILE):
        digest.update((Path(cert_dir) / name).read_bytes())
    return digest.hexdigest()


class CertWatcher:
    """The directory's pair, served by `context` and re-read every `interval` seconds by `watch()`.

    `context` is the listener's: its SNI callback (called for every handshake, with or without SNI)
    hands each new connection the context of the last pair that loaded.
    """

    def __init__(self, cert_dir: str, interval: float = POLL_SECONDS, registry: CollectorRegistry | None = None
                 ) -> None:
        self.cert_dir, self.interval = cert_dir, interval
        self._current, self._fingerprint = _load(cert_dir)  # CertificateError: the program cannot start
        self.context = _new_context()
        self.context.load_cert_chain(Path(cert_dir) / CERT_FILE, Path(cert_dir) / KEY_FILE)
        self.context.sni_callback = self._choose
        # controller-runtime's certwatcher metrics, same names.
        self.reads = Counter("certwatcher_read_certificate_total", "Total number of certificate reads",
                             registry=registry)
        self.errors = Counter("certwatcher_read_certificate_errors_total",
                              "Total number of certificate read errors", registry=registry)

    def _choose(self, ssl_object: ssl.SSLObject, server_name: str | None, _context: ssl.SSLContext) -> None:
        ssl_object.context = self._current

    def reload_if_changed(self) -> bool:
        """Read the files; a changed pair that loads is served from now on. True if it changed."""
        self.reads.inc()
        try:
            if _fingerprint(self.cert_dir) == self._fingerprint:
                return False
            self._current, self._fingerprint = _load(self.cert_dir)
        except (OSError, CertificateError) as err:
            # A half-written pair (the key renewed before its certificate): keep serving the old one.
            self.errors.inc()
            log.error("cannot reload the metrics certificate; serving the previous one", error=str(err))
            return False
        log.info("reloaded the metrics certificate", cert_dir=self.cert_dir)
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
    context = _new_context()
    cert_pem, key_pem = self_signed()
    # The ssl module loads key pairs only from files: a private temporary directory, gone at once.
    with tempfile.TemporaryDirectory(prefix="genericjob-metrics-") as tmp:
        (Path(tmp) / CERT_FILE).write_bytes(cert_pem)
        (Path(tmp) / KEY_FILE).write_bytes(key_pem)
        context.load_cert_chain(Path(tmp) / CERT_FILE, Path(tmp) / KEY_FILE)
    return context


def self_signed(hostname: str | None = None) -> tuple[bytes, bytes]:
    """(certificate, key) in PEM: ECDSA P-256, valid a year, for this host, localhost and 127.0.0.1."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    hostname = hostname or socket.gethostname()
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{hostname}@genericjob-controller")])
    now = datetime.datetime.now(datetime.UTC)
    names = sorted({hostname, "localhost"})
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))  # clock skew
            .not_valid_after(now + datetime.timedelta(days=SELF_SIGNED_DAYS))
            .add_extension(x509.SubjectAlternativeName(
                [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                    x509.IPAddress(ipaddress.ip_address("::1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


__all__ = ["CERT_FILE", "KEY_FILE", "POLL_SECONDS", "CertWatcher", "CertificateError", "self_signed", "server_context"]
