"""RBAC escalation prevention and the bind check (issue 35, H2), over HTTP and through kubectl.

The attacks: a user who may create RoleBindings binds cluster-admin to herself and reads Secrets; a
namespace admin (ClusterRole `admin` through a RoleBinding, which may write Roles and RoleBindings) grants
herself `use` of a queue (docs/security.md's grant), which the creator-privilege policy then believes.
The kube-apiserver refuses both with 403 `... is attempting to grant RBAC permissions not currently
held:` and the missing rules as rbacv1helpers.CompactString prints them, unless the writer may `escalate`
the role or `bind` the role. The same writes done right (rights the writer holds, or with `escalate` or
`bind`) go through.
"""

from __future__ import annotations

import json

import pytest

from .test_auth import RBAC, As, binding, grant, role, user

NOT_HELD = "is attempting to grant RBAC permissions not currently held:\n"
SECRETS = "/api/v1/namespaces/team/secrets"
ROLES, BINDINGS = f"{RBAC}/namespaces/team/roles", f"{RBAC}/namespaces/team/rolebindings"
CLUSTER_ROLES, CLUSTER_BINDINGS = f"{RBAC}/clusterroles", f"{RBAC}/clusterrolebindings"
QUEUE_RULE = {"apiGroups": ["scheduler.tensorstack.dev"], "resources": ["queues"], "resourceNames": ["team-a"],
              "verbs": ["use"]}
QUEUE_TEXT = '{APIGroups:["scheduler.tensorstack.dev"], Resources:["queues"], ResourceNames:["team-a"], Verbs:["use"]}'
EVERYTHING = '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}'


@pytest.fixture
async def admin(http, cluster):
    """The cluster's admin (system:masters), with namespace team made."""
    cluster.api.ensure_namespace("team")
    return As(http, cluster, cluster.admin_token)


def not_held(what: str, name: str, who: str, groups: str = '["system:authenticated"]') -> str:
    return f'{what}.rbac.authorization.k8s.io "{name}" is forbidden: user "{who}" (groups={groups}) {NOT_HELD}'


def rules(*verbs_on: tuple[list[str], str, list[str]]) -> list[dict]:
    return [{"apiGroups": groups, "resources": [resource], "verbs": verbs} for groups, resource, verbs in verbs_on]


async def person(http, cluster, admin: As, name: str, granted: list[dict], namespace: str | None = "team") -> As:
    """A user holding `granted` (in team through a Role and RoleBinding, or cluster-wide when namespace is None)."""
    await grant(admin, role(f"{name}-rights", granted, namespace))
    await grant(admin, binding(f"{name}-rights", "Role" if namespace else "ClusterRole", f"{name}-rights",
                               [user(name)], namespace))
    return As(http, cluster, cluster.add_token(f"{name}-token", name))


async def namespace_admin(http, cluster, admin: As, name: str) -> As:
    """`name` is an admin of namespace team: the aggregated ClusterRole `admin` through a RoleBinding."""
    await grant(admin, binding(f"{name}-admin", "ClusterRole", "admin", [user(name)]))
    return As(http, cluster, cluster.add_token(f"{name}-token", name))


# --- the attacks ------------------------------------------------------------------------------------------


async def test_binding_cluster_admin_to_oneself_is_refused_and_secrets_stay_closed(http, cluster, admin):
    mallory = await person(http, cluster, admin, "mallory", rules(
        (["rbac.authorization.k8s.io"], "rolebindings", ["create", "get", "list", "update", "patch"])))
    await person(http, cluster, admin, "mallory-cluster", rules(
        (["rbac.authorization.k8s.io"], "clusterrolebindings", ["create"])), namespace=None)
    await grant(admin, binding("mallory-cluster-2", "ClusterRole", "mallory-cluster-rights", [user("mallory")], None))
    code, body = await mallory.call("POST", BINDINGS, binding("pwn", "ClusterRole", "cluster-admin",
                                                              [user("mallory")]))
    assert (code, body["reason"]) == (403, "Forbidden")
    assert body["message"] == not_held("rolebindings", "pwn", "mallory") + EVERYTHING
    assert body["details"] == {"name": "pwn", "group": "rbac.authorization.k8s.io", "kind": "rolebindings"}
    code, body = await mallory.call("POST", CLUSTER_BINDINGS, binding("pwn", "ClusterRole", "cluster-admin",
                                                                      [user("mallory")], None))
    assert code == 403 and body["message"] == not_held("clusterrolebindings", "pwn", "mallory") + EVERYTHING
    code, body = await mallory.call("GET", SECRETS)
    assert code == 403, body
    assert cluster.store.get(("rbac.authorization.k8s.io", "rolebindings"), ("team", "pwn")) is None
    # Retargeting a binding she may update, and dry runs, are refused the same way.
    await grant(admin, binding("viewers", "ClusterRole", "view", [user("bob")]))
    code, current = await mallory.call("GET", f"{BINDINGS}/viewers")
    escalated = {**current, "roleRef": {**current["roleRef"], "name": "cluster-admin"}}
    code, body = await mallory.call("PUT", f"{BINDINGS}/viewers", escalated)
    assert code == 403 and body["message"].startswith(not_held("rolebindings", "viewers", "mallory")), body
    code, body = await mallory.call("POST", BINDINGS + "?dryRun=All",
                                    binding("dry", "ClusterRole", "cluster-admin", [user("mallory")]))
    assert code == 403, body


async def test_a_namespace_admin_may_not_grant_herself_a_queue(http, cluster, admin):
    nora = await namespace_admin(http, cluster, admin, "nora")
    code, body = await nora.call("POST", ROLES, role("queue-user", [QUEUE_RULE]))
    assert code == 403 and body["message"] == not_held("roles", "queue-user", "nora") + QUEUE_TEXT
    await grant(admin, role("queue-team-a", [QUEUE_RULE], None))  # docs/security.md's ClusterRole
    code, body = await nora.call("POST", BINDINGS, binding("queue-team-a", "ClusterRole", "queue-team-a",
                                                           [user("nora")]))
    assert code == 403 and body["message"] == not_held("rolebindings", "queue-team-a", "nora") + QUEUE_TEXT
    attrs = {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "spec": {
        "resourceAttributes": {"group": "scheduler.tensorstack.dev", "resource": "queues", "name": "team-a",
                               "verb": "use", "namespace": "team"}}}
    code, review = await nora.call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", attrs)
    assert code == 201 and review["status"]["allowed"] is False


# --- the same done right ----------------------------------------------------------------------------------


async def test_a_namespace_admin_grants_what_she_holds(http, cluster, admin):
    nora = await namespace_admin(http, cluster, admin, "nora")
    code, body = await nora.call("POST", BINDINGS, binding("bob-edits", "ClusterRole", "edit", [user("bob")]))
    assert code == 201, body  # admin holds every rule of edit (both aggregated)
    code, body = await nora.call("POST", ROLES, role("readers", rules(([""], "secrets", ["get", "list"]))))
    assert code == 201, body
    code, body = await nora.call("POST", BINDINGS, binding("bob-reads", "Role", "readers", [user("bob")]))
    assert code == 201, body
    # Once an administrator grants her the queue, she may pass it on.
    await grant(admin, role("queue-team-a", [QUEUE_RULE], None))
    await grant(admin, binding("nora-queue", "ClusterRole", "queue-team-a", [user("nora")]))
    code, body = await nora.call("POST", ROLES, role("queue-user", [QUEUE_RULE]))
    assert code == 201, body
    code, body = await nora.call("POST", BINDINGS, binding("bob-queue", "ClusterRole", "queue-team-a",
                                                           [user("bob")]))
    assert code == 201, body
    # Her rights in team are not rights in another namespace (RulesFor in the role's namespace).
    cluster.api.ensure_namespace("other")
    await grant(admin, binding("nora-admin", "ClusterRole", "admin", [user("nora")], "other"))
    code, body = await nora.call("POST", f"{RBAC}/namespaces/other/roles",
                                 role("queue-user", [QUEUE_RULE], "other"))
    assert code == 403 and body["message"] == not_held("roles", "queue-user", "nora") + QUEUE_TEXT


async def test_bind_lets_a_user_bind_the_named_roles_only(http, cluster, admin):
    binder = await person(http, cluster, admin, "binder", [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"], "verbs": ["create"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"],
         "resourceNames": ["queue-team-a"]}])
    await grant(admin, role("queue-team-a", [QUEUE_RULE], None))
    code, body = await binder.call("POST", BINDINGS, binding("q", "ClusterRole", "queue-team-a", [user("bob")]))
    assert code == 201, body
    code, body = await binder.call("POST", BINDINGS, binding("all", "ClusterRole", "cluster-admin", [user("bob")]))
    assert code == 403 and body["message"] == not_held("rolebindings", "all", "binder") + EVERYTHING
    # Without `bind`, a role that does not exist cannot be looked at: 404, as the role storage says it.
    code, body = await binder.call("POST", BINDINGS, binding("ghost", "Role", "ghost", [user("bob")]))
    assert (code, body["message"]) == (404, 'roles.rbac.authorization.k8s.io "ghost" not found')
    # `bind` on any cluster role: even cluster-admin, as on a real server.
    await grant(admin, role("binder-all", [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                                            "verbs": ["bind"]}], None))
    await grant(admin, binding("binder-all", "ClusterRole", "binder-all", [user("binder")], None))
    code, body = await binder.call("POST", BINDINGS, binding("all", "ClusterRole", "cluster-admin", [user("bob")]))
    assert code == 201, body


async def test_escalate_lets_a_user_write_roles_beyond_her_rights(http, cluster, admin):
    writer = await person(http, cluster, admin, "writer", [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["create", "get", "update"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"],
         "resourceNames": ["named"]}])
    # escalate limited to a name does not reach a create: its URL names no role.
    code, body = await writer.call("POST", ROLES, role("named", [QUEUE_RULE]))
    assert code == 403 and body["message"] == not_held("roles", "named", "writer") + QUEUE_TEXT
    await grant(admin, role("named", []))
    code, current = await writer.call("GET", f"{ROLES}/named")
    code, body = await writer.call("PUT", f"{ROLES}/named", {**current, "rules": [QUEUE_RULE]})
    assert code == 200 and body["rules"] == [QUEUE_RULE], body
    code, body = await writer.call("PUT", f"{ROLES}/writer-rights", {
        **(await writer.call("GET", f"{ROLES}/writer-rights"))[1], "rules": [QUEUE_RULE]})
    assert code == 403 and body["message"] == not_held("roles", "writer-rights", "writer") + QUEUE_TEXT
    await grant(admin, role("writer-escalate", [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
                                                 "verbs": ["escalate"]}]))
    await grant(admin, binding("writer-escalate", "Role", "writer-escalate", [user("writer")]))
    code, body = await writer.call("POST", ROLES, role("anything", [{"apiGroups": ["*"], "resources": ["*"],
                                                                     "verbs": ["*"]}]))
    assert code == 201, body


async def test_coverage_of_resource_names_subresources_and_urls(http, cluster, admin):
    carol = await person(http, cluster, admin, "carol", [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "update"], "resourceNames": ["a", "b"]},
        {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["get"]},
        {"nonResourceURLs": ["/healthz*"], "verbs": ["get"]}], namespace=None)
    held = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["a"]},
            {"apiGroups": ["apps"], "resources": ["deployments/scale", "statefulsets/scale"], "verbs": ["get"]},
            {"nonResourceURLs": ["/healthz", "/healthz/ready"], "verbs": ["get"]}]
    code, body = await carol.call("POST", CLUSTER_ROLES, role("held", held, None))
    assert code == 201, body
    beyond = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "update", "delete"]},
              {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["a", "c"]},
              {"apiGroups": ["apps"], "resources": ["deployments/scale", "deployments"], "verbs": ["get"]},
              {"nonResourceURLs": ["/healthz/live", "/metrics"], "verbs": ["get"]}]
    code, body = await carol.call("POST", CLUSTER_ROLES, role("beyond", beyond, None))
    assert code == 403
    # Without resourceNames a rule asks for every name, which names do not cover; the pieces of one group and
    # resource are merged across verbs; the lines are sorted.
    assert body["message"] == not_held("clusterroles", "beyond", "carol") + "\n".join([
        '{APIGroups:[""], Resources:["configmaps"], ResourceNames:["c"], Verbs:["get"]}',
        '{APIGroups:[""], Resources:["configmaps"], Verbs:["get" "update" "delete"]}',
        '{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}',
        '{NonResourceURLs:["/metrics"], Verbs:["get"]}'])


async def test_aggregated_cluster_roles(http, cluster, admin):
    dana = await person(http, cluster, admin, "dana", [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["create", "update"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}], namespace=None)
    # An aggregationRule gathers anything: only full authority may set it, whatever the rules.
    aggregating = {**role("gatherer", [], None), "aggregationRule": {"clusterRoleSelectors": [
        {"matchLabels": {"gather": "me"}}]}}
    code, body = await dana.call("POST", CLUSTER_ROLES, aggregating)
    assert (code, body["message"]) == (403, 'clusterroles.rbac.authorization.k8s.io "gatherer" is forbidden: must '
                                            'have cluster-admin privileges to use the aggregationRule')
    await grant(admin, aggregating)
    # Dropping the rule from a role that has one needs full authority too (the old object is checked).
    stored = cluster.store.get(("rbac.authorization.k8s.io", "clusterroles"), ("", "gatherer"))
    plain = {k: v for k, v in stored.items() if k != "aggregationRule"}
    code, body = await dana.call("PUT", f"{CLUSTER_ROLES}/gatherer", plain)
    assert code == 403 and "must have cluster-admin privileges to use the aggregationRule" in body["message"]
    # Labelling a role she holds into `view` is hers to do (the server allows it too).
    code, body = await dana.call("POST", CLUSTER_ROLES, role("pod-reader", rules(([""], "pods", ["get", "list"])),
                                                             None, {"gather": "me"}))
    assert code == 201, body
    # Binding an aggregated role checks its aggregated rules: an editor may bind `view` and `edit`, not `admin`.
    eve = As(http, cluster, cluster.add_token("eve-token", "eve"))
    await grant(admin, binding("eve-edit", "ClusterRole", "edit", [user("eve")]))
    await grant(admin, role("eve-binds", rules((["rbac.authorization.k8s.io"], "rolebindings", ["create"]))))
    await grant(admin, binding("eve-binds", "Role", "eve-binds", [user("eve")]))
    for name in ("view", "edit"):
        code, body = await eve.call("POST", BINDINGS, binding(f"bob-{name}", "ClusterRole", name, [user("bob")]))
        assert code == 201, body
    code, body = await eve.call("POST", BINDINGS, binding("bob-admin", "ClusterRole", "admin", [user("bob")]))
    assert code == 403 and body["message"].startswith(not_held("rolebindings", "bob-admin", "eve"))
    assert '{APIGroups:["rbac.authorization.k8s.io"], Resources:["roles"], Verbs:[' in body["message"]


async def test_resolution_errors_are_named_and_masters_pass(http, cluster, admin):
    await person(http, cluster, admin, "gus", rules((["rbac.authorization.k8s.io"], "roles", ["create"])))
    await grant(admin, binding("gus-ghost", "Role", "ghost", [user("gus")]))
    gus = As(http, cluster, cluster.add_token("gus-token", "gus", ["crew"]))
    code, body = await gus.call("POST", ROLES, role("q", [QUEUE_RULE]))
    assert code == 403 and body["message"] == (
        not_held("roles", "q", "gus", '["crew" "system:authenticated"]') + QUEUE_TEXT
        + '; resolution errors: [roles.rbac.authorization.k8s.io "ghost" not found]')
    # A GC-only update (finalizers) of a binding whose role she does not hold is not checked.
    await grant(admin, binding("held-open", "ClusterRole", "cluster-admin", [user("nobody")]))
    await grant(admin, role("gus-bindings", rules((["rbac.authorization.k8s.io"], "rolebindings", ["get", "patch"]))))
    await grant(admin, binding("gus-bindings", "Role", "gus-bindings", [user("gus")]))
    code, body = await gus.call("PATCH", f"{BINDINGS}/held-open", {"metadata": {"finalizers": ["example.com/keep"]}},
                                headers={"Content-Type": "application/merge-patch+json"})
    assert code == 200, body
    code, body = await gus.call("PATCH", f"{BINDINGS}/held-open", {"metadata": {"labels": {"a": "b"}}},
                                headers={"Content-Type": "application/merge-patch+json"})
    assert code == 403 and body["message"].startswith(not_held("rolebindings", "held-open", "gus", '["crew" '
                                                                                                  '"system:authenticated"]'))
    # system:masters (the admin token, or a token minted into the group) is never checked.
    root = As(http, cluster, cluster.add_token("root-token", "root", ["system:masters"]))
    code, body = await root.call("POST", BINDINGS, binding("root", "ClusterRole", "cluster-admin", [user("gus")]))
    assert code == 201, body


# --- through kubectl --------------------------------------------------------------------------------------


@pytest.mark.slow  # kubectl
async def test_kubectl_as_the_user_is_refused_with_the_servers_message(cluster, tmp_path, admin):
    from localcluster.testing import Kubectl

    kubectl = Kubectl(cluster, tmp_path / "admin", namespace="team")
    await kubectl.ok("create", "rolebinding", "nora-admin", "--clusterrole=admin", "--user=nora")
    refused = await kubectl.run("create", "rolebinding", "pwn", "--clusterrole=cluster-admin", "--user=nora",
                                "--as", "nora")
    assert refused.code == 1
    assert not_held("rolebindings", "pwn", "nora") + EVERYTHING in refused.err, refused.err
    # The same as nora with her own token.
    nora = Kubectl(cluster, tmp_path / "nora", namespace="team")
    nora.kubeconfig = cluster.write_kubeconfig(tmp_path / "nora" / "kubeconfig", namespace="team",
                                               token=cluster.add_token("nora-token", "nora"))
    refused = await nora.run("create", "rolebinding", "pwn", "--clusterrole=cluster-admin", "--user=nora")
    assert refused.code == 1 and not_held("rolebindings", "pwn", "nora") + EVERYTHING in refused.err, refused.err
    refused = await nora.run("apply", "-f", "-", stdin=json.dumps(role("queue-user", [QUEUE_RULE])))
    assert refused.code == 1 and not_held("roles", "queue-user", "nora") + QUEUE_TEXT in refused.err, refused.err
    refused = await nora.run("apply", "--server-side", "-f", "-", stdin=json.dumps(role("queue-user", [QUEUE_RULE])))
    assert refused.code == 1 and not_held("roles", "queue-user", "nora") + QUEUE_TEXT in refused.err, refused.err
    # Done right: what she holds.
    await nora.ok("create", "rolebinding", "bob-view", "--clusterrole=view", "--user=bob")
    await nora.ok("create", "role", "reader", "--verb=get", "--resource=secrets")
    await nora.ok("apply", "-f", "-", stdin=json.dumps(binding("bob-reads", "Role", "reader", [user("bob")])))
    assert "secrets" in (await kubectl.ok("get", "role", "reader", "-o", "json")).out
