"""Service-account tokens a relying party can verify, as a kube-apiserver's (issue 35).

`kubectl create token` answers an RS256 JWT whose `kid` names a key of the JWKS the server publishes
at /openid/v1/jwks, found through /.well-known/openid-configuration; the signature is checked here with
`cryptography` (dev only; localcluster signs without it). Forgeries are refused with 401: alg `none`,
HS256 with the public key as the HMAC secret (the classic algorithm confusion), a claim changed under
a real signature, a real signature from another key, an expired token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from localcluster.auth.signing_key import RsaKey

from .test_auth import As

ISSUER = "https://kubernetes.default.svc.cluster.local"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def decode(token: str) -> tuple[dict, dict, bytes]:
    header, payload, signature = token.split(".")
    return json.loads(unb64(header)), json.loads(unb64(payload)), unb64(signature)


def public_key(jwk: dict) -> rsa.RSAPublicKey:
    n, e = (int.from_bytes(unb64(jwk[field]), "big") for field in ("n", "e"))
    return rsa.RSAPublicNumbers(e, n).public_key()


async def raw(http, cluster, path: str, token: str | None) -> tuple[int, dict, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with http.get(cluster.url + path, headers=headers) as r:
        return r.status, dict(r.headers), await r.read()


async def test_a_created_token_verifies_against_the_published_keys(kubectl, cluster, namespace, http):
    await kubectl.ok("create", "serviceaccount", "robot")
    token = (await kubectl.ok("create", "token", "robot", "--duration=20m")).out.strip()
    header, claims, signature = decode(token)
    assert header == {"alg": "RS256", "kid": header["kid"]}

    # The token itself may read the discovery documents (system:serviceaccounts' bootstrap binding).
    code, headers, body = await raw(http, cluster, "/.well-known/openid-configuration", token)
    assert code == 200 and headers["Content-Type"] == "application/json"
    assert headers["Cache-Control"] == "public, max-age=3600"
    config = json.loads(body)
    assert config == {"issuer": ISSUER, "jwks_uri": cluster.url + "/openid/v1/jwks",
                      "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
                      "id_token_signing_alg_values_supported": ["RS256"]}
    assert list(config) == ["issuer", "jwks_uri", "response_types_supported", "subject_types_supported",
                            "id_token_signing_alg_values_supported"]
    code, headers, body = await raw(http, cluster, "/openid/v1/jwks", token)
    assert code == 200 and headers["Content-Type"] == "application/jwk-set+json"
    assert headers["Cache-Control"] == "public, max-age=3600"
    [jwk] = json.loads(body)["keys"]
    assert list(jwk) == ["use", "kty", "kid", "alg", "n", "e"]
    assert (jwk["use"], jwk["kty"], jwk["alg"], jwk["e"], jwk["kid"]) == ("sig", "RSA", "RS256", "AQAB", header["kid"])
    key = public_key(jwk)
    assert key.key_size == 2048
    # The kid is the apiserver's: the unpadded base64url SHA-256 of the key's SubjectPublicKeyInfo DER.
    spki = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert jwk["kid"] == b64(hashlib.sha256(spki).digest())
    signed = token.rsplit(".", 1)[0].encode()
    key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())  # raises InvalidSignature if not
    with pytest.raises(InvalidSignature):
        key.verify(signature, signed + b"x", padding.PKCS1v15(), hashes.SHA256())

    account = cluster.store.get(("", "serviceaccounts"), (namespace, "robot"))["metadata"]
    assert sorted(claims) == ["aud", "exp", "iat", "iss", "jti", "kubernetes.io", "nbf", "sub"]
    assert (claims["iss"], claims["sub"], claims["aud"]) == (ISSUER, f"system:serviceaccount:{namespace}:robot",
                                                             [ISSUER])
    assert claims["iat"] == claims["nbf"] and claims["exp"] - claims["iat"] == 1200
    assert abs(claims["iat"] - time.time()) < 60 and len(claims["jti"]) == 36
    assert claims["kubernetes.io"] == {"namespace": namespace,
                                       "serviceaccount": {"name": "robot", "uid": account["uid"]}}
    assert (await As(http, cluster, token).call("GET", "/apis"))[0] == 200


async def test_issuer_discovery_is_for_service_accounts_and_only_read(cluster, http):
    sa = cluster.service_account_token("team", "reader")
    for path in ("/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks",
                 "/openid/v1/jwks/"):
        assert (await raw(http, cluster, path, sa))[0] == 200, path
        code, _, body = await raw(http, cluster, path, None)  # anonymous: not bound to the ClusterRole
        assert code == 403 and json.loads(body)["message"] == \
            f'forbidden: User "system:anonymous" cannot get path "{path}"', body
    someone = cluster.add_token("u-someone", "someone")
    assert (await raw(http, cluster, "/openid/v1/jwks", someone))[0] == 403
    async with http.post(cluster.url + "/openid/v1/jwks", headers=cluster.admin_headers) as r:
        assert r.status == 405


async def test_forged_tokens_are_401(kubectl, cluster, namespace, http):
    await kubectl.ok("create", "serviceaccount", "robot")
    token = (await kubectl.ok("create", "token", "robot")).out.strip()
    header, claims, _ = decode(token)
    _, _, body = await raw(http, cluster, "/openid/v1/jwks", cluster.admin_token)
    [jwk] = json.loads(body)["keys"]
    pem = public_key(jwk).public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    admin_claims = {**claims, "sub": "system:serviceaccount:kube-system:default"}

    def compact(head: dict, body: dict, sign) -> str:
        signing_input = f"{b64(json.dumps(head).encode())}.{b64(json.dumps(body).encode())}"
        return f"{signing_input}.{b64(sign(signing_input.encode()))}"

    other = RsaKey.from_der(rsa.generate_private_key(65537, 2048).private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    forged = {
        "alg none": compact({"alg": "none"}, claims, lambda _: b""),
        "alg None, kid kept": compact({"alg": "None", "kid": header["kid"]}, claims, lambda _: b""),
        "HS256 keyed with the public key": compact({"alg": "HS256", "kid": header["kid"]}, claims,
                                                   lambda data: hmac.new(pem, data, hashlib.sha256).digest()),
        "HS256 keyed with the JWK's n": compact({"alg": "HS256"}, claims,
                                                lambda data: hmac.new(jwk["n"].encode(), data, "sha256").digest()),
        "a claim changed": ".".join([token.split(".")[0], b64(json.dumps(admin_claims).encode()),
                                     token.split(".")[2]]),
        "another key": compact(header, claims, other.sign),
        "another key, its own kid": compact({"alg": "RS256", "kid": other.kid}, claims, other.sign),
        "no signature": token.rsplit(".", 1)[0] + ".",
        "not base64": token[:-3] + "!!!",
    }
    for what, bad in forged.items():
        code, body = await As(http, cluster, bad).call("GET", "/apis")
        assert (code, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized"), what
    # Signed by the server's own key, but expired, or not yet valid: refused as well.
    issuer = cluster.access.authenticator.jwt
    now = int(time.time())
    for what, times in {"expired": {"iat": now - 7200, "nbf": now - 7200, "exp": now - 3600},
                        "not yet valid": {"iat": now + 3600, "nbf": now + 3600, "exp": now + 7200}}.items():
        code, _ = await As(http, cluster, issuer.sign({**claims, **times})).call("GET", "/apis")
        assert code == 401, what
    # The same request done right: the real token, and one signed by the server for the real claims.
    assert (await As(http, cluster, token).call("GET", "/apis"))[0] == 200
    assert (await As(http, cluster, issuer.sign(claims)).call("GET", "/apis"))[0] == 200
