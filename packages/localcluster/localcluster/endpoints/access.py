"""Access control of every API request: authentication, impersonation, RBAC authorization, admission.

`Access.check` runs first for every request but localcluster's own admin endpoints; it answers 401
or 403 as a kube-apiserver with anonymous authentication on (its default), the RBAC authorizer and
the default admission plugins would, and returns the request's user and attributes. There is no
unauthenticated path: a request without a token is `system:anonymous`, whom the bootstrap policy
lets read only /healthz, /livez, /readyz and /version.

`Access.check_admin` guards localcluster's own endpoints (`/_localcluster/*`: faults, tokens,
restart, audit...), which no RBAC rule reaches: they need a token of a `system:masters` user (the
cluster's admin token, or one it minted into that group), as such a user may already do anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from ..admission.owner_references import Admission
from ..auth import policy
from ..auth.authentication import (
    ANONYMOUS,
    MASTERS,
    Attributes,
    Authenticator,
    User,
    impersonated,
    request_attributes,
    unauthorized,
)
from ..auth.rbac import Aggregator, Authorizer, request_forbidden

if TYPE_CHECKING:
    from ..api import Api

# Where the review kinds are served: their requests need resolved attributes to be routed.
REVIEW_PATHS = ("/apis/authentication.k8s.io/", "/apis/authorization.k8s.io/")


def peer_certificate(request: web.Request) -> dict | None:
    """The client certificate the TLS handshake verified (client_certificates.py), if any."""
    transport = request.transport
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    return ssl_object.getpeercert() if ssl_object is not None else None


class Access:
    def __init__(self, api: Api, admin_token: str, disabled_admission: tuple[str, ...] = ()) -> None:
        self.api = api
        self.authenticator = Authenticator(api.store, admin_token)
        self.authorizer = Authorizer(api.store)
        self.aggregator = Aggregator(api)
        self.admission = Admission(self.authorizer, api.registry, disabled_admission)
        api.admission = self.admission
        api.store.subscribe(self.authorizer.on_event)
        api.store.subscribe(self.aggregator.on_event)

    def bootstrap(self) -> None:
        """Create the bootstrap ClusterRoles and ClusterRoleBindings that are missing (as the apiserver's
        rbac/bootstrap-roles post-start hook); the aggregator then fills admin, edit and view."""
        from ..errors import ApiError

        for plural, objects in (("clusterroles", policy.cluster_roles()),
                                ("clusterrolebindings", policy.cluster_role_bindings())):
            rt = self.api.registry.builtin("rbac.authorization.k8s.io", "v1", plural)
            for obj in objects:
                try:
                    self.api.create(rt, None, obj)
                except ApiError as err:
                    if err.code != 409:
                        raise

    def authorize(self, attrs: Attributes) -> tuple[bool, str]:
        return self.authorizer.authorize(attrs)

    def check(self, request: web.Request) -> Attributes:
        """The request's user and attributes (only the user and path for system:masters outside the reviews),
        or 401/403."""
        user = self.authenticator.authenticate(request.headers.get("Authorization"), peer_certificate(request))
        if user is None:
            raise unauthorized()
        if "Impersonate-User" in request.headers:
            user = self._impersonate(user, request)
        elif MASTERS in user.groups and not request.path.startswith(REVIEW_PATHS):
            # Allowed whatever it asks: skip resolving the attributes (most of a request's access cost).
            return Attributes(user, request.method.lower(), False, path=request.path)
        attrs = request_attributes(user, request.method, request.path, request.query)
        allowed, reason = self.authorizer.authorize(attrs)
        if not allowed:
            raise request_forbidden(attrs, reason)
        return attrs

    def check_admin(self, request: web.Request) -> User:
        """The system:masters user a request to /_localcluster/* comes from: 401 without a valid token,
        403 for any other user (impersonation is not honoured there)."""
        user = self.authenticator.authenticate(request.headers.get("Authorization"), peer_certificate(request))
        if user is None or user is ANONYMOUS:
            raise unauthorized()
        if MASTERS not in user.groups:
            attrs = Attributes(user, request.method.lower(), False, path=request.path)
            raise request_forbidden(attrs, "localcluster's admin endpoints are for system:masters")
        return user

    def _impersonate(self, user: User, request: web.Request) -> User:
        target, checks = impersonated(user, request.headers, request.headers.getall("Impersonate-Group", []))
        for check in checks:
            allowed, reason = self.authorizer.authorize(check)
            if not allowed:
                raise request_forbidden(check, reason)
        return target
