"""The RBAC authorizer and the ClusterRole aggregation controller, as Kubernetes evaluates them.

A request is allowed when a rule of a role bound to the user allows it: ClusterRoleBindings for
every request, RoleBindings of the request's namespace too. `system:masters` is allowed everything
before RBAC is consulted (the apiserver's privileged-group authorizer). Decisions are cached per
user and attributes and forgotten on any write to an RBAC object, so a request costs a dict lookup.
"""

from __future__ import annotations

from ..errors import ApiError
from ..storage.store import Event, Store
from .authentication import MASTERS, Attributes, User, split_service_account

GROUP = "rbac.authorization.k8s.io"
ROLES, ROLE_BINDINGS = (GROUP, "roles"), (GROUP, "rolebindings")
CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS = (GROUP, "clusterroles"), (GROUP, "clusterrolebindings")
CACHE_LIMIT = 100_000
AGGREGATOR = "clusterrole-aggregation-controller"  # the field manager of aggregated rules


# --- rule matching (rbac/v1 helpers) ------------------------------------------------------------


def _verb_matches(rule: dict, verb: str) -> bool:
    verbs = rule.get("verbs") or ()
    return "*" in verbs or verb in verbs


def _group_matches(rule: dict, group: str) -> bool:
    groups = rule.get("apiGroups") or ()
    return "*" in groups or group in groups


def _resource_matches(rule: dict, resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for r in rule.get("resources") or ():
        if r == "*" or r == combined:
            return True
        if subresource and r == "*/" + subresource:
            return True
    return False


def _name_matches(rule: dict, name: str) -> bool:
    names = rule.get("resourceNames") or ()
    return not names or name in names


def _url_matches(rule: dict, path: str) -> bool:
    for url in rule.get("nonResourceURLs") or ():
        if url == "*" or url == path or (url.endswith("*") and path.startswith(url[:-1])):
            return True
    return False


def rule_allows(rule: dict, attrs: Attributes) -> bool:
    if not _verb_matches(rule, attrs.verb):
        return False
    if attrs.resource_request:
        return (_group_matches(rule, attrs.api_group) and _resource_matches(rule, attrs.resource, attrs.subresource)
                and _name_matches(rule, attrs.name))
    return _url_matches(rule, attrs.path)


# --- messages -------------------------------------------------------------------------------------


def forbidden_message(attrs: Attributes) -> str:
    """The authorization filter's message (k8s.io/apiserver/pkg/endpoints/handlers/responsewriters)."""
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" {where}'


def forbidden(group: str, resource: str, name: str, message: str) -> ApiError:
    """apierrors.NewForbidden(GroupResource, name, err)."""
    qualified = f"{resource}.{group}" if group else resource
    if not resource and not group:
        text = f"forbidden: {message}"
    elif name:
        text = f'{qualified} "{name}" is forbidden: {message}'
    else:
        text = f"{qualified} is forbidden: {message}"
    details = {"name": name} if name else {}
    if resource:  # StatusDetails' kind and group are omitempty: a non-resource path's details are {}
        details["kind"] = resource
    if group:
        details["group"] = group
    return ApiError(403, "Forbidden", text, details)


def request_forbidden(attrs: Attributes, reason: str) -> ApiError:
    message = forbidden_message(attrs)
    if reason:
        message = f"{message}: {reason}"
    return forbidden(attrs.api_group, attrs.resource, attrs.name, message)


# --- the authorizer ---------------------------------------------------------------------------------


def _aggregate(errors: list[str]) -> str:
    """The text of utilerrors.NewAggregate(errors): one error as itself, several in brackets."""
    if len(errors) <= 1:
        return "".join(errors)
    return "[" + ", ".join(errors) + "]"


def _describe_subject(subject: dict, namespace: str) -> str:
    if subject.get("kind") == "ServiceAccount":
        return f'ServiceAccount "{subject.get("name")}/{subject.get("namespace") or namespace}"'
    return f'{subject.get("kind")} "{subject.get("name")}"'


def _applies(subject: dict, name: str, groups: tuple[str, ...], namespace: str) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        return subject.get("name") == name
    if kind == "Group":
        return subject.get("name") in groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        return bool(sa_namespace) and split_service_account(name) == (sa_namespace, subject.get("name"))
    return False


class Authorizer:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._decisions: dict[tuple, tuple[bool, str]] = {}
        # (user key, namespace) -> [(rules, source description)], errors
        self._rules: dict[tuple, tuple[list[tuple[list[dict], str]], list[str]]] = {}

    def on_event(self, ev: Event) -> None:
        if ev.key[0] == GROUP:
            self._decisions.clear()
            self._rules.clear()

    def authorize(self, attrs: Attributes) -> tuple[bool, str]:
        """(allowed, reason) as the RBAC authorizer decides, reason naming the binding or the errors met."""
        user = attrs.user
        if MASTERS in user.groups:
            return True, ""
        key = (user.key, attrs.verb, attrs.resource_request, attrs.path if not attrs.resource_request else "",
               attrs.api_group, attrs.resource, attrs.subresource, attrs.namespace, attrs.name)
        found = self._decisions.get(key)
        if found is None:
            found = self._decide(attrs)
            if len(self._decisions) >= CACHE_LIMIT:
                self._decisions.clear()
            self._decisions[key] = found
        return found

    def _decide(self, attrs: Attributes) -> tuple[bool, str]:
        errors: list[str] = []
        for namespace in ("", attrs.namespace) if attrs.namespace else ("",):
            sources, errs = self._rules_for(attrs.user.name, attrs.user.groups, namespace)
            errors += errs
            for rules, source in sources:
                if any(rule_allows(rule, attrs) for rule in rules):
                    return True, f"RBAC: allowed by {source}"
        if not errors:
            return False, ""
        return False, "RBAC: " + _aggregate(errors)

    def rules_for(self, user: User, namespace: str) -> tuple[list[dict], str]:
        """RBAC's RulesFor, as a SelfSubjectRulesReview answers it: the rules of every ClusterRoleBinding and of
        `namespace`'s RoleBindings naming the user, in that order, and the errors met (missing roles) as one text.
        system:masters gets no rules of its own here (the privileged-group authorizer resolves none): only
        those of the bootstrap binding of cluster-admin to it, as on a real server."""
        rules: list[dict] = []
        errors: list[str] = []
        for scope in ("", namespace) if namespace else ("",):
            sources, errs = self._rules_for(user.name, user.groups, scope)
            rules += [rule for role_rules, _ in sources for rule in role_rules]
            errors += errs
        return rules, _aggregate(errors)

    def _rules_for(self, name: str, groups: tuple[str, ...], namespace: str):
        """The rules of every binding (cluster ones for "", a namespace's RoleBindings otherwise) naming the user."""
        key = (name, groups, namespace)
        cached = self._rules.get(key)
        if cached is not None:
            return cached
        sources: list[tuple[list[dict], str]] = []
        errors: list[str] = []
        bucket = CLUSTER_ROLE_BINDINGS if not namespace else ROLE_BINDINGS
        for binding in sorted(self.store.objects(bucket, namespace or None), key=lambda b: b["metadata"]["name"]):
            subject = next((s for s in binding.get("subjects") or () if _applies(s, name, groups, namespace)), None)
            if subject is None:
                continue
            ref = binding.get("roleRef") or {}
            kind, role_name = ref.get("kind"), ref.get("name", "")
            if kind == "ClusterRole":
                role = self.store.get(CLUSTER_ROLES, ("", role_name))
            else:
                role = self.store.get(ROLES, (namespace, role_name))
            if role is None:
                errors.append(f'{(kind or "").lower()}.{GROUP} "{role_name}" not found')
                continue
            what = ("ClusterRoleBinding", binding["metadata"]["name"]) if not namespace else (
                "RoleBinding", f'{binding["metadata"]["name"]}/{namespace}')
            source = f'{what[0]} "{what[1]}" of {kind} "{role_name}" to {_describe_subject(subject, namespace)}'
            sources.append((list(role.get("rules") or ()), source))
        self._rules[key] = (sources, errors)
        return sources, errors


# --- aggregation ----------------------------------------------------------------------------------


def _selector_matches(selector: dict, labels: dict) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or ()
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


class Aggregator:
    """The clusterrole-aggregation controller: a ClusterRole with an aggregationRule gets the rules of
    every ClusterRole its selectors match (in name order, duplicates dropped), kept in step as they change.

    It runs synchronously after each ClusterRole write; its own writes trigger it again until nothing changes.
    """

    def __init__(self, api) -> None:
        self.api = api
        self.store: Store = api.store

    def on_event(self, ev: Event) -> None:
        if ev.key == CLUSTER_ROLES:
            self.sync()

    def sync(self) -> None:
        roles = sorted(self.store.objects(CLUSTER_ROLES), key=lambda r: r["metadata"]["name"])
        for role in roles:
            rule = role.get("aggregationRule")
            if not rule:
                continue
            rules: list[dict] = []
            for selector in rule.get("clusterRoleSelectors") or ():
                for other in roles:
                    if other["metadata"]["name"] == role["metadata"]["name"]:
                        continue
                    if not _selector_matches(selector, other["metadata"].get("labels") or {}):
                        continue
                    rules += [r for r in other.get("rules") or () if r not in rules]
            if rules != list(role.get("rules") or ()):
                rt = self.api.registry.builtin_storage(CLUSTER_ROLES)
                self.api.system_write(rt, {**role, "rules": rules, "metadata": dict(role["metadata"])},
                                      AGGREGATOR)
                return  # that write ran sync() again with the new state
