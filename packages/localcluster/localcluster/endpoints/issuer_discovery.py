"""The service-account issuer's OIDC discovery endpoints, served as kube-apiserver's pkg/routes/openidmetadata.go.

GET /.well-known/openid-configuration answers the discovery document as application/json, GET
/openid/v1/jwks the public key set as application/jwk-set+json, both cacheable for an hour
(`Cache-Control: public, max-age=3600`, overriding the API's `no-cache`). Who may read them is the
authorizer's business before this is reached: the bootstrap ClusterRole
system:service-account-issuer-discovery, bound to system:serviceaccounts (auth/policy.py), so a pod's
token may fetch the keys that verify it, and anonymous requests may not.
"""

from __future__ import annotations

from aiohttp import web

from .. import errors
from ..auth import service_account_jwt as sa_jwt

PATHS = (sa_jwt.OPENID_CONFIG_PATH, sa_jwt.JWKS_PATH)


def serves(path: str) -> bool:
    """The two documents' paths, with or without a trailing slash (the ClusterRole grants both)."""
    return path in PATHS or (path.endswith("/") and path[:-1] in PATHS)


def serve(request: web.Request, issuer: sa_jwt.ServiceAccountJwt, server_url: str) -> web.Response:
    if request.method not in ("GET", "HEAD"):
        raise errors.method_not_allowed()
    if request.path.rstrip("/") == sa_jwt.JWKS_PATH:
        body, content_type = issuer.jwks(), sa_jwt.JWKS_CONTENT_TYPE
    else:
        body, content_type = issuer.discovery(server_url), "application/json"
    return web.Response(body=body, headers={"Content-Type": content_type, "Cache-Control": sa_jwt.CACHE_CONTROL})
