"""The envtest control plane's private PKI, made in memory with `cryptography` (already a dependency): a CA, the
API server's serving certificate signed by it for the loopback names, and the service-account signing key."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def write_pki(directory: Path) -> dict[str, Path]:
    """Write ca.crt, server.crt/server.key (127.0.0.1, localhost) and sa.key/sa.pub into `directory`; their paths."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("envtest-ca")).issuer_name(_name("envtest-ca"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=7))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .sign(ca_key, hashes.SHA256()))
    server_key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    server = (x509.CertificateBuilder().subject_name(_name("kube-apiserver")).issuer_name(ca.subject)
              .public_key(server_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=7))
              .add_extension(x509.SubjectAlternativeName(names), critical=False)
              .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .sign(ca_key, hashes.SHA256()))
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    files = {
        "ca": (directory / "ca.crt", ca.public_bytes(serialization.Encoding.PEM)),
        "cert": (directory / "server.crt", server.public_bytes(serialization.Encoding.PEM)),
        "key": (directory / "server.key", _key_pem(server_key)),
        "sa_key": (directory / "sa.key", _key_pem(sa_key)),
        "sa_pub": (directory / "sa.pub", sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)),
    }
    for path, content in files.values():
        path.write_bytes(content)
        path.chmod(0o600)
    return {name: path for name, (path, _) in files.items()}
