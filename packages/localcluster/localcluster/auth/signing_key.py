"""The service-account issuer's RSA key: RS256 signatures a relying party verifies against the published JWKS.

kube-apiserver signs service-account tokens with `--service-account-signing-key-file` (RSA: RS256, or
ECDSA) and publishes the public half at /openid/v1/jwks. localcluster does the same with a 2048-bit RSA
key made at start by the openssl command (as tls.py makes the serving certificate; written when the `local`
install left `cryptography` out, which the client-certificate CA now needs), and RSASSA-PKCS1-v1_5 over
SHA-256 is a few lines of integer arithmetic once the key's numbers are read from its DER. Signing is
blinded (no timing of the private exponent leaks through `pow`); verifying compares the whole encoded
message in constant time.

One key per process, made at the first cluster's start (as the serving certificate): a token of one
cluster that verifies on another of the same process still names a ServiceAccount uid that only its
own cluster has, so it authenticates nowhere else.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from .host_commands import openssl

# DER of DigestInfo for SHA-256 (RFC 8017 section 9.2, note 1): what precedes the hash in EMSA-PKCS1-v1_5.
SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
# AlgorithmIdentifier rsaEncryption with NULL parameters, for the SubjectPublicKeyInfo the key id hashes.
RSA_ENCRYPTION = bytes.fromhex("300d06092a864886f70d0101010500")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _der_read(data: bytes, at: int) -> tuple[int, bytes, int]:
    """(tag, contents, offset after) of the DER element at `at`."""
    tag, length = data[at], data[at + 1]
    at += 2
    if length & 0x80:
        size = length & 0x7F
        length = int.from_bytes(data[at:at + size], "big")
        at += size
    return tag, data[at:at + length], at + length


def _der_children(data: bytes) -> list[tuple[int, bytes]]:
    out, at = [], 0
    while at < len(data):
        tag, contents, at = _der_read(data, at)
        out.append((tag, contents))
    return out


def _der(tag: int, contents: bytes) -> bytes:
    n = len(contents)
    length = bytes([n]) if n < 0x80 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes(
        (n.bit_length() + 7) // 8, "big")
    return bytes([tag]) + length + contents


def _der_int(value: int) -> bytes:
    return _der(0x02, value.to_bytes(value.bit_length() // 8 + 1, "big"))


@dataclass(frozen=True)
class RsaKey:
    n: int
    e: int
    d: int
    p: int
    q: int

    @classmethod
    def from_der(cls, der: bytes) -> RsaKey:
        """The numbers of an unencrypted RSA private key in DER: PKCS#1 (what `openssl genpkey -outform DER`
        writes) or PKCS#8 (the RSAPrivateKey inside its OCTET STRING)."""
        _, outer, _ = _der_read(der, 0)
        children = _der_children(outer)
        if len(children) == 3 and children[1][0] == 0x30:  # PKCS#8: version, AlgorithmIdentifier, OCTET STRING
            _, outer, _ = _der_read(children[2][1], 0)
            children = _der_children(outer)
        numbers = [int.from_bytes(value, "big") for _, value in children]
        _, n, e, d, p, q = numbers[:6]
        return cls(n, e, d, p, q)

    @property
    def size(self) -> int:
        return (self.n.bit_length() + 7) // 8

    @functools.cached_property
    def public_der(self) -> bytes:
        """The SubjectPublicKeyInfo DER (x509.MarshalPKIXPublicKey)."""
        rsa_public = _der(0x30, _der_int(self.n) + _der_int(self.e))
        return _der(0x30, RSA_ENCRYPTION + _der(0x03, b"\x00" + rsa_public))

    @functools.cached_property
    def kid(self) -> str:
        """The key id the apiserver gives a key (serviceaccount.keyIDFromPublicKey): the unpadded base64url
        SHA-256 of its SubjectPublicKeyInfo DER."""
        return b64url(hashlib.sha256(self.public_der).digest())

    def jwk(self) -> dict:
        """The public key as go-jose's JSONWebKey marshals it, in its field order."""
        return {"use": "sig", "kty": "RSA", "kid": self.kid, "alg": "RS256",
                "n": b64url(self.n.to_bytes(self.size, "big")), "e": b64url(self.e.to_bytes(3, "big").lstrip(b"\0"))}

    def _encoded(self, message: bytes) -> bytes:
        """EMSA-PKCS1-v1_5 of SHA-256(message), `size` bytes long."""
        t = SHA256_DIGEST_INFO + hashlib.sha256(message).digest()
        return b"\x00\x01" + b"\xff" * (self.size - len(t) - 3) + b"\x00" + t

    def sign(self, message: bytes) -> bytes:
        """RSASSA-PKCS1-v1_5 with SHA-256 (RS256): CRT with a random blinding factor."""
        m = int.from_bytes(self._encoded(message), "big")
        while True:
            r = secrets.randbelow(self.n - 2) + 2
            try:
                r_inverse = pow(r, -1, self.n)
                break
            except ValueError:  # r shares a factor with n: as likely as guessing the key
                continue
        blinded = (m * pow(r, self.e, self.n)) % self.n
        m1, m2 = pow(blinded, self.d % (self.p - 1), self.p), pow(blinded, self.d % (self.q - 1), self.q)
        h = (pow(self.q, -1, self.p) * (m1 - m2)) % self.p
        signature = ((m2 + h * self.q) * r_inverse) % self.n
        if pow(signature, self.e, self.n) != m:  # a fault must never publish a signature that leaks the key
            raise RuntimeError("RSA signature check failed")
        return signature.to_bytes(self.size, "big")

    def verify(self, message: bytes, signature: bytes) -> bool:
        if len(signature) != self.size:
            return False
        s = int.from_bytes(signature, "big")
        if s >= self.n:
            return False
        return hmac.compare_digest(pow(s, self.e, self.n).to_bytes(self.size, "big"), self._encoded(message))


@functools.lru_cache(maxsize=1)
def issuer_key() -> RsaKey:
    """This process's service-account signing key, made by `openssl genpkey` (never written to disk)."""
    made = openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-outform", "DER", timeout=60)
    return RsaKey.from_der(made.stdout)
