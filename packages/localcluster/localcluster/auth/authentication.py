"""Authentication (bearer tokens, impersonation) and a request's attributes as the apiserver's RequestInfo.

Each LocalCluster has a random admin token (user `admin` in `system:masters`), which
`LocalCluster.kubeconfig()` carries. As a kube-apiserver with anonymous authentication on (its
default): a request without a bearer token is user `system:anonymous` in `system:unauthenticated`
(the bootstrap policy lets it read /healthz, /livez, /readyz and /version, nothing else), and one
with a token no authenticator knows gets 401. A verified client certificate of the process's client CA
(client_certificates.py) is user CN in groups O, tried first as the apiserver's x509 authenticator is; an
expired one is a 401 unless a valid token comes with it. Tests may give a token an expiry
(`add_token(..., expires_in=)`, exact, no leeway) and revoke it: short-lived credentials to refresh.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..errors import ApiError
from ..storage.store import Store
from .client_certificates import subject_of
from .service_account_jwt import ServiceAccountJwt

AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"
SA_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_KEY = ("", "serviceaccounts")
# Namespace subresources: /api/v1/namespaces/NAME/status is the namespace's own status, not a kind.
NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True, slots=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return (self.name, self.groups)


def service_account_user(namespace: str, name: str, uid: str = "") -> User:
    return User(f"{SA_PREFIX}{namespace}:{name}",
                ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED), uid)


def split_service_account(username: str) -> tuple[str, str] | None:
    if not username.startswith(SA_PREFIX):
        return None
    parts = username[len(SA_PREFIX):].split(":")
    return (parts[0], parts[1]) if len(parts) == 2 and all(parts) else None


ADMIN = User("admin", (MASTERS, AUTHENTICATED))
# Who a request without credentials is: the apiserver's anonymous authenticator's user.Anonymous in
# user.AllUnauthenticated (never system:authenticated).
ANONYMOUS = User("system:anonymous", ("system:unauthenticated",))


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


@dataclass(slots=True)
class Attributes:
    """authorizer.Attributes: who asks to do what, on which resource or non-resource path."""

    user: User
    verb: str
    resource_request: bool
    path: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def request_attributes(user: User, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """What RequestInfoFactory.NewRequestInfo computes for a request."""
    parts = [p for p in path.split("/") if p]
    non_resource = Attributes(user, method.lower(), False, path=path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return non_resource
    group = ""
    rest = parts[1:]
    if parts[0] == "apis":
        if len(rest) < 3:
            return non_resource
        group, rest = rest[0], rest[1:]
    attrs = Attributes(user, "", True, path=path, api_group=group, api_version=rest[0])
    rest = rest[1:]
    if rest[0] in ("watch", "proxy"):  # the deprecated /watch/ and /proxy/ path forms
        attrs.verb, rest = rest[0], rest[1:]
        if not rest:
            return attrs
    else:
        attrs.verb = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
                      "DELETE": "delete"}.get(method, "")
    if rest[0] == "namespaces":
        if len(rest) > 1:
            attrs.namespace = rest[1]
            if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
                rest = rest[2:]
    if len(rest) >= 3 and attrs.verb not in ("proxy",):
        attrs.subresource = rest[2]
    if len(rest) >= 2:
        attrs.name = rest[1]
    attrs.resource = rest[0]
    if not attrs.name and attrs.verb == "get":
        attrs.verb = "watch" if query.get("watch") in ("true", "1", "True") else "list"
        name = _exact_name(query.get("fieldSelector", ""))
        if name:
            attrs.name = name
    if not attrs.name and attrs.verb == "delete":
        attrs.verb = "deletecollection"
    return attrs


def _exact_name(field_selector: str) -> str:
    """`metadata.name=x` in a field selector names the object (an informer on one object is a get)."""
    for term in field_selector.split(","):
        for op in ("==", "="):
            key, sep, value = term.partition(op)
            if sep and key.strip() == "metadata.name" and "!" not in key:
                return value.strip()
    return ""


class Authenticator:
    """Bearer tokens to users; service-account tokens stop working when the ServiceAccount is deleted.

    Two kinds of service-account token: TokenRequest's signed JWTs (service_account_jwt.py, verified
    on every request, nothing kept per token) and the opaque `sa.` tokens `service_account_token`
    hands tests and `serve --service-account-token` (one per account, remembered here)."""

    def __init__(self, store: Store, admin_token: str) -> None:
        self.store = store
        self.tokens: dict[str, User] = {admin_token: ADMIN}
        self._expiry: dict[str, float] = {}  # token -> time.time() from which it is refused (tests' tokens)
        self._service_accounts: dict[str, tuple[str, str]] = {}  # token -> (namespace, name)
        self._issued: dict[tuple[str, str], str] = {}
        # TokenRequest's tokens: RS256 JWTs, valid while their signature, times and named objects hold.
        self.jwt = ServiceAccountJwt(store.get)

    def add_token(self, token: str, user: str, groups: Iterable[str] = (), expires_in: float | None = None) -> str:
        groups = tuple(dict.fromkeys([*groups, AUTHENTICATED]))
        self.tokens[token] = User(user, groups)
        if expires_in is not None:
            self._expiry[token] = time.time() + expires_in
        return token

    def revoke_token(self, token: str) -> None:
        self.tokens.pop(token, None)
        self._expiry.pop(token, None)

    def service_account_token(self, namespace: str, name: str) -> str:
        token = self._issued.get((namespace, name))
        if token is None:
            token = "sa." + secrets.token_urlsafe(24)
            self._issued[(namespace, name)] = token
            self._service_accounts[token] = (namespace, name)
        return token

    def authenticate(self, header: str | None, peercert: dict | None = None) -> User | None:
        """The request's user: ANONYMOUS without a bearer token, None (a 401) for a token nobody issued.

        As the apiserver's union of its x509 and bearertoken authenticators, then its anonymous one (which
        only answers when the others failed without error): `peercert` is the TLS peer's verified
        certificate (ssl's getpeercert()), a header that is not `Bearer TOKEN` (case-insensitive scheme) is
        no credential at all, an unknown token an error."""
        failed = False
        if peercert:
            subject = subject_of(peercert, time.time())
            if subject is not None:
                return User(subject[0], tuple(dict.fromkeys([*subject[1], AUTHENTICATED])))
            failed = True
        parts = (header or "").strip().split(" ")
        if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
            return None if failed else ANONYMOUS
        return self.review(parts[1])

    def review(self, token: str) -> User | None:
        """The user a token stands for (as a TokenReview answers), or None."""
        if token in self.tokens:
            expiry = self._expiry.get(token)
            return self.tokens[token] if expiry is None or time.time() < expiry else None
        sa = self._service_accounts.get(token)
        if sa is not None:
            account = self.store.get(SERVICE_ACCOUNTS_KEY, sa)
            if account is None:
                return None
            return service_account_user(*sa, account["metadata"].get("uid", ""))
        signed = self.jwt.validate(token) if token.count(".") == 2 else None
        return service_account_user(*signed) if signed is not None else None


def impersonated(user: User, headers: Mapping[str, str], groups: list[str]) -> tuple[User, list[Attributes]]:
    """The user named by Impersonate-User/-Group headers and the checks the requester must pass for it."""
    name = headers["Impersonate-User"]
    checks = []
    sa = split_service_account(name)
    if sa is not None:
        checks.append(Attributes(user, "impersonate", True, resource="serviceaccounts", namespace=sa[0],
                                 name=sa[1]))
    else:
        checks.append(Attributes(user, "impersonate", True, resource="users", name=name))
    checks += [Attributes(user, "impersonate", True, resource="groups", name=g) for g in groups]
    if sa is not None and not groups:
        target = service_account_user(*sa)
    else:
        target = User(name, tuple(dict.fromkeys([*groups, AUTHENTICATED])) if name != "system:anonymous"
                      else tuple(groups))
    return target, checks
