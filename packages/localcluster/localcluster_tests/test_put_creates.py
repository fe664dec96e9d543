"""A PUT of a missing object creates it where the kind's registry allows create on update (Services, Endpoints,
Leases, Events, RBAC's four kinds: 201), and is 404 elsewhere; a JSON patch that does not apply is the apiserver's
generic 422 with the library's error as its one cause (the corpus of tests/real compares both with a real server)."""

from __future__ import annotations

import pytest

from .test_auth import As

SERVICE = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "made", "resourceVersion": "5"},  # the creating branch never compares it
           "spec": {"clusterIP": "None", "selector": {"app": "x"}, "ports": [{"port": 80}]}}
ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "made"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
LEASE = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"holderIdentity": "me"}}  # no name
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made"}, "data": {"k": "v"}}


@pytest.fixture
async def admin(http, cluster):
    cluster.api.ensure_namespace("team")
    return As(http, cluster, cluster.admin_token)


@pytest.mark.parametrize(("path", "body"), [
    ("/api/v1/namespaces/team/services/made", SERVICE),
    ("/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles/made", ROLE),
    ("/apis/coordination.k8s.io/v1/namespaces/team/leases/made", LEASE),
])
async def test_a_put_of_a_missing_object_creates_it_where_the_registry_allows(admin, path, body):
    code, created = await admin.call("PUT", path, body)
    assert code == 201, created
    assert created["metadata"]["name"] == "made" and created["metadata"]["resourceVersion"] != "5"
    code, again = await admin.call("PUT", path, {**body, "metadata": {"name": "made"}})
    assert code == 200 and again["metadata"]["uid"] == created["metadata"]["uid"]  # then an update


async def test_a_put_of_a_missing_configmap_is_not_found(admin):
    code, status = await admin.call("PUT", "/api/v1/namespaces/team/configmaps/made", CONFIGMAP)
    assert (code, status["reason"], status["message"]) == (404, "NotFound", 'configmaps "made" not found')


@pytest.mark.parametrize(("ops", "cause"), [
    ([{"op": "test", "path": "/metadata/name", "value": "other"}], "not equal to tested value"),
    ([{"op": "replace", "path": "/nope/deeper", "value": 1}], "JSON patch failed: member 'nope' not found"),
])
async def test_a_json_patch_that_does_not_apply_is_a_generic_422(admin, ops, cause):
    assert (await admin.call("POST", "/api/v1/namespaces/team/configmaps", CONFIGMAP))[0] == 201
    code, status = await admin.call("PATCH", "/api/v1/namespaces/team/configmaps/made", ops,
                                    {"Content-Type": "application/json-patch+json"})
    assert (code, status["reason"], status["message"]) == (
        422, "Invalid", "the server rejected our request due to an error in our request")
    [only] = status["details"]["causes"]
    assert only["reason"] == "UnexpectedServerResponse" and cause in only["message"]
    assert '"data"' not in only["message"]  # the object is not printed
