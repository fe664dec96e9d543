"""The secure metrics endpoint's serving certificate: from --metrics-cert-dir, else self-signed at start.

A Secret mounted at the directory (cert-manager's, say) gives `tls.crt` and `tls.key`, the names
controller-runtime's metrics server reads. Without one the controller makes a self-signed
certificate in memory at every start, as controller-runtime does: Prometheus then scrapes with
`insecure_skip_verify` (the ServiceMonitor's `tlsConfig.insecureSkipVerify`), and the bearer
token, not the certificate, is what protects the page.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import tempfile
from pathlib import Path

CERT_FILE, KEY_FILE = "tls.crt", "tls.key"
SELF_SIGNED_DAYS = 365


class CertificateError(ValueError):
    """The certificate directory cannot be used: says which file and why."""


def server_context(cert_dir: str | None) -> ssl.SSLContext:
    """A TLS server context with the directory's key pair, or a fresh self-signed one."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_dir:
        cert, key = Path(cert_dir) / CERT_FILE, Path(cert_dir) / KEY_FILE
        for path in (cert, key):
            if not path.is_file():
                raise CertificateError(f"--metrics-cert-dir {cert_dir}: no {path.name} there (the directory must "
                                       f"hold {CERT_FILE} and {KEY_FILE}, as a kubernetes.io/tls Secret does)")
        try:
            context.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as err:
            raise CertificateError(f"--metrics-cert-dir {cert_dir}: cannot load {CERT_FILE}/{KEY_FILE}: {err}") from err
        return context
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


__all__ = ["CERT_FILE", "KEY_FILE", "CertificateError", "self_signed", "server_context"]
