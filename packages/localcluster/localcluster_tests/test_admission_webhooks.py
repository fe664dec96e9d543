"""localcluster calls admission webhooks as kube-apiserver does, over real HTTPS to a webhook server of the test's
(webhook_server.py): what the AdmissionReview carries, the answers (a denial's Status, failed calls under Fail
and Ignore, timeouts), rules, selectors, dry runs, mutation, the response's checks, service references and the
exemption of the admission configurations. kubectl's view of the same: test_admission_webhooks_kubectl.py."""

from __future__ import annotations

import asyncio
import socket

from .rest import MERGE, Rest
from .webhook_server import WebhookServer, allow, deny, json_patch

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def rule(*operations: str, resources=("configmaps",), groups=("",), versions=("v1",), **more) -> dict:
    return {"operations": list(operations), "apiGroups": list(groups), "apiVersions": list(versions),
            "resources": list(resources), **more}


def hook(name: str, server: WebhookServer, path: str, *rules: dict, **changes) -> dict:
    return {"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": server.url(path), "caBundle": server.ca_bundle},
            "rules": list(rules) or [rule("CREATE", "UPDATE")], **changes}


async def install(rest: Rest, *hooks: dict, mutating: bool = False, name: str = "hooks") -> dict:
    plural, kind = (("mutatingwebhookconfigurations", "MutatingWebhookConfiguration") if mutating
                    else ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration"))
    return await rest.ok("POST", f"{ADMISSION}/{plural}", {"apiVersion": "admissionregistration.k8s.io/v1",
                                                           "kind": kind, "metadata": {"name": name},
                                                           "webhooks": list(hooks)})


def configmap(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels},
            "data": {"k": "v"}}




def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_a_denial_is_the_webhooks_status_and_the_review_carries_the_request(rest, server):
    causes = [{"reason": "FieldValueInvalid", "message": "must be y", "field": "data.k"}]
    server.handlers["/deny"] = lambda review: deny(review, "data.k: must be y", 422, "Invalid", causes)
    await install(rest, hook("deny.example.com", server, "/deny"))
    status, body = await rest.call("POST", CONFIGMAPS, configmap("c1"), fieldManager="tester")
    assert (status, body) == (422, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'admission webhook "deny.example.com" denied the request: data.k: must be y',
        "reason": "Invalid", "details": {"causes": causes}, "code": 422})
    assert (await rest.call("GET", f"{CONFIGMAPS}/c1"))[0] == 404
    (review,) = [r for p, r in server.reviews]
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    assert review["_query"] == {"timeout": "10s"}
    request = review["request"]
    assert request["kind"] == request["requestKind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert request["resource"] == request["requestResource"] == {"group": "", "version": "v1",
                                                                 "resource": "configmaps"}
    assert (request["name"], request["namespace"], request["operation"], request["dryRun"]) == (
        "c1", "default", "CREATE", False)
    assert "subResource" not in request and request["oldObject"] is None
    assert request["userInfo"]["username"] == "admin" and "system:masters" in request["userInfo"]["groups"]
    assert request["object"]["data"] == {"k": "v"} and request["object"]["metadata"]["uid"]
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "tester"}
    assert len(request["uid"]) == 36
    # Without a code below 400 or a message, as ToStatusErr sanitizes it.
    server.handlers["/deny"] = lambda review: deny(review)
    status, body = await rest.call("POST", CONFIGMAPS, configmap("c2"))
    assert (status, body["message"], "reason" in body) == (
        400, 'admission webhook "deny.example.com" denied the request without explanation', False)


async def test_every_operation_is_seen_with_its_objects_and_options(rest, server):
    await install(rest, hook("all.example.com", server, "/all", rule("*")))
    made = await rest.ok("POST", CONFIGMAPS, configmap("c"))
    await rest.ok("PUT", f"{CONFIGMAPS}/c", {**made, "data": {"k": "put"}})
    await rest.ok("PATCH", f"{CONFIGMAPS}/c", {"data": {"k": "patched"}}, MERGE)
    code, _ = await rest.apply(f"{CONFIGMAPS}/c", {"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": "c"}, "data": {"k": "applied"}},
                               "applier", force="true")
    assert code == 200
    await rest.ok("DELETE", f"{CONFIGMAPS}/c", {"propagationPolicy": "Background"})
    requests = server.requests("/all")
    assert [(r["operation"], r["options"]["kind"]) for r in requests] == [
        ("CREATE", "CreateOptions"), ("UPDATE", "UpdateOptions"), ("UPDATE", "PatchOptions"),
        ("UPDATE", "PatchOptions"), ("DELETE", "DeleteOptions")]
    assert [((r["object"] or {}).get("data"), (r["oldObject"] or {}).get("data")) for r in requests] == [
        ({"k": "v"}, None), ({"k": "put"}, {"k": "v"}), ({"k": "patched"}, {"k": "put"}),
        ({"k": "applied"}, {"k": "patched"}), (None, {"k": "applied"})]
    assert requests[3]["options"]["force"] is True and requests[4]["options"]["propagationPolicy"] == "Background"


async def test_a_timeout_fails_the_request_under_fail_and_is_ignored_under_ignore(rest, server):
    release = asyncio.Event()

    async def stall(review):
        await release.wait()
        return allow(review)

    server.handlers["/slow"] = stall
    try:
        await install(rest, hook("slow.example.com", server, "/slow", timeoutSeconds=1))
        status, body = await rest.call("POST", CONFIGMAPS, configmap("c"))
        text = (f'failed calling webhook "slow.example.com": failed to call webhook: Post '
                f'"{server.url("/slow")}?timeout=1s": context deadline exceeded')
        assert (status, body["reason"], body["message"], body["details"]) == (
            500, "InternalError", f"Internal error occurred: {text}", {"causes": [{"message": text}]})
        await rest.ok("DELETE", f"{ADMISSION}/validatingwebhookconfigurations/hooks")
        await install(rest, hook("slow.example.com", server, "/slow", timeoutSeconds=1, failurePolicy="Ignore"))
        await rest.ok("POST", CONFIGMAPS, configmap("c"))
    finally:
        release.set()


async def test_a_webhook_that_is_down_under_fail_and_ignore(rest, server):
    port = free_port()
    down = hook("down.example.com", server, "/x")
    down["clientConfig"]["url"] = f"https://127.0.0.1:{port}/x"
    await install(rest, down, name="down")
    status, body = await rest.call("POST", CONFIGMAPS, configmap("c"))
    assert (status, body["message"]) == (500, (
        f'Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: Post '
        f'"https://127.0.0.1:{port}/x?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused'))
    await rest.ok("PATCH", f"{ADMISSION}/validatingwebhookconfigurations/down",
                  [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}],
                  "application/json-patch+json")
    await rest.ok("POST", CONFIGMAPS, configmap("c"))


async def test_namespace_and_object_selectors(rest, server, cluster):
    server.handlers["/deny"] = lambda review: deny(review, "no")
    await rest.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "picked", "labels": {"team": "a"}}})
    await rest.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "other"}})
    await install(rest, hook("ns.example.com", server, "/deny", namespaceSelector={"matchLabels": {"team": "a"}},
                             objectSelector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}))
    assert (await rest.call("POST", "/api/v1/namespaces/picked/configmaps", configmap("c")))[0] == 400
    await rest.ok("POST", "/api/v1/namespaces/other/configmaps", configmap("c"))
    await rest.ok("POST", "/api/v1/namespaces/picked/configmaps", configmap("c", skip="yes"))
    # objectSelector: the old object or the new one; here both carry the label, so no call
    await rest.ok("PATCH", "/api/v1/namespaces/picked/configmaps/c", {"data": {"k": "2"}}, MERGE)
    # dropping the label: the new object matches (no `skip`)
    status, _ = await rest.call("PATCH", "/api/v1/namespaces/picked/configmaps/c",
                                {"metadata": {"labels": {"skip": None}}}, MERGE)
    assert status == 400
    # a Namespace matches by its own labels
    await install(rest, hook("namespaces.example.com", server, "/deny", rule("CREATE", resources=("namespaces",)),
                             namespaceSelector={"matchLabels": {"team": "b"}}), name="namespaces")
    await rest.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "plain"}})
    assert (await rest.call("POST", "/api/v1/namespaces", {"metadata": {"name": "b", "labels": {"team": "b"}}}))[0] \
        == 400


async def test_rules_take_operations_resources_subresources_and_scope(rest, server, cluster):
    await install(rest, hook("status.example.com", server, "/status", rule("UPDATE", resources=("pods/status",))),
                  hook("cluster.example.com", server, "/cluster", rule("CREATE", resources=("*",), groups=("*",),
                                                                      versions=("*",), scope="Cluster")))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    await rest.ok("POST", "/api/v1/namespaces/default/pods", pod)
    await rest.ok("PATCH", "/api/v1/namespaces/default/pods/p", {"metadata": {"labels": {"a": "b"}}}, MERGE)
    assert server.paths() == []
    await rest.ok("PATCH", "/api/v1/namespaces/default/pods/p/status", {"status": {"message": "hi"}}, MERGE)
    (request,) = server.requests("/status")
    assert (request["subResource"], request["requestSubResource"], request["object"]["status"]["message"]) == (
        "status", "status", "hi")
    await rest.ok("POST", CONFIGMAPS, configmap("namespaced"))  # not cluster-scoped: no call
    await rest.ok("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                  {"metadata": {"name": "high"}, "value": 1000})
    assert [r["name"] for r in server.requests("/cluster")] == ["high"]


async def test_dry_run_and_side_effects(rest, server, cluster):
    await install(rest, hook("none.example.com", server, "/none"))
    await rest.ok("POST", CONFIGMAPS, configmap("c"), dryRun="All")
    (request,) = server.requests("/none")
    assert request["dryRun"] is True and request["options"]["dryRun"] == ["All"]
    assert (await rest.call("GET", f"{CONFIGMAPS}/c"))[0] == 404
    # `Some` is refused by v1's validation; stored as an older API version could have left it
    some = hook("some.example.com", server, "/some", sideEffects="Some")
    rt = cluster.registry.get("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")
    cluster.api.system_write(rt, {"apiVersion": "admissionregistration.k8s.io/v1",
                                  "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "some"},
                                  "webhooks": [{**some, "failurePolicy": "Ignore", "timeoutSeconds": 10}]})
    status, body = await rest.call("POST", CONFIGMAPS, configmap("d"), dryRun="All")
    assert (status, body["reason"], body["message"]) == (
        400, "BadRequest", 'admission webhook "some.example.com" does not support dry run')
    await rest.ok("POST", CONFIGMAPS, configmap("d"))
    assert server.paths() == ["/none", "/none", "/none", "/some"]


async def test_a_mutating_webhook_patches_and_its_result_is_validated(rest, server):
    server.handlers["/mutate"] = lambda review: json_patch(review, [
        {"op": "replace", "path": "/metadata/labels/bad", "value": "fixed"},
        {"op": "add", "path": "/data/added", "value": "by-webhook"},
        {"op": "replace", "path": "/metadata/uid", "value": "forged"}])  # the server's to set, not a webhook's
    server.handlers["/check"] = lambda review: (
        allow(review) if review["request"]["object"]["data"].get("added") else deny(review, "not mutated"))
    await install(rest, hook("mutate.example.com", server, "/mutate", reinvocationPolicy="IfNeeded"), mutating=True)
    await install(rest, hook("check.example.com", server, "/check"))
    made = await rest.ok("POST", CONFIGMAPS, configmap("c", bad="not valid!"))  # invalid, but the webhook fixes it
    assert made["metadata"]["labels"] == {"bad": "fixed"} and made["data"] == {"k": "v", "added": "by-webhook"}
    assert made["metadata"]["uid"] != "forged"
    assert server.paths() == ["/mutate", "/check"]
    server.handlers["/mutate"] = lambda review: json_patch(review, [
        {"op": "add", "path": "/metadata/labels/worse", "value": "still not valid!"}])
    status, body = await rest.call("POST", CONFIGMAPS, configmap("d"))
    assert status == 422 and "still not valid!" in body["message"]


async def test_the_response_must_answer_the_request(rest, server):
    server.handlers["/wrong"] = lambda review: {**allow(review), "response": {"uid": "other", "allowed": True}}
    await install(rest, hook("wrong.example.com", server, "/wrong"))
    status, body = await rest.call("POST", CONFIGMAPS, configmap("c"))
    uid = server.requests("/wrong")[0]["uid"]
    assert (status, body["message"]) == (500, (
        'Internal error occurred: failed calling webhook "wrong.example.com": received invalid webhook response: '
        f'expected response.uid="{uid}", got "other"'))
    server.handlers["/wrong"] = lambda review: {**allow(review), "apiVersion": "admission.k8s.io/v1beta1"}
    status, body = await rest.call("POST", CONFIGMAPS, configmap("c"))
    assert body["message"].endswith("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, "
                                    "got admission.k8s.io/v1beta1, Kind=AdmissionReview")
    server.handlers["/wrong"] = lambda review: json_patch(review, [{"op": "remove", "path": "/data"}])
    status, body = await rest.call("POST", CONFIGMAPS, configmap("c"))
    assert body["message"].endswith("received invalid webhook response: validating webhook may not return "
                                    "response.patch")


async def test_a_service_reference_goes_to_the_services_endpoints(rest, cluster):
    server = await WebhookServer(names=("hooks.default.svc",)).start()
    try:
        hooked = hook("svc.example.com", server, "/v")
        hooked["clientConfig"] = {"service": {"namespace": "default", "name": "hooks", "path": "/v"},
                                  "caBundle": server.ca_bundle}
        await install(rest, hooked)
        status, body = await rest.call("POST", CONFIGMAPS, configmap("c"))
        assert body["message"] == ('Internal error occurred: failed calling webhook "svc.example.com": failed to call '
                                   'webhook: Post "https://hooks.default.svc:443/v?timeout=10s": service "hooks" not '
                                   'found')
        await rest.ok("POST", "/api/v1/namespaces/default/services", {
            "metadata": {"name": "hooks"}, "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 9443}]}})
        status, body = await rest.call("POST", CONFIGMAPS, configmap("c"))
        assert body["message"].endswith('no endpoints available for service "hooks"')
        await rest.ok("POST", "/api/v1/namespaces/default/endpoints", {
            "metadata": {"name": "hooks"},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": server.port}]}]})
        await rest.ok("POST", CONFIGMAPS, configmap("c"))
        (path, review), = server.reviews
        assert (path, review["_host"]) == ("/v", "hooks.default.svc:443")
    finally:
        await server.stop()
    # a certificate for another name is refused
    other = await WebhookServer(names=("other.default.svc",), ca=server.ca).start()
    try:
        await rest.ok("PUT", "/api/v1/namespaces/default/endpoints/hooks", {
            "metadata": {"name": "hooks"},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": other.port}]}]})
        status, body = await rest.call("POST", CONFIGMAPS, configmap("d"))
        assert (status, body["message"]) == (500, (
            'Internal error occurred: failed calling webhook "svc.example.com": failed to call webhook: Post '
            '"https://hooks.default.svc:443/v?timeout=10s": tls: failed to verify certificate: x509: certificate is '
            'valid for other.default.svc, not hooks.default.svc'))
        assert other.reviews == []
        await rest.ok("PATCH", f"{ADMISSION}/validatingwebhookconfigurations/hooks", [
            {"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": WebhookServer().ca_bundle}],
            "application/json-patch+json")
        status, body = await rest.call("POST", CONFIGMAPS, configmap("d"))
        assert body["message"].endswith("tls: failed to verify certificate: x509: certificate signed by unknown "
                                        "authority")
    finally:
        await other.stop()


async def test_the_admission_configurations_are_exempt(rest, server):
    server.handlers["/deny"] = lambda review: deny(review, "no")
    await install(rest, hook("everything.example.com", server, "/deny", rule("*", resources=("*/*",), groups=("*",),
                                                                              versions=("*",))))
    assert (await rest.call("POST", CONFIGMAPS, configmap("c")))[0] == 400
    await install(rest, hook("other.example.com", server, "/deny"), name="second")
    await rest.ok("PATCH", f"{ADMISSION}/validatingwebhookconfigurations/hooks", {"metadata": {"labels": {"a": "b"}}},
                  MERGE)
    await rest.ok("POST", f"{ADMISSION}/validatingadmissionpolicies", {
        "metadata": {"name": "p"}, "spec": {"failurePolicy": "Fail", "validations": [{"expression": "true"}],
                                            "matchConstraints": {"resourceRules": [rule("CREATE")]}}})
    await rest.ok("DELETE", f"{ADMISSION}/validatingwebhookconfigurations/hooks")
    assert server.paths() == ["/deny"]


async def test_warnings_become_warning_headers(cluster, server, rest):
    server.handlers["/warn"] = lambda review: allow(review, warnings=['deprecated "field"', "second"])
    await install(rest, hook("warn.example.com", server, "/warn"))
    async with cluster.session() as session, session.post(cluster.url + CONFIGMAPS, json=configmap("c")) as response:
        assert response.status == 201
        assert response.headers.getall("Warning") == ['299 - "deprecated \\"field\\""', '299 - "second"']
    # a refusal keeps the warnings given with it, as the API server's do
    server.handlers["/warn"] = lambda review: deny(review, "no", 403, "Forbidden", warnings=["told you"])
    async with cluster.session() as session, session.post(cluster.url + CONFIGMAPS, json=configmap("d")) as response:
        assert response.status == 403 and response.headers.getall("Warning") == ['299 - "told you"']


async def test_an_object_changed_during_the_calls_is_admitted_again(rest, server, cluster):
    made = await rest.ok("POST", CONFIGMAPS, configmap("c"))
    rt = cluster.registry.get("", "v1", "configmaps")
    calls: list[dict] = []
    meddled = [0]

    def meddle(review):
        calls.append(review["request"]["object"]["data"])
        if len(calls) == 1:  # another writer gets in while the webhook thinks
            meddled[0] += 1
            cluster.api.patch(rt, "default", "c", MERGE, {"data": {"other": f"writer{meddled[0]}"}})
        return allow(review)

    server.handlers["/meddle"] = meddle
    await install(rest, hook("meddle.example.com", server, "/meddle", rule("UPDATE")))
    status, body = await rest.call("PUT", f"{CONFIGMAPS}/c", {**made, "data": {"k": "mine"}})
    assert (status, body["reason"]) == (409, "Conflict")  # its resourceVersion is no longer the stored one
    assert calls == [{"k": "mine"}]
    calls.clear()  # a merge patch has no precondition: applied again to the new state, the webhook called again
    patched = await rest.ok("PATCH", f"{CONFIGMAPS}/c", {"data": {"k": "patched"}}, MERGE)
    assert patched["data"] == {"k": "patched", "other": "writer2"}
    assert calls == [{"k": "patched", "other": "writer1"}, {"k": "patched", "other": "writer2"}]


async def test_match_conditions(rest, server):
    server.handlers["/deny"] = lambda review: deny(review, "no")
    await install(rest, hook("cond.example.com", server, "/deny", matchConditions=[
        {"name": "only-big", "expression": "has(object.data) && size(object.data) > 1"}]))
    await rest.ok("POST", CONFIGMAPS, configmap("small"))
    assert (await rest.call("POST", CONFIGMAPS, {**configmap("big"), "data": {"a": "1", "b": "2"}}))[0] == 400
    assert server.paths() == ["/deny"]


async def test_match_policy_equivalent_calls_with_the_version_the_rule_names(rest, server):
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    await rest.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema},
                              {"name": "v2", "served": True, "storage": False, "schema": schema}]}})
    only_v1 = rule("CREATE", resources=("gadgets",), groups=("example.com",), versions=("v1",))
    await install(rest, hook("equivalent.example.com", server, "/equivalent", only_v1),
                  hook("exact.example.com", server, "/exact", only_v1, matchPolicy="Exact"))
    await rest.ok("POST", "/apis/example.com/v2/namespaces/default/gadgets",
                  {"apiVersion": "example.com/v2", "kind": "Gadget", "metadata": {"name": "g"}})
    assert server.paths() == ["/equivalent"]
    (request,) = server.requests("/equivalent")
    assert (request["kind"]["version"], request["resource"]["version"], request["requestKind"]["version"],
            request["requestResource"]["version"], request["object"]["apiVersion"]) == (
        "v1", "v1", "v2", "v2", "example.com/v1")


async def test_a_delete_meets_its_webhooks_with_its_warnings(cluster, rest, server):
    server.handlers["/delete"] = lambda review: allow(review, warnings=["deleting"])
    await rest.ok("POST", CONFIGMAPS, configmap("c"))
    await install(rest, hook("delete.example.com", server, "/delete", rule("DELETE")))
    async with cluster.session() as session, session.delete(f"{cluster.url}{CONFIGMAPS}/c",
                                                           params={"dryRun": "All"}) as response:
        assert response.status == 200 and response.headers.getall("Warning") == ['299 - "deleting"']
    (request,) = server.requests("/delete")
    assert (request["object"], request["oldObject"]["metadata"]["name"], request["dryRun"]) == (None, "c", True)
    assert request["options"] == {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"]}
    server.handlers["/delete"] = lambda review: deny(review, "keep it", 403, "Forbidden")
    status, body = await rest.call("DELETE", f"{CONFIGMAPS}/c")
    assert (status, body["message"]) == (403, 'admission webhook "delete.example.com" denied the request: keep it')
    await rest.ok("GET", f"{CONFIGMAPS}/c")
