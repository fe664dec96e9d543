"""RBAC escalation prevention: no one grants, through a role or a binding, rights she does not hold herself.

Without this, RBAC is only as strong as its weakest `create rolebindings`: a user who may write
RoleBindings binds `cluster-admin` to herself, and a namespace admin (whose `admin` ClusterRole may write
Roles) writes a Role with whatever she likes in it. The kube-apiserver refuses both in the RBAC kinds'
storage (pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased), after mutating
admission and before validating admission, and so does this module, called first by `Admission.validate`:

- a Role or ClusterRole create or update whose rules the writer's own rules (RBAC's RulesFor in the
  role's namespace: every ClusterRoleBinding, and the namespace's RoleBindings) do not cover is refused
  with 403 `... is attempting to grant RBAC permissions not currently held:` and the missing rules,
  unless the writer may `escalate` that role (the verb on roles/clusterroles, the URL's name as the
  resourceName: none on a create); a ClusterRole with an aggregationRule, before or after the write, also
  needs full authority (`*` on `*.*` and on every non-resource URL), since it gathers any rules;
- a RoleBinding or ClusterRoleBinding create or update is refused the same way when the writer does not
  hold the rules of the role it names, unless she may `bind` that role (the verb on roles/clusterroles in
  the roleRef's group, the binding's namespace, the role's name as the resourceName); a binding of a role
  that does not exist is then 404;
- updates that change only what the garbage collector changes (ownerReferences, finalizers) are not checked,
  and system:masters (the admin token) is never checked.

Coverage is rbac's `Covers`: each rule is broken into one verb, one group, one resource (or URL) and one
resource name, and each piece must fall under one of the writer's rules, where a rule without
resourceNames covers every name and `*/sub` covers any resource's subresource `sub`. The missing pieces
are compacted and printed as the server prints them (CompactString, Go's %q of each list).
"""

from __future__ import annotations

from ..errors import invalid, not_found
from ..validation import not_supported
from .authentication import MASTERS, Attributes, User
from .rbac import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, GROUP, ROLE_BINDINGS, ROLES, Authorizer, forbidden

# What a ClusterRole with an aggregationRule requires of its writer (policybased's fullAuthority).
FULL_AUTHORITY = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                  {"nonResourceURLs": ["*"], "verbs": ["*"]}]
AGGREGATION_MESSAGE = "must have cluster-admin privileges to use the aggregationRule"
# What IsOnlyMutatingGCFields lets change unchecked (the garbage collector's fields, and the server's own).
GC_FIELDS = ("ownerReferences", "finalizers", "selfLink", "managedFields")


# --- coverage (k8s.io/component-helpers/auth/rbac/validation: Covers, BreakdownRule) -----------------


def breakdown(rule: dict) -> list[dict]:
    """The rule as pieces of one group, resource, verb and resource name, or one URL and verb."""
    pieces = []
    names = rule.get("resourceNames") or ()
    for group in rule.get("apiGroups") or ():
        for resource in rule.get("resources") or ():
            for verb in rule.get("verbs") or ():
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                pieces += [{**base, "resourceNames": [n]} for n in names] if names else [base]
    for url in rule.get("nonResourceURLs") or ():
        pieces += [{"nonResourceURLs": [url], "verbs": [verb]} for verb in rule.get("verbs") or ()]
    return pieces


def _has_all(owned, wanted) -> bool:
    return set(wanted) <= set(owned)


def _resources_cover(owned: list[str], wanted: list[str]) -> bool:
    if "*" in owned or _has_all(owned, wanted):
        return True
    for resource in wanted:
        if resource in owned:
            continue
        if "/" not in resource or "*/" + resource.split("/", 1)[1] not in owned:
            return False
    return True


def _url_covers(owned: str, wanted: str) -> bool:
    return owned == wanted or (owned.endswith("*") and wanted.startswith(owned.rstrip("*")))


def _rule_covers(owner: dict, piece: dict) -> bool:
    """ruleCovers: does `owner` (any rule) hold all of `piece` (one of breakdown's)?"""
    verbs, groups = owner.get("verbs") or [], owner.get("apiGroups") or []
    owned_names = owner.get("resourceNames") or []
    names = piece.get("resourceNames") or []
    return (("*" in verbs or _has_all(verbs, piece.get("verbs") or []))
            and ("*" in groups or _has_all(groups, piece.get("apiGroups") or []))
            and _resources_cover(owner.get("resources") or [], piece.get("resources") or [])
            and all(any(_url_covers(o, url) for o in owner.get("nonResourceURLs") or ())
                    for url in piece.get("nonResourceURLs") or ())
            and (not owned_names if not names else (not owned_names or _has_all(owned_names, names))))


def covers(owner_rules: list[dict], rules: list[dict]) -> tuple[bool, list[dict]]:
    """(whether `owner_rules` hold every right of `rules`, the pieces they miss)."""
    missing = [piece for rule in rules for piece in breakdown(rule)
               if not any(_rule_covers(owner, piece) for owner in owner_rules)]
    return not missing, missing


# --- the message (pkg/registry/rbac/validation: CompactRules, rbacv1helpers.CompactString) ------------


def compact(rules: list[dict]) -> list[dict]:
    """CompactRules: pieces of one group and resource (and at most one resource name) merged across verbs."""
    compacted: list[dict] = []
    simple: dict[tuple, dict] = {}
    for rule in rules:
        names = rule.get("resourceNames") or []
        groups, resources = rule.get("apiGroups") or [], rule.get("resources") or []
        extra = set(rule) - {"apiGroups", "resources", "verbs", "resourceNames"}
        if len(names) > 1 or rule.get("nonResourceURLs") or len(groups) != 1 or len(resources) != 1 or extra:
            compacted.append(rule)
            continue
        key = (groups[0], resources[0], bool(names), names[0] if names else "")
        if key in simple:
            simple[key]["verbs"] = [*simple[key]["verbs"], *(rule.get("verbs") or [])]
        else:
            simple[key] = {**rule, "verbs": list(rule.get("verbs") or [])}
    return compacted + list(simple.values())


def go_quote(text: str) -> str:
    """strconv.Quote: printable characters as they are, the others escaped as Go escapes them."""
    escapes = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\v": "\\v"}
    out = []
    for ch in text:
        if ch in escapes:
            out.append(escapes[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def go_quote_list(items) -> str:
    """fmt's %q of a []string: `["a" "b"]`."""
    return "[" + " ".join(go_quote(str(item)) for item in items) + "]"


def compact_string(rule: dict) -> str:
    """CompactString: `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`, empty lists left out."""
    parts = [f"{label}:{go_quote_list(rule[key])}" for label, key in (
        ("APIGroups", "apiGroups"), ("Resources", "resources"), ("NonResourceURLs", "nonResourceURLs"),
        ("ResourceNames", "resourceNames"), ("Verbs", "verbs")) if rule.get(key)]
    return "{" + ", ".join(parts) + "}"


def _go_errors(errors: str) -> str:
    """The resolver's errors as `%v` of []error{aggregate} prints them, the roles named as their storage
    names them (`clusterroles.rbac...` where the authorizer's listers say `clusterrole.rbac...`)."""
    return "[" + errors.replace(f'role.{GROUP} "', f'roles.{GROUP} "') + "]"


# --- the checks (pkg/registry/rbac/escalation_check.go and the policybased storages) -----------------


def _only_gc_fields(obj: dict, old: dict | None) -> bool:
    """IsOnlyMutatingGCFields: the update changes nothing but ownerReferences and finalizers."""
    if old is None:
        return False
    meta = {k: v for k, v in obj["metadata"].items() if k not in GC_FIELDS}
    old_meta = {k: v for k, v in old["metadata"].items() if k not in GC_FIELDS}
    return meta == old_meta and {k: v for k, v in obj.items() if k != "metadata"} == \
        {k: v for k, v in old.items() if k != "metadata"}


def _has_aggregation_rule(role: dict | None) -> bool:
    return bool(role and (role.get("aggregationRule") or {}).get("clusterRoleSelectors"))


class Escalation:
    """The RBAC kinds' escalation checks, for the writes of a request's user."""

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer
        self.store = authorizer.store

    def check(self, user: User, storage_key: tuple[str, str], obj: dict, old: dict | None) -> None:
        """Refuse (403, or 404 for a binding of a missing role) a write of an RBAC object that grants more
        than `user` holds; anything else, and any write of system:masters, passes."""
        if storage_key not in (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS):
            return
        if MASTERS in user.groups or _only_gc_fields(obj, old):
            return
        meta = obj["metadata"]
        namespace = meta.get("namespace", "") if storage_key in (ROLES, ROLE_BINDINGS) else ""
        resource = storage_key[1]
        if storage_key in (ROLES, CLUSTER_ROLES):
            # The URL's name: a create's (POST) names none, so only an unrestricted `escalate` lets it through.
            name = meta.get("name", "") if old is not None else ""
            if self._allowed(user, "escalate", GROUP, resource, namespace, name, api_version="*"):
                return
            self._confirm(user, namespace, resource, meta.get("name", ""), list(obj.get("rules") or ()))
            if storage_key == CLUSTER_ROLES and (_has_aggregation_rule(obj) or _has_aggregation_rule(old)):
                if not covers(self._rules_of(user, namespace)[0], FULL_AUTHORITY)[0]:
                    raise forbidden(GROUP, resource, meta.get("name", ""), AGGREGATION_MESSAGE)
            return
        ref = obj.get("roleRef") or {}
        kind, role_name = ref.get("kind"), ref.get("name", "")
        supported = ["Role", "ClusterRole"] if storage_key == ROLE_BINDINGS else ["ClusterRole"]
        if kind not in supported:  # the server's validation would refuse it; RBAC must not read it as a Role
            qualified = ("RoleBinding" if storage_key == ROLE_BINDINGS else "ClusterRoleBinding") + "." + GROUP
            raise invalid(qualified, meta.get("name", ""), GROUP, qualified.split(".")[0],
                          [not_supported("roleRef.kind", kind or "", supported)])
        role_resource = "roles" if kind == "Role" else "clusterroles"
        if self._allowed(user, "bind", ref.get("apiGroup", ""), role_resource, namespace, role_name):
            return
        if kind == "Role":
            role = self.store.get(ROLES, (namespace, role_name))
        else:
            role = self.store.get(CLUSTER_ROLES, ("", role_name))
        if role is None:
            raise not_found(f"{role_resource}.{GROUP}", role_name, GROUP, role_resource)
        self._confirm(user, namespace, resource, meta.get("name", ""), list(role.get("rules") or ()))

    def _allowed(self, user: User, verb: str, group: str, resource: str, namespace: str, name: str,
                 api_version: str = "") -> bool:
        attrs = Attributes(user, verb, True, api_group=group, api_version=api_version, resource=resource,
                           namespace=namespace, name=name)
        return self.authorizer.authorize(attrs)[0]

    def _rules_of(self, user: User, namespace: str) -> tuple[list[dict], str]:
        return self.authorizer.rules_for(user, namespace)

    def _confirm(self, user: User, namespace: str, resource: str, name: str, rules: list[dict]) -> None:
        """ConfirmNoEscalation: `user`'s rules in `namespace` cover `rules`, or 403 naming what they miss."""
        held, errors = self._rules_of(user, namespace)
        ok, missing = covers(held, rules)
        if ok:
            return
        described = sorted({compact_string(rule) for rule in compact(missing)})
        message = (f"user {go_quote(user.name)} (groups={go_quote_list(user.groups)}) is attempting to grant RBAC "
                   "permissions not currently held:\n" + "\n".join(described))
        if errors:
            message += f"; resolution errors: {_go_errors(errors)}"
        raise forbidden(GROUP, resource, name, message)

