"""TokenRequest: POST serviceaccounts/NAME/token, what `kubectl create token` and kubelets ask for.

As the apiserver's TokenREST (pkg/registry/core/serviceaccount/storage/token.go): the body's
name and namespace, if given, must be the URL's; the ServiceAccount must exist; `expirationSeconds`
defaults to 3600 and may not be under 600; `audiences` default to the API server's
(`https://kubernetes.default.svc.cluster.local`); a `boundObjectRef` (Pod, Secret or Node) must
name an existing object, uid-checked. The answer is the request with its status: a signed JWT with
the claims a real token has, and its expiry.

The token is an RS256 JWT with the `kid` of the issuer key (auth/service_account_jwt.py), verifiable
against /openid/v1/jwks. It authenticates as the ServiceAccount until it expires, the ServiceAccount
is deleted, or the object it is bound to is: the authenticator checks all that on every request from
the token alone, as the real one; a token for other audiences only never authenticates to the API
server.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .. import errors
from ..api import now_rfc3339
from ..auth.service_account_jwt import API_AUDIENCES, ISSUER
from ..storage.deletion import rfc3339
from ..validation import cannot_be_handled, meta_type_error, unmarshal_error

if TYPE_CHECKING:
    from ..api import Api
    from ..auth.authentication import Authenticator

DEFAULT_EXPIRATION, MIN_EXPIRATION, MAX_EXPIRATION = 3600, 600, 1 << 32
AUTHN = "authentication.k8s.io"
# (group, kind) -> plural: what a token may be bound to (the version is not looked at, as the server's)
BOUND_KINDS = {("", "Pod"): "pods", ("", "Secret"): "secrets", ("", "Node"): "nodes"}


class TokenIssuer:
    """Issues TokenRequest tokens, signed by the authenticator's issuer (which validates them)."""

    def __init__(self, api: Api, authenticator: Authenticator) -> None:
        self.api = api
        self.authenticator = authenticator

    def request(self, namespace: str, name: str, body) -> dict:
        """The TokenRequest `body` for ServiceAccount namespace/name, answered with its status."""
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request was not a JSON object")
        if body.get("kind") not in (None, "TokenRequest"):
            raise errors.bad_request(f"kind {body.get('kind')} does not match TokenRequest")
        problem = meta_type_error("TokenRequest", body)
        if problem is None and not isinstance(body.get("spec") or {}, dict):
            problem = unmarshal_error(body["spec"], "TokenRequest.spec", "v1.TokenRequestSpec")
        if problem:
            raise errors.bad_request(cannot_be_handled("TokenRequest", f"{AUTHN}/v1", problem))
        meta = dict(body.get("metadata") or {})
        for field, url_value, what in (("name", name, "name"), ("namespace", namespace, "namespace")):
            if meta.get(field) and meta[field] != url_value:
                raise self._invalid(name, f"metadata.{field}", meta[field],
                                    f"must match the service account {what} if specified")
        account = self.api.get(self.api.registry.builtin("", "v1", "serviceaccounts"), namespace, name)
        meta.setdefault("name", name)
        meta.setdefault("namespace", namespace)
        meta["creationTimestamp"] = now_rfc3339()
        spec = dict(body.get("spec") or {})
        spec["audiences"] = list(spec.get("audiences") or API_AUDIENCES)
        if spec.get("expirationSeconds") is None:  # SetDefaults_TokenRequestSpec
            spec["expirationSeconds"] = DEFAULT_EXPIRATION
        expiration = spec["expirationSeconds"]
        if not isinstance(expiration, int) or expiration < MIN_EXPIRATION:  # static validation: named ""
            raise self._invalid("", "spec.expirationSeconds", expiration,
                                "may not specify a duration less than 10 minutes")
        if expiration > MAX_EXPIRATION:
            raise self._invalid("", "spec.expirationSeconds", expiration,
                                "may not specify a duration larger than 2^32 seconds")
        bound = self._bound_object(namespace, name, spec.get("boundObjectRef"))
        audiences = spec["audiences"]
        issued = int(time.time())
        about: dict[str, object] = {"namespace": namespace}
        if bound:
            about[bound[0].lower()] = {"name": bound[1]["metadata"]["name"], "uid": bound[1]["metadata"]["uid"]}
            node = (bound[1].get("spec") or {}).get("nodeName") if bound[0] == "Pod" else None
            if node:  # ServiceAccountTokenPodNodeInfo: the pod's node, its uid when it exists
                found = self.api.store.get(("", "nodes"), ("", node))
                about["node"] = {"name": node, **({"uid": found["metadata"]["uid"]} if found else {})}
        about["serviceaccount"] = {"name": name, "uid": account["metadata"]["uid"]}
        claims = {"aud": audiences, "exp": issued + expiration, "iat": issued, "iss": ISSUER,
                  "jti": str(uuid.uuid4()), "kubernetes.io": about, "nbf": issued,
                  "sub": f"system:serviceaccount:{namespace}:{name}"}
        token = self.authenticator.jwt.sign(claims)
        spec.setdefault("boundObjectRef", None)
        return {"kind": "TokenRequest", "apiVersion": f"{AUTHN}/v1", "metadata": meta, "spec": spec,
                "status": {"token": token, "expirationTimestamp": rfc3339_at(issued + expiration)}}

    def _bound_object(self, namespace: str, name: str, ref: dict | None) -> tuple[str, dict] | None:
        if not ref:
            return None
        kind, api_version = ref.get("kind") or "", ref.get("apiVersion") or ""
        group, _, version = api_version.rpartition("/")
        plural = BOUND_KINDS.get((group, kind))
        if plural is None:
            raise errors.bad_request(f"cannot bind token to object of type {group}/{version}, Kind={kind}")
        rt = self.api.registry.builtin("", "v1", plural)
        obj = self.api.get(rt, namespace if rt.namespaced else None, ref.get("name") or "")
        if kind == "Pod" and (obj.get("spec") or {}).get("serviceAccountName") != name:
            raise errors.bad_request(f"cannot bind token for serviceaccount {_go_quote(name)} to pod running with "
                                     f"different serviceaccount name.")
        if ref.get("uid") and ref["uid"] != obj["metadata"]["uid"]:
            raise errors.conflict(kind, ref.get("name") or "", f"the UID in the bound object reference ({ref['uid']}) "
                                  f"does not match the UID in record. The object might have been deleted and then "
                                  f"recreated", group, kind)
        return kind, obj

    @staticmethod
    def _invalid(name: str, field: str, value, detail: str) -> errors.ApiError:
        from ..validation import invalid_value

        return errors.invalid(f"TokenRequest.{AUTHN}", name, AUTHN, "TokenRequest",
                              [invalid_value(field, value, detail)])


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rfc3339_at(epoch: int) -> str:
    return rfc3339(datetime.fromtimestamp(epoch, UTC))

