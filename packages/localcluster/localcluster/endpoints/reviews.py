"""TokenReview, SubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview and SelfSubjectReview:
create-only kinds answered, never stored.

What a controller's secure metrics endpoint (TokenReview + SubjectAccessReview), `kubectl auth can-i`
(SelfSubjectAccessReview; with `--list`, SelfSubjectRulesReview) and `kubectl auth whoami`
(SelfSubjectReview) ask the API server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import errors
from ..auth.authentication import Attributes, User

if TYPE_CHECKING:
    from .access import Access

AUTHN, AUTHZ = "authentication.k8s.io", "authorization.k8s.io"
KINDS = {(AUTHN, "tokenreviews"): "TokenReview", (AUTHN, "selfsubjectreviews"): "SelfSubjectReview",
         (AUTHZ, "subjectaccessreviews"): "SubjectAccessReview",
         (AUTHZ, "selfsubjectaccessreviews"): "SelfSubjectAccessReview",
         (AUTHZ, "selfsubjectrulesreviews"): "SelfSubjectRulesReview"}


async def serve(access: Access, attrs: Attributes, request, read_body) -> dict:
    """Read the review from the request (JSON, YAML or, as client-go's typed clients send it, protobuf)."""
    # read_body: the HTTP layer's reader, passed down to it
    body = await read_body(request, f"{attrs.api_group}/v1", KINDS[(attrs.api_group, attrs.resource)])
    return answer(access, attrs, body)


def answer(access: Access, attrs: Attributes, body) -> dict:
    """The review `body` completed with its status, as the request `attrs` (a create) asked for it."""
    kind = KINDS[(attrs.api_group, attrs.resource)]
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request was not a JSON object")
    if body.get("kind") not in (None, kind):
        raise errors.bad_request(f"kind {body.get('kind')} does not match {kind}")
    spec = body.get("spec") or {}
    if kind == "SelfSubjectReview":
        info = {"username": attrs.user.name, "groups": list(attrs.user.groups)}
        if attrs.user.uid:
            info["uid"] = attrs.user.uid
        return {"kind": kind, "apiVersion": f"{AUTHN}/v1", "metadata": {"creationTimestamp": None},
                "status": {"userInfo": info}}
    if kind == "SelfSubjectRulesReview":
        return {"kind": kind, "apiVersion": f"{AUTHZ}/v1", "metadata": {"creationTimestamp": None}, "spec": {},
                "status": _rules_review(access, attrs.user, spec)}
    if kind == "TokenReview":
        status = _token_review(access, spec)
    else:
        user = attrs.user if kind == "SelfSubjectAccessReview" else _subject(spec, kind)
        status = _access_review(access, user, spec, kind)
    return {"kind": kind, "apiVersion": f"{attrs.api_group}/v1",
            "metadata": {**(body.get("metadata") or {}), "creationTimestamp": None}, "spec": spec, "status": status}


def _token_review(access: Access, spec: dict) -> dict:
    token = spec.get("token") or ""
    user = access.authenticator.review(token) if token else None
    if user is None:
        return {"user": {}, "error": "[invalid bearer token, token lookup failed]"}
    info: dict = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        info["uid"] = user.uid
    return {"authenticated": True, "user": info, "audiences": list(spec.get("audiences") or [])}


def _invalid(kind: str, field: str, message: str):
    return errors.invalid(f"{kind}.{AUTHZ}", "", AUTHZ, kind, [("FieldValueInvalid", field, f"{field}: {message}")])


def _subject(spec: dict, kind: str) -> User:
    if not spec.get("user") and not spec.get("groups"):
        raise _invalid(kind, "spec.user", 'Invalid value: "": at least one of user or group must be specified')
    return User(spec.get("user") or "", tuple(spec.get("groups") or ()), spec.get("uid") or "")


def _access_review(access: Access, user: User, spec: dict, kind: str) -> dict:
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (resource is None) == (non_resource is None):
        raise _invalid(kind, "spec.resourceAttributes", "Invalid value: \"null\": exactly one of "
                       "nonResourceAttributes or resourceAttributes must be specified")
    if resource is not None:
        attrs = Attributes(user, resource.get("verb") or "", True, api_group=resource.get("group") or "",
                           api_version=resource.get("version") or "", resource=resource.get("resource") or "",
                           subresource=resource.get("subresource") or "", namespace=resource.get("namespace") or "",
                           name=resource.get("name") or "")
    else:
        non_resource = non_resource or {}  # given when the resource's attributes are not: checked above
        attrs = Attributes(user, non_resource.get("verb") or "", False, path=non_resource.get("path") or "")
    allowed, reason = access.authorize(attrs)
    status: dict = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return status


def _rules_review(access: Access, user: User, spec: dict) -> dict:
    """What the user may do in spec.namespace, as the RBAC rule resolver lists it (the answer carries no spec,
    as the apiserver's REST storage builds a new object with the status alone)."""
    namespace = spec.get("namespace") or ""
    if not namespace:
        raise errors.bad_request("no namespace on request")
    rules, error = access.authorizer.rules_for(user, namespace)
    resource_rules, url_rules = [], []
    for rule in rules:
        verbs = list(rule.get("verbs") or ())
        if rule.get("resources"):
            entry = {"verbs": verbs}
            for key in ("apiGroups", "resources", "resourceNames"):
                if rule.get(key):
                    entry[key] = list(rule[key])
            resource_rules.append(entry)
        if rule.get("nonResourceURLs"):
            url_rules.append({"verbs": verbs, "nonResourceURLs": list(rule["nonResourceURLs"])})
    status: dict = {"resourceRules": resource_rules, "nonResourceRules": url_rules, "incomplete": False}
    if error:
        status["evaluationError"] = error
    return status
