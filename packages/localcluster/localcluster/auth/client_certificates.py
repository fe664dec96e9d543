"""X.509 client-certificate authentication, as kube-apiserver's --client-ca-file: a client CA this process
makes, certificates it issues for tests (CN = the user, O = the groups), and the user a verified one stands for.

The server's TLS asks for a client certificate but does not require one (tls.py). One difference from the
apiserver: it asks with tls.RequestClientCert and verifies in its x509 authenticator, so a certificate
from an unknown CA is a 401; Python's ssl can only verify during the handshake, so here such a certificate
fails the handshake. Validity times are not checked in the handshake (X509_V_FLAG_NO_CHECK_TIME) but
here, so an expired certificate is a 401 as on the apiserver ("x509: certificate has expired"), which is
what makes a client reload its certificate.
"""

from __future__ import annotations

import datetime
import functools
import ssl

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# OpenSSL's X509_V_FLAG_NO_CHECK_TIME (Python's ssl.VerifyFlags does not name it): the handshake leaves
# notBefore/notAfter to the authenticator.
NO_CHECK_TIME = 0x200000


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


class ClientCa:
    """A CA that signs client certificates (one EC P-256 key, made in memory)."""

    def __init__(self, name: str = "localcluster-client-ca") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self.certificate = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False),
                           critical=True)
            .sign(self.key, hashes.SHA256()))

    @property
    def certificate_pem(self) -> bytes:
        return _pem(self.certificate)

    def issue(self, user: str, groups: tuple[str, ...] = (), lifetime: float = 3600.0) -> tuple[bytes, bytes]:
        """A client certificate (PEM) for `user` in `groups`, valid from now for `lifetime` seconds, and its key."""
        key = ec.generate_private_key(ec.SECP256R1())
        names = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        subject = x509.Name([*names, x509.NameAttribute(NameOID.COMMON_NAME, user)])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(self.certificate.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(seconds=1))
            .not_valid_after(now + datetime.timedelta(seconds=lifetime))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(self.key, hashes.SHA256()))
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        return _pem(cert), key_pem


@functools.cache
def client_ca() -> ClientCa:
    """This process's client CA, shared by its clusters as their serving certificate is (tls.py)."""
    return ClientCa()


def request_client_certificates(context: ssl.SSLContext, ca: ClientCa) -> None:
    """Ask for a client certificate signed by `ca`, optional (tokens still work), times checked later."""
    context.load_verify_locations(cadata=ca.certificate_pem.decode())
    context.verify_mode = ssl.CERT_OPTIONAL
    context.verify_flags = context.verify_flags | NO_CHECK_TIME


def subject_of(peercert: dict, now: float) -> tuple[str, tuple[str, ...]] | None:
    """(user, groups) of a verified peer certificate (ssl's getpeercert()), None when out of its validity
    period or without a common name (the apiserver's CommonNameUserConversion refuses an empty one)."""
    try:
        if not ssl.cert_time_to_seconds(peercert["notBefore"]) <= now <= ssl.cert_time_to_seconds(peercert["notAfter"]):
            return None
    except (KeyError, ValueError):
        return None
    user, groups = "", []
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                user = value
            elif key == "organizationName":
                groups.append(value)
    return (user, tuple(groups)) if user else None
