"""Service-account JWTs as kube-apiserver issues and validates them, and the issuer's OIDC discovery documents.

Issuing (pkg/serviceaccount/jwt.go): header `{"alg":"RS256","kid":KID}`, the claims TokenRequest
builds (iss, sub, aud, exp, iat, nbf, jti and `kubernetes.io`), signed with the issuer key
(signing_key.py). Validating is what the apiserver's service-account authenticator does, in order:

- a token that is not a compact JWS, or whose unverified `iss` is not this issuer, is not a
  service-account token at all (another authenticator's, here none: 401);
- only the asymmetric algorithms go-jose is asked to accept: `none`, HS256 (the classic confusion of
  signing with the public key as an HMAC secret) and every other `alg` fail before any key is tried;
  the signature must verify with the issuer's public key;
- the audiences must meet the API server's, and exp/nbf/iat hold with go-jose's one-minute leeway;
- the ServiceAccount named must exist with the claimed uid, and so must a bound Pod, Secret or Node
  (a token dies with what it is bound to: nothing is remembered per token, as on the real server).

OIDC discovery (pkg/serviceaccount/openidmetadata.go, pkg/routes/openidmetadata.go): the configuration
at /.well-known/openid-configuration (application/json) and the key set at /openid/v1/jwks
(application/jwk-set+json), both `Cache-Control: public, max-age=3600`; the bootstrap policy lets
system:serviceaccounts read them (policy.py, system:service-account-issuer-discovery).
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable
from datetime import datetime

import orjson

from .signing_key import RsaKey, b64url, issuer_key

ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = (ISSUER,)
OPENID_CONFIG_PATH, JWKS_PATH = "/.well-known/openid-configuration", "/openid/v1/jwks"
JWKS_CONTENT_TYPE = "application/jwk-set+json"
CACHE_CONTROL = "public, max-age=3600"
LEEWAY = 60  # go-jose's jwt.DefaultLeeway
ALGORITHM = "RS256"
# What a bound-object claim names -> its store key (cluster-scoped for nodes).
BOUND = {"pod": ("", "pods"), "secret": ("", "secrets"), "node": ("", "nodes")}

# (group, plural), (namespace or "", name) -> the object, or None
Lookup = Callable[[tuple[str, str], tuple[str, str]], dict | None]


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class ServiceAccountJwt:
    """Signs service-account tokens and validates them against the objects they name."""

    def __init__(self, lookup: Lookup, key: RsaKey | None = None) -> None:
        self.lookup = lookup
        self.key = key or issuer_key()

    def sign(self, claims: dict) -> str:
        header = b64url(orjson.dumps({"alg": ALGORITHM, "kid": self.key.kid}))
        payload = b64url(orjson.dumps(claims))
        signing_input = f"{header}.{payload}"
        return f"{signing_input}.{b64url(self.key.sign(signing_input.encode()))}"

    def validate(self, token: str, now: float | None = None) -> tuple[str, str, str] | None:
        """(namespace, name, uid) of the ServiceAccount a valid token of this issuer stands for, else None."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        try:
            header, claims, signature = orjson.loads(_unb64(parts[0])), orjson.loads(_unb64(parts[1])), \
                _unb64(parts[2])
        except (ValueError, binascii.Error, orjson.JSONDecodeError):
            return None
        if not isinstance(header, dict) or not isinstance(claims, dict) or claims.get("iss") != ISSUER:
            return None
        if header.get("alg") != ALGORITHM or header.get("kid", self.key.kid) != self.key.kid:
            return None
        if not self.key.verify(f"{parts[0]}.{parts[1]}".encode(), signature):
            return None
        now = time.time() if now is None else now
        if not _times_hold(claims, now) or not _for_this_server(claims.get("aud")):
            return None
        return self._subject(claims, now)

    def _subject(self, claims: dict, now: float) -> tuple[str, str, str] | None:
        about = claims.get("kubernetes.io")
        if not isinstance(about, dict) or not isinstance(about.get("namespace"), str):
            return None
        namespace, account = about["namespace"], about.get("serviceaccount")
        if not isinstance(account, dict) or not _live(self.lookup(("", "serviceaccounts"),
                                                                  (namespace, str(account.get("name")))), account, now):
            return None
        for claim, key in BOUND.items():
            ref = about.get(claim)
            if ref is None or (claim == "node" and about.get("pod") is not None):  # a pod's node is informative
                continue
            scope = "" if claim == "node" else namespace
            if not isinstance(ref, dict) or not _live(self.lookup(key, (scope, str(ref.get("name")))), ref, now):
                return None
        return namespace, account["name"], account.get("uid", "")

    def discovery(self, server_url: str) -> bytes:
        """The OIDC discovery document; jwks_uri is this server's (the apiserver's external address)."""
        return orjson.dumps({"issuer": ISSUER, "jwks_uri": server_url.rstrip("/") + JWKS_PATH,
                             "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
                             "id_token_signing_alg_values_supported": [ALGORITHM]})

    def jwks(self) -> bytes:
        return orjson.dumps({"keys": [self.key.jwk()]})


def _times_hold(claims: dict, now: float) -> bool:
    """go-jose's Claims.ValidateWithLeeway: exp, nbf and iat (numbers if present) with the leeway."""
    values = [claims.get(name) for name in ("exp", "nbf", "iat")]
    if any(v is not None and (isinstance(v, bool) or not isinstance(v, int | float)) for v in values):
        return False
    exp, nbf, iat = values
    if exp is None:
        return False  # a bound token always expires; the legacy tokens without exp are not issued here
    return now <= exp + LEEWAY and (nbf is None or now >= nbf - LEEWAY) and (iat is None or now >= iat - LEEWAY)


def _for_this_server(audiences) -> bool:
    if isinstance(audiences, str):
        audiences = [audiences]
    return isinstance(audiences, list) and bool(set(map(str, audiences)) & set(API_AUDIENCES))


def _live(obj: dict | None, ref: dict, now: float) -> bool:
    """The object the claim names exists with the claimed uid, and was not deleted over a leeway ago (a pod
    terminating gracefully, its deletionTimestamp ahead, keeps its token until it is gone, as on a server)."""
    if obj is None:
        return False
    meta = obj.get("metadata") or {}
    deleted = meta.get("deletionTimestamp")
    if deleted:
        try:
            if datetime.fromisoformat(deleted.replace("Z", "+00:00")).timestamp() < now - LEEWAY:
                return False
        except (TypeError, ValueError):
            return False
    return meta.get("uid") == ref.get("uid")
