"""Issue 35's attacks on pagination and on request decoding, each refused as kube-apiserver refuses it.

H1: a continue token was base64 `{"rv": N, "id": K}` naming a stored snapshot of any earlier list, so a
user allowed to list ConfigMaps in one namespace read another namespace's Secrets with a forged one. A
token is now kube-apiserver's shape, bound by an HMAC to the list it continues (resource, namespace,
selectors, revision, start key), and every page is a read of the request's own resource and selectors.
The lower findings: bad integer query parameters and a DELETE body that is not JSON are 400 with the
server's messages, not 500, and `kubectl logs` of a pod on a node no kubelet serves answers the
apiserver's dial error with no reason. Each attack sits beside the same request done right.
"""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

from localcluster.endpoints.continue_tokens import INCONSISTENT_CONTINUE

from .test_auth import As, binding, grant, role, user

TEAM_CM = "/api/v1/namespaces/team/configmaps"
VAULT_CM = "/api/v1/namespaces/vault/configmaps"
VAULT_SECRETS = "/api/v1/namespaces/vault/secrets"
TEAM_SECRETS = "/api/v1/namespaces/team/secrets"
PODS = "/api/v1/namespaces/team/pods"
NOT_VALID = "invalid continue token: continue key is not valid"
ANOTHER_LIST = f"{NOT_VALID}: the token was issued for another list (resource, namespace or selectors)"


@pytest.fixture
async def admin(http, cluster):
    for namespace in ("team", "vault"):
        cluster.api.ensure_namespace(namespace)
    admin = As(http, cluster, cluster.admin_token)
    for i in range(3):
        for path in (VAULT_SECRETS, TEAM_SECRETS):
            code, _ = await admin.call("POST", path, {"metadata": {"name": f"s{i}", "labels": {"app": "x"}},
                                                      "stringData": {"key": f"secret-{i}"}})
            assert code == 201
        for path in (TEAM_CM, VAULT_CM):
            labels = {"app": "x"} if i != 1 else {"app": "y"}
            assert (await admin.call("POST", path, {"metadata": {"name": f"c{i}", "labels": labels}}))[0] == 201
    return admin


@pytest.fixture
async def mallory(http, cluster, admin):
    """May list ConfigMaps in `team`, and nothing else."""
    await grant(admin, role("cm-reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]))
    await grant(admin, binding("mallory-cm", "Role", "cm-reader", [user("mallory")]))
    return As(http, cluster, cluster.add_token("m", "mallory"))


def token_of(body: dict) -> str:
    return body["metadata"]["continue"]


def decoded(token: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))


def encoded(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def names(body: dict) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


async def test_the_old_forged_token_reads_no_snapshot(cluster, admin, mallory):
    code, first = await admin.call("GET", f"{VAULT_SECRETS}?limit=1")  # someone's paginated list of secrets
    assert code == 200 and names(first) == ["s0"]
    for snapshot in range(4):
        forged = base64.urlsafe_b64encode(json.dumps({"rv": cluster.store.rv, "id": snapshot}).encode()).decode()
        code, body = await mallory.call("GET", f"{TEAM_CM}?limit=10&continue={forged}")
        assert (code, body["reason"]) == (400, "BadRequest") and body["message"].startswith(NOT_VALID)
        assert "items" not in body
    code, body = await mallory.call("GET", f"{TEAM_CM}?limit=2")  # done right: her own list
    assert code == 200 and names(body) == ["c0", "c1"]
    code, body = await mallory.call("GET", f"{TEAM_CM}?limit=2&continue={token_of(body)}")
    assert code == 200 and names(body) == ["c2", "kube-root-ca.crt"] and "continue" not in body["metadata"]


async def test_a_token_is_bound_to_its_resource_namespace_and_selectors(admin, mallory):
    code, first = await admin.call("GET", f"{VAULT_SECRETS}?limit=1&labelSelector=app%3Dx")
    token = token_of(first)
    # Another user, resource and namespace: refused before anything is read.
    code, body = await mallory.call("GET", f"{TEAM_CM}?limit=1&labelSelector=app%3Dx&continue={token}")
    assert (code, body["message"]) == (400, ANOTHER_LIST)
    for path, selector in ((VAULT_CM, "labelSelector=app%3Dx"),  # another resource
                           (TEAM_SECRETS, "labelSelector=app%3Dx"),  # another namespace
                           ("/api/v1/secrets", "labelSelector=app%3Dx"),  # all namespaces
                           (VAULT_SECRETS, "labelSelector=app%3Dy"),  # another label selector
                           (VAULT_SECRETS, ""),  # none
                           (VAULT_SECRETS, "labelSelector=app%3Dx&fieldSelector=metadata.name%3Ds2")):
        code, body = await admin.call("GET", f"{path}?limit=1&{selector}&continue={token}")
        assert (code, body["message"]) == (400, ANOTHER_LIST), (path, selector)
    # Done right: the same request goes on.
    code, body = await admin.call("GET", f"{VAULT_SECRETS}?limit=1&labelSelector=app%3Dx&continue={token}")
    assert code == 200 and names(body) == ["s1"]


async def test_a_guessed_or_edited_token_is_refused(admin):
    code, first = await admin.call("GET", f"{VAULT_SECRETS}?limit=1")
    token = decoded(token_of(first))
    assert set(token) == {"v", "rv", "start", "mac"} and token["start"] == "s0\x00"
    for edit in ({"start": "c0\x00"}, {"rv": token["rv"] - 1}, {"mac": "A" * 43}, {"mac": None}):
        code, body = await admin.call("GET", f"{VAULT_SECRETS}?limit=1&continue={encoded({**token, **edit})}")
        assert (code, body["message"]) == (400, ANOTHER_LIST), edit
    # kube-apiserver's DecodeContinue messages, in its order.
    for value, message in (("%%%", "illegal base64 data at input byte 0"),
                           (encoded({"v": "v2", "rv": 1, "start": "a"}),
                            "server does not recognize this encoded version v2"),
                           (encoded({"v": "meta.k8s.io/v1", "start": "a"}),
                            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)"),
                           (encoded({"v": "meta.k8s.io/v1", "rv": 1}),
                            "encoded start key empty (version meta.k8s.io/v1)"),
                           (encoded({"v": "meta.k8s.io/v1", "rv": 1, "start": "../team/x"}), "../team/x"),
                           (encoded([1]), "json: cannot unmarshal array into Go value of type storage.continueToken")):
        code, body = await admin.call("GET", f"{VAULT_SECRETS}?limit=1&continue={value.replace('%', '%25')}")
        assert (code, body["message"]) == (400, f"{NOT_VALID}: {message}"), value


async def test_resource_names_restrict_every_page(http, cluster, admin):
    """A list allowed by `resourceNames` carries a metadata.name field selector; a token bound to an
    unfiltered list cannot lift it."""
    await grant(admin, role("c2-reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"],
                                           "resourceNames": ["c2"]}]))
    await grant(admin, binding("bob-c2", "Role", "c2-reader", [user("bob")]))
    bob = As(http, cluster, cluster.add_token("b", "bob"))
    code, everything = await admin.call("GET", f"{TEAM_CM}?limit=1")
    code, body = await bob.call("GET", f"{TEAM_CM}?limit=1&fieldSelector=metadata.name%3Dc2"
                                       f"&continue={token_of(everything)}")
    assert (code, body["message"]) == (400, ANOTHER_LIST)
    assert (await bob.call("GET", f"{TEAM_CM}?limit=1"))[0] == 403
    code, body = await bob.call("GET", f"{TEAM_CM}?limit=1&fieldSelector=metadata.name%3Dc2")
    assert code == 200 and names(body) == ["c2"] and "continue" not in body["metadata"]


async def test_pages_are_reads_at_the_first_pages_revision_with_the_selectors(admin):
    code, first = await admin.call("GET", f"{TEAM_CM}?limit=1&labelSelector=app%3Dx")
    assert names(first) == ["c0"] and "remainingItemCount" not in first["metadata"]  # etcd counts keys, not matches
    # Changed after the first page: the next page shows the objects as they were at its revision.
    code, changed = await admin.call("GET", f"{TEAM_CM}/c2")
    changed["metadata"]["labels"] = {"app": "y"}
    assert (await admin.call("PUT", f"{TEAM_CM}/c2", changed))[0] == 200
    assert (await admin.call("POST", TEAM_CM, {"metadata": {"name": "c3", "labels": {"app": "x"}}}))[0] == 201
    code, rest = await admin.call("GET", f"{TEAM_CM}?limit=5&labelSelector=app%3Dx&continue={token_of(first)}")
    assert code == 200 and names(rest) == ["c2"] and rest["metadata"]["resourceVersion"] == \
        first["metadata"]["resourceVersion"]
    assert rest["items"][0]["metadata"]["labels"] == {"app": "x"}
    code, unfiltered = await admin.call("GET", f"{TEAM_CM}?limit=2")
    assert unfiltered["metadata"]["remainingItemCount"] == len(names((await admin.call("GET", TEAM_CM))[1])) - 2


async def test_an_expired_token_is_410_with_a_token_to_go_on(cluster, admin):
    code, first = await admin.call("GET", f"{TEAM_CM}?limit=1")
    code, other = await admin.call("GET", f"{VAULT_SECRETS}?limit=1")
    cluster.expire_history()
    code, body = await admin.call("GET", f"{TEAM_CM}?limit=1&continue={other['metadata']['continue']}")
    assert (code, body["message"]) == (400, ANOTHER_LIST)  # another list's token stays refused
    code, body = await admin.call("GET", f"{TEAM_CM}?limit=1&continue={token_of(first)}")
    assert (code, body["reason"], body["message"]) == (410, "Expired", INCONSISTENT_CONTINUE)
    going_on = body["metadata"]["continue"]
    assert decoded(going_on)["rv"] == -1 and decoded(going_on)["start"] == "c0\x00"
    assert (await admin.call("POST", TEAM_CM, {"metadata": {"name": "c1a"}}))[0] == 201
    code, rest = await admin.call("GET", f"{TEAM_CM}?limit=10&continue={going_on}")
    assert code == 200 and names(rest)[:3] == ["c1", "c1a", "c2"]  # the latest state, from where it stopped
    assert rest["metadata"]["resourceVersion"] == str(cluster.store.rv)


async def test_kubectl_get_in_chunks(kubectl, namespace, cluster):
    for i in range(5):
        cluster.api.create(cluster.registry.get("", "v1", "configmaps"), namespace,
                           {"metadata": {"name": f"chunk{i}", "labels": {"app": "chunked"}}})
    got = await kubectl.ok("get", "configmaps", "-l", "app=chunked", "--chunk-size=2", "-o", "name")
    assert got.out.split() == [f"configmap/chunk{i}" for i in range(5)]


# --- query parameters and DELETE bodies --------------------------------------------------------------


def parse_int(text: str, why: str = "invalid syntax") -> str:
    return f'strconv.ParseInt: parsing "{text}": {why}'


async def test_bad_integer_query_parameters_are_400(admin):
    assert (await admin.call("POST", PODS, {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "busybox"}]}}))[0] == 201
    for method, path, message in (
            ("GET", f"{PODS}?limit=abc", parse_int("abc")),
            ("GET", f"{PODS}?limit=1.5", parse_int("1.5")),
            ("GET", f"{PODS}?limit=99999999999999999999", parse_int("99999999999999999999", "value out of range")),
            ("GET", f"{PODS}?watch=1&limit=abc", parse_int("abc")),
            ("GET", f"{PODS}?watch=1&timeoutSeconds=abc", parse_int("abc")),
            ("GET", f"{PODS}?watch=1&timeoutSeconds=nan", parse_int("nan")),
            ("GET", f"{PODS}?watch=1&timeoutSeconds=inf", parse_int("inf")),
            ("DELETE", f"{PODS}/p?gracePeriodSeconds=abc", parse_int("abc")),
            ("DELETE", f"{PODS}?gracePeriodSeconds=abc", parse_int("abc"))):
        code, body = await asyncio.wait_for(admin.call(method, path), 10)  # an answer, not an endless watch
        assert (code, body["reason"], body["message"]) == (400, "BadRequest", message), path
    code, body = await admin.call("GET", f"{PODS}?limit=1")  # done right
    assert code == 200 and names(body) == ["p"]
    async with admin.session.get(f"{admin.url}{PODS}?watch=1&timeoutSeconds=1", headers=admin.headers) as watch:
        assert watch.status == 200
        lines = (await asyncio.wait_for(watch.read(), 10)).splitlines()  # ends after its timeout
    assert [json.loads(line)["type"] for line in lines] == ["ADDED"]
    assert (await admin.call("DELETE", f"{PODS}/p?gracePeriodSeconds=0"))[0] == 200


async def test_a_delete_body_that_is_not_delete_options_is_400(admin):
    assert (await admin.call("POST", TEAM_CM, {"metadata": {"name": "kept"}}))[0] == 201
    for body, message in (
            (b"not json", "couldn't get version/kind; json parse error: invalid character 'o' in literal null "
                          "(expecting 'u')"),
            (b"<xml/>", "couldn't get version/kind; json parse error: invalid character '<' looking for beginning "
                        "of value"),
            (b'{"gracePeriodSeconds": 0', "couldn't get version/kind; json parse error: unexpected end of JSON "
                                          "input"),
            (b'{"gracePeriodSeconds": "abc"}', "json: cannot unmarshal string into Go struct field "
                                               "DeleteOptions.gracePeriodSeconds of type int64"),
            (b'{"orphanDependents": "yes"}', "json: cannot unmarshal string into Go struct field "
                                             "DeleteOptions.orphanDependents of type bool")):
        async with admin.session.delete(f"{admin.url}{TEAM_CM}/kept", data=body,
                                        headers={**admin.headers, "Content-Type": "application/json"}) as r:
            answer = await r.json(content_type=None)
        assert (r.status, answer["reason"], answer["message"]) == (400, "BadRequest", message), body
    assert (await admin.call("GET", f"{TEAM_CM}/kept"))[0] == 200  # none of them deleted it
    # With a body, the query is not read (handlers/delete.go): its bad gracePeriodSeconds does not matter.
    code, _ = await admin.call("DELETE", f"{TEAM_CM}/kept?gracePeriodSeconds=abc", {"gracePeriodSeconds": 0})
    assert code == 200


async def test_a_create_or_replace_body_that_is_not_json_is_the_serializers_400(admin):
    # The apiserver's JSON serializer finds the kind first, with encoding/json: its message, not a generic one.
    code, created = await admin.call("POST", TEAM_CM, {"metadata": {"name": "kept"}})
    assert code == 201
    for method, path in (("POST", TEAM_CM), ("PUT", f"{TEAM_CM}/kept")):
        # No kind found, the handler's transformDecodeError wraps it with the start of the body (hex unless JSON)
        for body, message in ((b"not json", "invalid character 'o' in literal null (expecting 'u') (6e6f74206a736f6e)"),
                              (b'{"metadata": {', 'unexpected end of JSON input ({"metadata": {)')):
            async with admin.session.request(method, f"{admin.url}{path}", data=body,
                                             headers={**admin.headers, "Content-Type": "application/json"}) as r:
                answer = await r.json(content_type=None)
            expected = (400, "BadRequest", "the object provided is unrecognized (must be of type ConfigMap): "
                                           f"couldn't get version/kind; json parse error: {message}")
            assert (r.status, answer["reason"], answer["message"]) == expected, (method, body)
    code, kept = await admin.call("GET", f"{TEAM_CM}/kept")
    assert code == 200 and kept["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_a_boolean_query_parameter_is_true_unless_absent_false_or_0(admin):
    # watch=yes opens a watch, as on the apiserver; watch=false and watch=0 are lists.
    for value, watching in (("yes", True), ("", True), ("false", False), ("False", False), ("0", False)):
        url = f"{admin.url}{TEAM_CM}?watch={value}&timeoutSeconds=1"
        async with admin.session.get(url, headers=admin.headers) as r:
            body = await asyncio.wait_for(r.read(), 10)
        assert r.status == 200, body
        assert (b'"kind":"ConfigMapList"' not in body.replace(b" ", b"")) == watching, (value, body[:200])


# --- kubectl logs of a pod no kubelet runs ----------------------------------------------------------


async def test_logs_of_a_pod_on_a_node_without_a_kubelet_have_no_reason(kubectl, namespace, admin):
    nodes = "/api/v1/nodes"
    code, far = await admin.call("POST", nodes, {"metadata": {"name": "far"}})
    far["status"] = {"addresses": [{"type": "InternalIP", "address": "192.0.2.7"}]}
    assert (await admin.call("PUT", f"{nodes}/far/status", far))[0] == 200
    assert (await admin.call("POST", nodes, {"metadata": {"name": "bare"}}))[0] == 201
    for name, node in (("far-pod", "far"), ("bare-pod", "bare")):
        code, _ = await admin.call("POST", f"/api/v1/namespaces/{namespace}/pods", {
            "metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}})
        assert code == 201
    dial = (f'Get "https://192.0.2.7:10250/containerLogs/{namespace}/far-pod/c": dial tcp 192.0.2.7:10250: '
            "connect: connection refused")
    for name, message in (("far-pod", dial), ("bare-pod", "no preferred addresses found; known addresses: []")):
        code, body = await admin.call("GET", f"/api/v1/namespaces/{namespace}/pods/{name}/log")
        assert (code, body["message"]) == (500, message) and "reason" not in body
        logs = await kubectl.run("logs", name)
        assert (logs.code, logs.err) == (1, f"Error from server: {message}\n")
