"""The differential corpus: API requests sent in order to localcluster and to the real API server, each named.

Built from a few scenarios run over several resources (a core one with a strategic-merge-patch schema, one
without, a CRD-served job kind with a schema and status subresource, the PodGroup CRD): create, read, the error
cases of each verb (not found, already exists, stale resourceVersion, uid precondition, bad bodies, bad
selectors, unknown fields), lists with selectors and pagination, the three patch types, status writes, deletes.
A request is (name, method, path, body, content type, params); `{ns}` in a path is the corpus's namespace.
"""

from __future__ import annotations

from typing import NamedTuple

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
NS = "fidelity"


class Request(NamedTuple):
    name: str
    method: str
    path: str
    body: object = None
    content_type: str = "application/json"
    params: dict | None = None
    raw: bytes | None = None
    user: str | None = None  # corpus_informers.py: "nobody", or any other for a token no server knows
    # sent again while refused 403, up to 10 s: the first request a RoleBinding just made should allow (a real
    # server's authorizer sees the binding by its informers, a moment after the write)
    settle: bool = False


RESOURCES = {  # plural: (collection path, a body for name, its kind's notion of "spec" for edits)
    "configmaps": (f"/api/v1/namespaces/{NS}/configmaps",
                   lambda n: {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "labels": {"app": n}},
                              "data": {"k": "v"}}, {"data": {"k": "w"}}),
    "secrets": (f"/api/v1/namespaces/{NS}/secrets",
                lambda n: {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": n, "labels": {"app": n}},
                           "stringData": {"k": "v"}, "type": "Opaque"}, {"data": {"k": "dw=="}}),
    "services": (f"/api/v1/namespaces/{NS}/services",
                 lambda n: {"apiVersion": "v1", "kind": "Service", "metadata": {"name": n, "labels": {"app": n}},
                            "spec": {"clusterIP": "None", "selector": {"app": n},
                                     "ports": [{"name": "http", "port": 80}]}},
                 {"spec": {"selector": {"app": "other"}}}),
    "serviceaccounts": (f"/api/v1/namespaces/{NS}/serviceaccounts",
                        lambda n: {"apiVersion": "v1", "kind": "ServiceAccount",
                                   "metadata": {"name": n, "labels": {"app": n}}},
                        {"metadata": {"annotations": {"edited": "yes"}}}),
    "roles": (f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles",
              lambda n: {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                         "metadata": {"name": n, "labels": {"app": n}},
                         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
              {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]}),
    "genericjobs": (f"/apis/batch.tensorstack.dev/v1beta1/namespaces/{NS}/genericjobs",
                    lambda n: {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob",
                               "metadata": {"name": n, "labels": {"app": n}},
                               "spec": {"replicaSpecs": [{"type": "worker", "replicas": 1, "template": {
                                   "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}}]}},
                    {"spec": {"runMode": {"pause": {"enabled": True}}}}),
    "pods": (f"/api/v1/namespaces/{NS}/pods",
             lambda n: {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, "labels": {"app": n}},
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}},
             {"spec": {"activeDeadlineSeconds": 30}}),
    "podgroups": (f"/apis/scheduler.tensorstack.dev/v1beta1/namespaces/{NS}/podgroups",
                  lambda n: {"apiVersion": "scheduler.tensorstack.dev/v1beta1", "kind": "PodGroup",
                             "metadata": {"name": n, "labels": {"app": n}},
                             "spec": {"minMember": 1, "queue": "default"}},
                  {"spec": {"minMember": 2}}),
}


def scenario(plural: str) -> list[Request]:
    collection, make, edit = RESOURCES[plural]
    one, two = f"{plural[:-1]}-a", f"{plural[:-1]}-b"
    item = f"{collection}/{one}"
    p = f"{plural}:"
    requests = [
        Request(p + "create", "POST", collection, make(one)),
        Request(p + "create second", "POST", collection, make(two)),
        Request(p + "create again: AlreadyExists", "POST", collection, make(one)),
        Request(p + "create without a name", "POST", collection, {**make(one), "metadata": {"labels": {"x": "y"}}}),
        Request(p + "create with a bad name", "POST", collection, {**make(one), "metadata": {"name": "Bad_Name"}}),
        Request(p + "create, not JSON", "POST", collection, raw=b"{not json"),
        Request(p + "create, not JSON at all", "POST", collection, raw=b"not json"),
        Request(p + "create, cut off", "POST", collection, raw=b'{"metadata": {"name": "' + b"x" * 40),
        Request(p + "update, not JSON", "PUT", item, raw=b"not json"),
        Request(p + "create, wrong kind", "POST", collection, {**make(one), "kind": "Nope"}),
        Request(p + "create with generateName", "POST", collection,
                {**make(one), "metadata": {"generateName": "gen-"}}, params={"dryRun": "All"}),
        Request(p + "create dry run", "POST", collection, make("dry"), params={"dryRun": "All"}),
        Request(p + "get", "GET", item),
        Request(p + "get missing: NotFound", "GET", f"{collection}/missing"),
        Request(p + "list", "GET", collection),
        Request(p + "list by label", "GET", collection, params={"labelSelector": f"app={one}"}),
        Request(p + "list by set-based label", "GET", collection, params={"labelSelector": f"app in ({one},{two})"}),
        Request(p + "list, bad label selector", "GET", collection, params={"labelSelector": "app in (a"}),
        Request(p + "list by name field", "GET", collection, params={"fieldSelector": f"metadata.name={two}"}),
        Request(p + "list, unknown field selector", "GET", collection, params={"fieldSelector": "spec.nope=1"}),
        Request(p + "list, limit 1", "GET", collection, params={"limit": "1"}),
        Request(p + "list, bad continue", "GET", collection, params={"limit": "1", "continue": "garbage"}),
        Request(p + "merge patch", "PATCH", item, edit, MERGE),
        Request(p + "merge patch of a label", "PATCH", item, {"metadata": {"labels": {"patched": "1"}}}, MERGE),
        Request(p + "json patch", "PATCH", item, [{"op": "add", "path": "/metadata/annotations",
                                                   "value": {"a": "b"}}], JSON_PATCH),
        Request(p + "json patch, failed test", "PATCH", item, [{"op": "test", "path": "/metadata/name",
                                                                "value": "other"}], JSON_PATCH),
        Request(p + "json patch, bad path", "PATCH", item, [{"op": "replace", "path": "/nope/deeper",
                                                             "value": 1}], JSON_PATCH),
        Request(p + "strategic merge patch", "PATCH", item, {"metadata": {"labels": {"s": "1"}}}, STRATEGIC),
        Request(p + "patch missing: NotFound", "PATCH", f"{collection}/missing", edit, MERGE),
        Request(p + "patch with a stale resourceVersion", "PATCH", item,
                {"metadata": {"resourceVersion": "1", "labels": {"z": "1"}}}, MERGE),
        Request(p + "update with a stale resourceVersion", "PUT", item,
                {**make(one), "metadata": {**make(one)["metadata"], "resourceVersion": "1"}}),
        Request(p + "update renaming: BadRequest", "PUT", item, {**make(one), "metadata": {"name": "other"}}),
        Request(p + "update missing", "PUT", f"{collection}/missing",
                {**make("missing"), "metadata": {"name": "missing", "resourceVersion": "5"}}),
        Request(p + "delete, wrong uid precondition", "DELETE", item,
                {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}),
        Request(p + "delete, bad propagation", "DELETE", item, {"propagationPolicy": "Sometimes"}),
        Request(p + "delete", "DELETE", item),
        Request(p + "get deleted: NotFound", "GET", item),
        Request(p + "delete missing: NotFound", "DELETE", f"{collection}/missing"),
        Request(p + "delete collection by label", "DELETE", collection, params={"labelSelector": f"app={two}"}),
        Request(p + "list after", "GET", collection),
    ]
    if plural == "genericjobs":
        requests += [
            Request(p + "status of missing", "GET", f"{collection}/missing/status"),
            Request(p + "create, schema violation", "POST", collection,
                    {**make("bad"), "spec": {"replicaSpecs": "no"}}),
            Request(p + "create, unknown field (strict)", "POST", collection,
                    {**make("strict"), "spec": {**make("s")["spec"], "nope": 1}},
                    params={"fieldValidation": "Strict"}),
        ]
    return requests


# A PUT of a missing object, for kinds beyond the scenarios': the registries that allow create on update
# (AllowCreateOnUpdate: Services, Endpoints, Leases, RBAC's four kinds, Events) answer 201, the others 404.
PUT_MISSING = {
    "leases": ("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", "coordination.k8s.io/v1", "Lease",
               {"spec": {"holderIdentity": "x"}}),
    "endpoints": ("/api/v1/namespaces/{ns}/endpoints", "v1", "Endpoints", {}),
    "events": ("/api/v1/namespaces/{ns}/events", "v1", "Event",
               {"involvedObject": {"kind": "Pod", "name": "p", "namespace": "{ns}"}, "reason": "R"}),
    "rolebindings": ("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", "rbac.authorization.k8s.io/v1",
                     "RoleBinding", {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                 "name": "r"}}),
    "clusterroles": ("/apis/rbac.authorization.k8s.io/v1/clusterroles", "rbac.authorization.k8s.io/v1",
                     "ClusterRole", {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
    "clusterrolebindings": ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "rbac.authorization.k8s.io/v1",
                            "ClusterRoleBinding", {"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                               "kind": "ClusterRole", "name": "r"}}),
    "endpointslices": ("/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", "discovery.k8s.io/v1",
                       "EndpointSlice", {"addressType": "IPv4", "endpoints": []}),
    "priorityclasses": ("/apis/scheduling.k8s.io/v1/priorityclasses", "scheduling.k8s.io/v1", "PriorityClass",
                        {"value": 10}),
    "deployments": ("/apis/apps/v1/namespaces/{ns}/deployments", "apps/v1", "Deployment",
                    {"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}}}),
}


def put_missing() -> list[Request]:
    made = []
    for plural, (collection, api_version, kind, payload) in PUT_MISSING.items():
        collection = collection.format(ns=NS)
        body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "put-made"},
                **{k: (dict(v, namespace=NS) if k == "involvedObject" else v) for k, v in payload.items()}}
        made += [Request(f"{plural}:update missing", "PUT", f"{collection}/put-made", body),
                 Request(f"{plural}:get after the PUT", "GET", f"{collection}/put-made"),
                 Request(f"{plural}:delete after the PUT", "DELETE", f"{collection}/put-made")]
    return made


def corpus() -> list[Request]:
    made = [Request("namespace", "POST", "/api/v1/namespaces", {"metadata": {"name": NS}})]
    for plural in RESOURCES:
        made += scenario(plural)
    made += put_missing()
    made += [
        Request("apply, metadata not a map", "PATCH", f"/api/v1/namespaces/{NS}/configmaps/applied",
                content_type="application/apply-patch+yaml", params={"fieldManager": "f"},
                raw=b"apiVersion: v1\nkind: ConfigMap\nmetadata: [1, a, true]\n"),
        Request("discovery: /api", "GET", "/api"),
        Request("discovery: unknown group", "GET", "/apis/nope.example.com/v1"),
        Request("unknown resource", "GET", f"/api/v1/namespaces/{NS}/nopes"),
        Request("namespace missing", "GET", "/api/v1/namespaces/missing"),
        Request("pods in a missing namespace", "POST", "/api/v1/namespaces/missing/configmaps",
                {"metadata": {"name": "x"}}),
    ]
    return made
