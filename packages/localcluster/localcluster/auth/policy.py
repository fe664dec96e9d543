"""The bootstrap RBAC policy a kube-apiserver creates at start (a subset: what users and controllers meet).

admin, edit and view are aggregated roles: their rules come from ClusterRoles labelled
`rbac.authorization.k8s.io/aggregate-to-{admin,edit,view}`, the base rules among them
(system:aggregate-to-*) covering the core kinds localcluster serves. As in Kubernetes, view's
rules flow into edit and edit's into admin through the same labels.
"""

from __future__ import annotations

AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"
READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def _urls(urls: list[str], verbs: list[str]) -> dict:
    return {"nonResourceURLs": urls, "verbs": verbs}


def _cluster_role(name: str, rules: list[dict] | None = None, labels: dict | None = None,
                  aggregate_from: str | None = None) -> dict:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": {**BOOTSTRAP_LABELS, **(labels or {})}, "annotations": AUTOUPDATE},
            "rules": rules or []}
    if aggregate_from:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE + aggregate_from: "true"}}]}
    return role


def _binding(name: str, role: str, groups: list[str]) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": dict(BOOTSTRAP_LABELS), "annotations": AUTOUPDATE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in groups]}


VIEW_CORE = ["configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
             "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services",
             "services/status", "bindings", "events", "limitranges", "resourcequotas", "resourcequotas/status",
             "pods/log", "pods/status", "replicationcontrollers/status", "namespaces", "namespaces/status"]
APPS = ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
        "deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets",
        "statefulsets/scale", "statefulsets/status"]
EDIT_CORE = ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "configmaps", "endpoints",
             "persistentvolumeclaims", "replicationcontrollers", "replicationcontrollers/scale", "secrets",
             "serviceaccounts", "services", "services/proxy"]


ISSUER_DISCOVERY = ["/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks",
                    "/openid/v1/jwks/"]


def cluster_roles() -> list[dict]:
    view = [_rule([""], VIEW_CORE, READ), _rule(["apps"], APPS, READ),
            _rule(["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], READ),
            _rule(["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"], READ),
            _rule(["discovery.k8s.io"], ["endpointslices"], READ), _rule(["events.k8s.io"], ["events"], READ)]
    edit = [_rule([""], EDIT_CORE, WRITE),
            _rule([""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"],
                  READ),
            _rule([""], ["serviceaccounts"], ["impersonate"]),
            _rule(["apps"], [r for r in APPS if not r.endswith("/status") and r != "controllerrevisions"], WRITE),
            _rule(["batch"], ["cronjobs", "jobs"], WRITE),
            _rule(["policy"], ["poddisruptionbudgets"], WRITE),
            _rule(["discovery.k8s.io"], ["endpointslices"], WRITE),
            _rule(["coordination.k8s.io"], ["leases"], [*READ, *WRITE])]
    admin = [_rule(["authorization.k8s.io"], ["localsubjectaccessreviews"], ["create"]),
             _rule(["rbac.authorization.k8s.io"], ["rolebindings", "roles"], [*READ, *WRITE])]
    discovery = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz",
                 "/version", "/version/"]
    return [
        _cluster_role("cluster-admin", [_rule(["*"], ["*"], ["*"]), _urls(["*"], ["*"])]),
        _cluster_role("admin", aggregate_from="admin"),
        _cluster_role("edit", labels={AGGREGATE + "admin": "true"}, aggregate_from="edit"),
        _cluster_role("view", labels={AGGREGATE + "edit": "true"}, aggregate_from="view"),
        _cluster_role("system:aggregate-to-admin", admin, {AGGREGATE + "admin": "true"}),
        _cluster_role("system:aggregate-to-edit", edit, {AGGREGATE + "edit": "true"}),
        _cluster_role("system:aggregate-to-view", view, {AGGREGATE + "view": "true"}),
        _cluster_role("system:auth-delegator", [_rule(["authentication.k8s.io"], ["tokenreviews"], ["create"]),
                                                _rule(["authorization.k8s.io"], ["subjectaccessreviews"],
                                                      ["create"])]),
        _cluster_role("system:basic-user", [
            _rule(["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], ["create"]),
            _rule(["authentication.k8s.io"], ["selfsubjectreviews"], ["create"])]),
        _cluster_role("system:discovery", [_urls(discovery, ["get"])]),
        _cluster_role("system:public-info-viewer", [_urls(["/healthz", "/livez", "/readyz", "/version",
                                                           "/version/"], ["get"])]),
        # Every ServiceAccount may read the issuer's OIDC discovery document and keys (ServiceAccountIssuerDiscovery).
        _cluster_role("system:service-account-issuer-discovery", [_urls(ISSUER_DISCOVERY, ["get"])]),
    ]


def cluster_role_bindings() -> list[dict]:
    return [
        _binding("cluster-admin", "cluster-admin", ["system:masters"]),
        _binding("system:basic-user", "system:basic-user", ["system:authenticated"]),
        _binding("system:discovery", "system:discovery", ["system:authenticated"]),
        _binding("system:public-info-viewer", "system:public-info-viewer",
                 ["system:authenticated", "system:unauthenticated"]),
        _binding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery",
                 ["system:serviceaccounts"]),
    ]
