"""Access control of every API request: authentication, impersonation, RBAC authorization, admission.

`Access.check` runs first for every request but localcluster's own admin endpoints; it answers 401
or 403 as a kube-apiserver with anonymous authentication off, the RBAC authorizer and the default
admission plugins would, and returns the request's user and attributes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from . import policy
from .admission import Admission
from .auth import INSECURE, MASTERS, Attributes, Authenticator, User, impersonated, request_attributes, unauthorized
from .rbac import Aggregator, Authorizer, request_forbidden

if TYPE_CHECKING:
    from .api import Api

# Where the review kinds are served: their requests need resolved attributes to be routed.
REVIEW_PATHS = ("/apis/authentication.k8s.io/", "/apis/authorization.k8s.io/")


class Access:
    def __init__(self, api: Api, disabled_admission: tuple[str, ...] = (), require_token: bool = False) -> None:
        self.api = api
        # Over plain HTTP a request without credentials is served as the insecure port of kube-apiservers up
        # to 1.19 served it (no authentication, no authorization): kubectl never sends a token over plain
        # HTTP, and localcluster serves plain HTTP unless asked for TLS. With TLS, or require_token, it is 401.
        self.require_token = require_token
        self.authenticator = Authenticator(api.store)
        self.authorizer = Authorizer(api.store)
        self.aggregator = Aggregator(api)
        self.admission = Admission(self.authorizer, api.registry, disabled_admission)
        api.admission = self.admission
        api.store.subscribe(self.authorizer.on_event)
        api.store.subscribe(self.aggregator.on_event)

    def bootstrap(self) -> None:
        """Create the bootstrap ClusterRoles and ClusterRoleBindings that are missing (as the apiserver's
        rbac/bootstrap-roles post-start hook); the aggregator then fills admin, edit and view."""
        from .errors import ApiError

        for plural, objects in (("clusterroles", policy.cluster_roles()),
                                ("clusterrolebindings", policy.cluster_role_bindings())):
            rt = self.api.registry.get("rbac.authorization.k8s.io", "v1", plural)
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
        header = request.headers.get("Authorization")
        if header is None and not self.require_token and not request.secure:
            user = INSECURE
        else:
            user = self.authenticator.authenticate(header)
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

    def _impersonate(self, user: User, request: web.Request) -> User:
        target, checks = impersonated(user, request.headers, request.headers.getall("Impersonate-Group", []))
        for check in checks:
            allowed, reason = self.authorizer.authorize(check)
            if not allowed:
                raise request_forbidden(check, reason)
        return target
