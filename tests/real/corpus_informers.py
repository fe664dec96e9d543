"""The differential corpus's second part: what the informers ask (lists from resourceVersion 0 and with a limit, the
next page by its continue token, watches with bookmarks allowed; watches resumed from older versions are
corpus_admission.py's) and what a user without rights is refused (RBAC), with a Role that grants a little.
`{continue}` and `{rv}` in a request's params are the continue token and the resourceVersion of the last list
answered (test_fidelity fills them in); a request with `user` "nobody" is sent with the token of envtest.USERS's
user without rights (localcluster is given the same token).
"""

from __future__ import annotations

from .corpus import NS, Request

CMS = f"/api/v1/namespaces/{NS}/configmaps"
ROLES = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles"
BINDINGS = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings"
JOBS = f"/apis/batch.tensorstack.dev/v1beta1/namespaces/{NS}/genericjobs"
NOBODY = "nobody"


def configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"page": "yes"}}}


def informers() -> list[Request]:
    made = [Request(f"paging: create {i}", "POST", CMS, configmap(f"page-{i}")) for i in range(5)]
    for path, what in ((CMS, "configmaps"), (JOBS, "genericjobs")):
        made += [
            # a list from 0 is served by the real server's watch cache, which may trail the writes just made; a
            # consistent list first waits for it (1.35's consistent reads from the cache), so both answer alike
            Request(f"informer {what}: a consistent list", "GET", path),
            Request(f"informer {what}: list from 0", "GET", path, params={"resourceVersion": "0"}),
            Request(f"informer {what}: list from 0, limit 2 (the cache ignores it)", "GET", path,
                    params={"resourceVersion": "0", "limit": "2"}),
            Request(f"informer {what}: list, limit 2", "GET", path, params={"limit": "2"}),
            Request(f"informer {what}: list, the next page", "GET", path, params={"limit": "2",
                                                                                   "continue": "{continue}"}),
        ]
    made += [
        Request("paging: list by label, limit 2", "GET", CMS, params={"labelSelector": "page=yes", "limit": "2"}),
        Request("paging: the next page", "GET", CMS, params={"labelSelector": "page=yes", "limit": "2",
                                                               "continue": "{continue}"}),
        Request("paging: the last page", "GET", CMS, params={"labelSelector": "page=yes", "limit": "2",
                                                               "continue": "{continue}"}),
        Request("paging: a continue token with another selector", "GET", CMS,
                params={"labelSelector": "page=no", "limit": "2", "continue": "{continue}"}),
        Request("paging: list, limit 0 is no limit", "GET", CMS, params={"labelSelector": "page=yes", "limit": "0"}),
        Request("paging: list, negative limit", "GET", CMS, params={"labelSelector": "page=yes", "limit": "-1"}),
        Request("paging: list, NotOlderThan the last", "GET", CMS,
                params={"labelSelector": "page=yes", "resourceVersion": "{rv}",
                        "resourceVersionMatch": "NotOlderThan"}),
        Request("paging: list, resourceVersionMatch without a resourceVersion", "GET", CMS,
                params={"resourceVersionMatch": "NotOlderThan"}),
        Request("paging: list, an unknown resourceVersionMatch", "GET", CMS,
                params={"resourceVersion": "0", "resourceVersionMatch": "Sometimes"}),
        Request("paging: list, a resourceVersion that is not a number", "GET", CMS, params={"resourceVersion": "x"}),
        Request("watch: from the last list, bookmarks allowed, nothing happens", "GET", CMS,
                params={"watch": "1", "resourceVersion": "{rv}", "allowWatchBookmarks": "true",
                        "timeoutSeconds": "1", "labelSelector": "page=yes"}),
        Request("watch: a resourceVersion that is not a number", "GET", CMS,
                params={"watch": "1", "resourceVersion": "x", "timeoutSeconds": "1"}),
    ]
    made += refusals()
    return made


def refusals() -> list[Request]:
    """nobody, before and after a Role lets them get (not list) ConfigMaps in the namespace."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "cm-getter"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "cm-getter"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-getter"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": NOBODY}]}
    wide = {**role, "metadata": {"name": "wide"}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}
    return [
        Request("rbac: nobody lists configmaps", "GET", CMS, user=NOBODY),
        Request("rbac: nobody lists configmaps everywhere", "GET", "/api/v1/configmaps", user=NOBODY),
        Request("rbac: nobody gets a configmap", "GET", f"{CMS}/page-0", user=NOBODY),
        Request("rbac: nobody gets a missing configmap", "GET", f"{CMS}/missing", user=NOBODY),
        Request("rbac: nobody creates a genericjob", "POST", JOBS, {"metadata": {"name": "x"}}, user=NOBODY),
        Request("rbac: nobody watches configmaps", "GET", CMS, params={"watch": "1", "timeoutSeconds": "1"},
                user=NOBODY),
        Request("rbac: nobody lists namespaces", "GET", "/api/v1/namespaces", user=NOBODY),
        Request("rbac: nobody deletes a configmap", "DELETE", f"{CMS}/page-0", user=NOBODY),
        Request("rbac: nobody makes a Role", "POST", ROLES, role, user=NOBODY),
        Request("rbac: the admin makes the Role", "POST", ROLES, role),
        Request("rbac: the admin binds it to nobody", "POST", BINDINGS, binding),
        Request("rbac: nobody gets a configmap, granted", "GET", f"{CMS}/page-0", user=NOBODY, settle=True),
        Request("rbac: nobody gets a missing configmap, granted", "GET", f"{CMS}/missing", user=NOBODY),
        Request("rbac: nobody still may not list", "GET", CMS, user=NOBODY),
        Request("rbac: nobody may not escalate: a Role granting more", "POST", ROLES, wide, user=NOBODY),
        Request("rbac: discovery is open to the authenticated", "GET", "/api", user=NOBODY),
        Request("rbac: a bad token is 401", "GET", CMS, user="bad-token"),
    ]
