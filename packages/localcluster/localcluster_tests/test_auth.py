"""Authentication, RBAC authorization, ClusterRole aggregation, owner-reference admission and the review APIs.

Messages are the kube-apiserver's: the authorization filter's 403, the RBAC authorizer's reasons,
and OwnerReferencesPermissionEnforcement's `cannot set blockOwnerDeletion ...: , <nil>`.
"""

from __future__ import annotations

import json

import aiohttp
import pytest
import yaml

from localcluster import LocalCluster

RBAC = "/apis/rbac.authorization.k8s.io/v1"
PODS = "/api/v1/namespaces/team/pods"


class As:
    """Raw HTTP as the holder of a token."""

    def __init__(self, session: aiohttp.ClientSession, cluster: LocalCluster, token: str | None) -> None:
        self.session, self.url = session, cluster.url
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def call(self, method: str, path: str, body: dict | None = None, headers: dict | None = None):
        async with self.session.request(method, self.url + path, json=body,
                                        headers={**self.headers, **(headers or {})}) as r:
            return r.status, await r.json(content_type=None)


@pytest.fixture
async def admin(http, cluster):
    cluster.api.ensure_namespace("team")
    return As(http, cluster, cluster.admin_token)


def role(name: str, rules: list[dict], namespace: str | None = "team", labels: dict | None = None) -> dict:
    meta = {"name": name, "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role" if namespace else "ClusterRole",
            "metadata": meta, "rules": rules}


def binding(name: str, role_kind: str, role_name: str, subjects: list[dict], namespace: str | None = "team") -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
            "metadata": meta, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                                          "name": role_name}, "subjects": subjects}


def user(name: str) -> dict:
    return {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}


async def grant(admin: As, obj: dict) -> None:
    plural = obj["kind"].lower() + "s"
    ns = obj["metadata"].get("namespace")
    path = f"{RBAC}/namespaces/{ns}/{plural}" if ns else f"{RBAC}/{plural}"
    code, body = await admin.call("POST", path, obj)
    assert code == 201, body


def pod(name: str, owner: dict | None = None) -> dict:
    meta: dict = {"name": name}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


# --- authentication ------------------------------------------------------------------------------


async def test_an_unknown_token_is_401(http, cluster, admin):
    code, body = await As(http, cluster, "nope").call("GET", PODS)
    assert (code, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")
    assert (await As(http, cluster, "nope").call("GET", "/version"))[0] == 401  # even where anonymous may read
    assert (await As(http, cluster, cluster.admin_token).call("GET", PODS))[0] == 200


async def test_no_token_is_system_anonymous_who_may_read_only_the_public_info(http, cluster, admin):
    """As a kube-apiserver with anonymous auth on and the bootstrap RBAC policy (system:public-info-viewer)."""
    anonymous = As(http, cluster, None)
    for path in ("/version", "/healthz", "/livez", "/readyz"):
        async with http.get(cluster.url + path) as r:
            assert r.status == 200, path
    code, body = await anonymous.call("GET", PODS)
    assert (code, body["reason"], body["message"]) == (403, "Forbidden", 'pods is forbidden: User "system:anonymous" '
                                                       'cannot list resource "pods" in API group "" in the namespace '
                                                       '"team"')
    code, body = await anonymous.call("GET", "/apis")  # system:discovery is bound to system:authenticated only
    assert (code, body["message"], body["details"]) == (403, 'forbidden: User "system:anonymous" cannot get path '
                                                        '"/apis"', {})
    code, _ = await anonymous.call("POST", PODS, pod("p"))
    assert code == 403 and cluster.store.get(("", "pods"), ("team", "p")) is None
    # Not a bearer token, or an empty one: no credentials at all, as the apiserver's bearertoken authenticator.
    for header in ("Basic YWRtaW46YWRtaW4=", "Bearer ", "bearer"):
        code, body = await anonymous.call("GET", PODS, headers={"Authorization": header})
        assert code == 403 and 'User "system:anonymous"' in body["message"], header
    code, body = await anonymous.call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                      {"kind": "SelfSubjectReview"})
    assert code == 403 and 'User "system:anonymous" cannot create resource "selfsubjectreviews"' in body["message"]


async def test_service_account_token_names_the_account_and_dies_with_it(http, cluster, admin):
    token = cluster.service_account_token("team", "robot")
    code, body = await As(http, cluster, token).call("GET", PODS)
    assert code == 403
    assert body["message"] == ('pods is forbidden: User "system:serviceaccount:team:robot" cannot list resource '
                               '"pods" in API group "" in the namespace "team"')
    assert body["details"] == {"kind": "pods"}
    assert (await As(http, cluster, token).call("GET", "/apis"))[0] == 200  # discovery is everyone's
    assert (await admin.call("DELETE", "/api/v1/namespaces/team/serviceaccounts/robot"))[0] == 200
    assert (await As(http, cluster, token).call("GET", "/apis"))[0] == 401


async def test_tokens_over_the_admin_endpoint(http, cluster, admin):
    async with http.post(cluster.url + "/_localcluster/tokens", json={"user": "carol", "groups": ["devs"]},
                         headers=cluster.admin_headers) as r:
        token = (await r.json())["token"]
    code, body = await As(http, cluster, token).call(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {"kind": "SelfSubjectReview"})
    assert code == 201 and body["status"]["userInfo"] == {"username": "carol",
                                                          "groups": ["devs", "system:authenticated"]}
    async with http.post(cluster.url + "/_localcluster/tokens", json={"serviceAccount": "team/bot"},
                         headers=cluster.admin_headers) as r:
        assert (await r.json())["token"] == cluster.service_account_token("team", "bot")


async def test_the_admin_endpoints_are_for_system_masters_only(http, cluster, admin):
    """401 without a valid token, 403 for a user outside system:masters; one inside it may use them."""
    carol = cluster.add_token("carol-token", "carol", ["devs"])
    root = cluster.add_token("root-token", "root", ["system:masters"])
    faults, tokens = cluster.faults.describe(), dict(cluster.access.authenticator.tokens)
    for method, path in (("GET", "stats"), ("GET", "audit"), ("POST", "faults"), ("POST", "restart"),
                         ("POST", "tokens")):
        url = f"{cluster.url}/_localcluster/{path}"
        for headers, wanted in (({}, 401), ({"Authorization": "Bearer nope"}, 401),
                                ({"Authorization": f"Bearer {carol}"}, 403)):
            async with http.request(method, url, json={"error_rate": 1.0}, headers=headers) as r:
                body = await r.json()
            assert r.status == wanted, (method, path, headers, body)
        assert body["message"] == (f'forbidden: User "carol" cannot {method.lower()} path "/_localcluster/{path}": '
                                   "localcluster's admin endpoints are for system:masters")
    assert (cluster.faults.describe(), cluster.access.authenticator.tokens) == (faults, tokens)  # none took effect
    assert (await As(http, cluster, root).call("GET", "/_localcluster/stats"))[0] == 200
    assert (await As(http, cluster, root).call("GET", PODS))[0] == 200


# --- authorization -------------------------------------------------------------------------------


async def test_forbidden_messages_for_cluster_scope_names_and_paths(http, cluster, admin):
    alice = As(http, cluster, cluster.add_token("a", "alice"))
    code, body = await alice.call("GET", "/api/v1/namespaces/team")
    # The namespace a request names is its own namespace (RequestInfo), as the real message says.
    assert body["message"] == ('namespaces "team" is forbidden: User "alice" cannot get resource "namespaces" in '
                               'API group "" in the namespace "team"')
    code, body = await alice.call("GET", "/api/v1/namespaces")
    assert body["message"] == ('namespaces is forbidden: User "alice" cannot list resource "namespaces" in '
                               'API group "" at the cluster scope')
    code, body = await alice.call("GET", "/apis/batch.tensorstack.dev/v1beta1/namespaces/team/genericjobs/x/status")
    assert body["message"] == ('genericjobs.batch.tensorstack.dev "x" is forbidden: User "alice" cannot get resource '
                               '"genericjobs/status" in API group "batch.tensorstack.dev" in the namespace "team"')
    assert body["details"] == {"name": "x", "group": "batch.tensorstack.dev", "kind": "genericjobs"}
    code, body = await alice.call("GET", "/metrics")
    assert (code, body["message"]) == (403, 'forbidden: User "alice" cannot get path "/metrics"')
    code, body = await alice.call("GET", "/api/v1/pods?watch=true")
    assert 'cannot watch resource "pods" in API group "" at the cluster scope' in body["message"]


async def test_rules_as_kubernetes_evaluates_them(http, cluster, admin):
    bob = As(http, cluster, cluster.add_token("b", "bob", ["crew"]))
    await grant(admin, role("status-reader", [
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"], "resourceNames": ["settings"]},
        {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["get"]},
    ]))
    await grant(admin, binding("crew-status", "Role", "status-reader", [{"kind": "Group", "name": "crew"}]))
    await admin.call("POST", PODS, pod("p"))
    await admin.call("POST", "/api/v1/namespaces/team/configmaps", {"metadata": {"name": "settings"}})
    await admin.call("POST", "/api/v1/namespaces/team/configmaps", {"metadata": {"name": "other"}})
    assert (await bob.call("GET", f"{PODS}/p/status"))[0] == 200
    assert (await bob.call("GET", f"{PODS}/p"))[0] == 403  # the subresource's rule is not the resource's
    assert (await bob.call("GET", "/api/v1/namespaces/team/configmaps/settings"))[0] == 200
    assert (await bob.call("GET", "/api/v1/namespaces/team/configmaps/other"))[0] == 403
    assert (await bob.call("GET", "/api/v1/namespaces/team/configmaps"))[0] == 403  # a list names nothing
    code, _ = await bob.call("GET", "/api/v1/namespaces/team/configmaps?fieldSelector=metadata.name%3Dsettings")
    assert code == 200  # ... unless its field selector does
    code, body = await bob.call("GET", "/apis/apps/v1/namespaces/team/deployments/d/scale")
    assert (code, body["reason"]) == (404, "NotFound")  # allowed by */scale; then no such Deployment
    assert (await bob.call("GET", "/api/v1/namespaces/default/pods/p/status"))[0] == 403  # another namespace


async def test_cluster_role_through_a_role_binding_is_limited_to_its_namespace(http, cluster, admin):
    token = cluster.service_account_token("team", "builder")
    sa = As(http, cluster, token)
    await grant(admin, binding("builder-edit", "ClusterRole", "edit",
                               [{"kind": "ServiceAccount", "name": "builder"}]))  # namespace defaults to the binding's
    assert (await sa.call("POST", PODS, pod("made")))[0] == 201
    cluster.api.ensure_namespace("elsewhere")
    assert (await sa.call("POST", "/api/v1/namespaces/elsewhere/pods", pod("made")))[0] == 403


async def test_missing_role_is_the_reason(http, cluster, admin):
    await grant(admin, binding("dangling", "ClusterRole", "no-such-role", [user("dan")]))
    code, body = await As(http, cluster, cluster.add_token("d", "dan")).call("GET", PODS)
    assert code == 403
    assert body["message"].endswith('in the namespace "team": RBAC: clusterrole.rbac.authorization.k8s.io '
                                    '"no-such-role" not found')


async def test_non_resource_urls_with_a_trailing_star(http, cluster, admin):
    await grant(admin, role("probe", [{"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]}], None))
    await grant(admin, binding("probe", "ClusterRole", "probe", [user("eve")], None))
    eve = As(http, cluster, cluster.add_token("e", "eve"))
    review = {"kind": "SelfSubjectAccessReview", "spec": {"nonResourceAttributes": {"path": "", "verb": "get"}}}
    for path, allowed in (("/metrics", True), ("/metrics/extra", False), ("/debug/pprof", True), ("/debug", False)):
        review["spec"]["nonResourceAttributes"]["path"] = path
        code, body = await eve.call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
        assert code == 201 and body["status"]["allowed"] is allowed, path


async def test_a_binding_takes_effect_at_once(http, cluster, admin):
    frank = As(http, cluster, cluster.add_token("f", "frank"))
    assert (await frank.call("GET", PODS))[0] == 403
    await grant(admin, binding("frank-view", "ClusterRole", "view", [user("frank")]))
    assert (await frank.call("GET", PODS))[0] == 200
    assert (await admin.call("DELETE", f"{RBAC}/namespaces/team/rolebindings/frank-view"))[0] == 200
    assert (await frank.call("GET", PODS))[0] == 403


async def test_impersonation_needs_the_impersonate_verb(http, cluster, admin):
    code, body = await admin.call("GET", PODS, headers={"Impersonate-User": "system:serviceaccount:team:x"})
    assert code == 403 and 'User "system:serviceaccount:team:x" cannot list' in body["message"]
    code, body = await As(http, cluster, cluster.add_token("g", "gus")).call(
        "GET", PODS, headers={"Impersonate-User": "admin", "Impersonate-Group": "system:masters"})
    assert code == 403 and body["message"] == ('users "admin" is forbidden: User "gus" cannot impersonate resource '
                                               '"users" in API group "" at the cluster scope')


# --- aggregation ---------------------------------------------------------------------------------


def _rules(cluster: LocalCluster, name: str) -> list[dict]:
    rt = cluster.registry.get("rbac.authorization.k8s.io", "v1", "clusterroles")
    return cluster.api.get(rt, None, name)["rules"]


async def test_aggregated_roles_follow_labelled_cluster_roles(http, cluster, admin):
    widgets = {"apiGroups": ["example.dev"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}
    assert widgets not in _rules(cluster, "view")
    await grant(admin, role("widget-view", [widgets], None, {"rbac.authorization.k8s.io/aggregate-to-view": "true"}))
    # view carries aggregate-to-edit and edit aggregate-to-admin: the rule reaches all three.
    assert all(widgets in _rules(cluster, name) for name in ("view", "edit", "admin"))
    more = {**widgets, "verbs": ["get"], "resources": ["gadgets"]}
    _, current = await admin.call("GET", f"{RBAC}/clusterroles/widget-view")
    current["rules"] = [more]
    assert (await admin.call("PUT", f"{RBAC}/clusterroles/widget-view", current))[0] == 200
    assert more in _rules(cluster, "view") and widgets not in _rules(cluster, "view")
    assert (await admin.call("DELETE", f"{RBAC}/clusterroles/widget-view"))[0] == 200
    assert more not in _rules(cluster, "admin")
    assert _rules(cluster, "view")  # the base rules stay


# --- OwnerReferencesPermissionEnforcement --------------------------------------------------------


async def _owner_and_creator(http, cluster, admin, finalizers: bool) -> tuple[dict, As]:
    _, owner = await admin.call("POST", "/api/v1/namespaces/team/configmaps", {"metadata": {"name": "owner"}})
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "update", "patch"]}]
    if finalizers:
        rules.append({"apiGroups": [""], "resources": ["configmaps/finalizers"], "verbs": ["update"]})
    await grant(admin, role("creator", rules))
    await grant(admin, binding("creator", "Role", "creator", [{"kind": "ServiceAccount", "name": "creator"}]))
    return owner, As(http, cluster, cluster.service_account_token("team", "creator"))


async def test_block_owner_deletion_needs_update_on_the_owners_finalizers(http, cluster, admin):
    owner, creator = await _owner_and_creator(http, cluster, admin, finalizers=False)
    code, body = await creator.call("POST", PODS, pod("child", owner))
    assert (code, body["reason"]) == (403, "Forbidden")
    assert body["message"] == ('pods "child" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers '
                               "to a resource you can't set finalizers on: , <nil>")
    assert (await creator.call("POST", PODS, pod("plain")))[0] == 201  # no ownerReference, no check
    unblocked = pod("unblocked", owner)
    unblocked["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = False
    assert (await creator.call("POST", PODS, unblocked))[0] == 201
    # Changing ownerReferences on an update needs delete on the object itself.
    code, body = await creator.call("PATCH", f"{PODS}/plain", {"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}]}},
        headers={"Content-Type": "application/merge-patch+json"})
    assert code == 403 and body["message"] == ('pods "plain" is forbidden: cannot set an ownerRef on a resource you '
                                               "can't delete: , <nil>")


async def test_block_owner_deletion_with_the_finalizers_rule(http, cluster, admin):
    owner, creator = await _owner_and_creator(http, cluster, admin, finalizers=True)
    assert (await creator.call("POST", PODS, pod("child", owner)))[0] == 201


async def test_the_admission_plugin_can_be_switched_off(http):
    async with LocalCluster(disable_admission_plugins=("OwnerReferencesPermissionEnforcement",)) as cluster:
        cluster.api.ensure_namespace("team")
        admin = As(http, cluster, cluster.admin_token)
        owner, creator = await _owner_and_creator(http, cluster, admin, finalizers=False)
        assert (await creator.call("POST", PODS, pod("child", owner)))[0] == 201
    with pytest.raises(ValueError):
        LocalCluster(disable_admission_plugins=("NoSuchPlugin",))


# --- reviews -------------------------------------------------------------------------------------


async def test_token_review_and_subject_access_review(http, cluster, admin):
    token = cluster.service_account_token("team", "robot")
    code, body = await admin.call("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                  {"kind": "TokenReview", "spec": {"token": token}})
    assert code == 201 and body["status"]["authenticated"] is True
    assert body["status"]["user"]["username"] == "system:serviceaccount:team:robot"
    assert body["status"]["user"]["groups"] == ["system:serviceaccounts", "system:serviceaccounts:team",
                                                "system:authenticated"]
    _, body = await admin.call("POST", "/apis/authentication.k8s.io/v1/tokenreviews", {"spec": {"token": "bad"}})
    assert "authenticated" not in body["status"] and body["status"]["error"]
    await grant(admin, binding("robot-view", "ClusterRole", "view", [{"kind": "ServiceAccount", "name": "robot"}]))
    sar = {"kind": "SubjectAccessReview", "spec": {"user": "system:serviceaccount:team:robot", "groups": [],
                                                    "resourceAttributes": {"namespace": "team", "verb": "list",
                                                                           "resource": "pods"}}}
    code, body = await admin.call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar)
    assert code == 201 and body["status"] == {
        "allowed": True, "reason": 'RBAC: allowed by RoleBinding "robot-view/team" of ClusterRole "view" to '
                                   'ServiceAccount "robot/team"'}
    sar["spec"]["resourceAttributes"]["verb"] = "create"
    _, body = await admin.call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar)
    assert body["status"] == {"allowed": False}
    # Creating a TokenReview or SubjectAccessReview is itself authorized: the robot may not.
    code, body = await As(http, cluster, token).call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar)
    assert code == 403 and 'cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at ' \
                           'the cluster scope' in body["message"]
    code, _ = await admin.call("GET", "/apis/authorization.k8s.io/v1/subjectaccessreviews")
    assert code == 405


async def test_reviews_in_discovery(admin):
    _, body = await admin.call("GET", "/apis/authorization.k8s.io/v1")
    assert {r["name"]: r["verbs"] for r in body["resources"]} == {"subjectaccessreviews": ["create"],
                                                                  "selfsubjectaccessreviews": ["create"],
                                                                  "selfsubjectrulesreviews": ["create"]}


# --- kubectl auth can-i / whoami (kubectl sends tokens only over TLS) -----------------------------


@pytest.mark.slow  # kubectl
async def test_kubectl_auth_can_i_and_whoami(tmp_path):
    from localcluster.testing import Kubectl

    async with LocalCluster() as cluster:
        cluster.api.ensure_namespace("team")
        admin = Kubectl(cluster, tmp_path / "admin")
        bindings = [binding(name, "ClusterRole", role_name, [user(name)]) for name, role_name in (("ed", "edit"),
                                                                                                  ("vi", "view"))]
        await admin.ok("apply", "-f", "-", stdin="\n---\n".join(map(json.dumps, bindings)))
        can = await admin.ok("auth", "can-i", "create", "deployments.apps", "-n", "team", "--as", "ed")
        assert can.out == "yes\n"
        assert (await admin.ok("auth", "can-i", "get", "pods", "-n", "team", "--as", "vi")).out == "yes\n"
        denied = await admin.run("auth", "can-i", "create", "pods", "-n", "team", "--as", "vi")
        assert (denied.code, denied.out) == (1, "no\n")
        assert (await admin.run("auth", "can-i", "get", "pods", "-n", "default", "--as", "vi")).out == "no\n"
        # As the user itself, with its own token.
        vi = Kubectl(cluster, tmp_path / "vi")
        vi.kubeconfig = cluster.write_kubeconfig(tmp_path / "vi" / "kubeconfig", token=cluster.add_token("t", "vi"))
        assert "vi" in (await vi.ok("auth", "whoami")).out
        assert (await vi.ok("get", "pods", "-n", "team")).code == 0
        refused = await vi.run("apply", "-n", "team", "-f", "-", stdin=json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mine"}}))
        # A create's URL names no object, so neither does the message.
        assert refused.code != 0 and ('configmaps is forbidden: User "vi" cannot create resource "configmaps" '
                                      'in API group "" in the namespace "team"') in refused.err
        assert (await vi.run("auth", "can-i", "create", "pods", "-n", "team")).out == "no\n"


@pytest.mark.slow  # `python -m localcluster serve`
async def test_serve_prints_service_account_tokens(tmp_path):
    import asyncio
    import signal
    import sys

    from kubernetes_asyncio import client, config

    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "localcluster", "serve", "--port", "0", "--kubeconfig-out", str(kubeconfig),
        "--service-account-token", "team/robot", stdout=asyncio.subprocess.PIPE)
    try:
        lines: list[str] = []
        async with asyncio.timeout(20):
            while not lines or "listening on" not in lines[-1]:
                lines.append((await proc.stdout.readline()).decode())
        [token] = [line.split(": ")[1].strip() for line in lines if line.startswith("token for serviceaccount team/")]
        assert "listening on https://" in lines[-1]
        as_robot = yaml.safe_load(kubeconfig.read_text())
        as_robot["users"][0]["user"]["token"] = token
        for settings, allowed in ((yaml.safe_load(kubeconfig.read_text()), True), (as_robot, False)):
            configuration = client.Configuration()
            await config.load_kube_config_from_dict(settings, client_configuration=configuration)
            async with client.ApiClient(configuration) as api:
                try:
                    await client.CoreV1Api(api).list_namespaced_pod("team")
                    assert allowed
                except client.ApiException as err:
                    assert not allowed and err.status == 403
    finally:
        proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(10):
            assert await proc.wait() == 0


async def test_reviews_in_openapi_are_create_only(admin):
    _, root = await admin.call("GET", "/openapi/v3")
    _, doc = await admin.call("GET", "/" + root["paths"]["apis/authorization.k8s.io/v1"]["serverRelativeURL"]
                              .lstrip("/"))
    paths = {p: sorted(k for k in ops if k != "parameters") for p, ops in doc["paths"].items()}
    assert paths == {"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": ["post"],
                     "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews": ["post"],
                     "/apis/authorization.k8s.io/v1/subjectaccessreviews": ["post"]}
