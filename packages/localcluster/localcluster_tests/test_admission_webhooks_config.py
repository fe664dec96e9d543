"""ValidatingWebhookConfiguration and MutatingWebhookConfiguration as objects: served cluster-scoped by
admissionregistration.k8s.io/v1 with the real server's defaults and validation messages, and `kubectl apply`
of one works."""

from __future__ import annotations

import json

import pytest
import yaml
from kubernetes_asyncio.client.exceptions import ApiException

GROUP, VERSION = "admissionregistration.k8s.io", "v1"
VALIDATING, MUTATING = "validatingwebhookconfigurations", "mutatingwebhookconfigurations"


def hook(name: str = "pods.example.com", **changes) -> dict:
    return {"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": "default", "name": "hooks", "path": "/validate"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            **changes}


def configuration(kind: str, name: str, *hooks: dict) -> dict:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "metadata": {"name": name}, "webhooks": list(hooks)}


async def refusal(call) -> tuple[int, dict]:
    with pytest.raises(ApiException) as caught:
        await call
    return caught.value.status, json.loads(caught.value.body)


async def test_defaults_are_the_servers(custom):
    made = await custom.create_cluster_custom_object(
        GROUP, VERSION, VALIDATING, configuration("ValidatingWebhookConfiguration", "v", hook()))
    webhook = made["webhooks"][0]
    assert {k: webhook[k] for k in ("failurePolicy", "matchPolicy", "namespaceSelector", "objectSelector",
                                    "timeoutSeconds")} == {
        "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
        "timeoutSeconds": 10}
    assert webhook["rules"][0]["scope"] == "*"
    assert webhook["clientConfig"]["service"]["port"] == 443
    assert "reinvocationPolicy" not in webhook
    made = await custom.create_cluster_custom_object(
        GROUP, VERSION, MUTATING, configuration("MutatingWebhookConfiguration", "m", hook(url_free := "m.example.com")))
    assert made["webhooks"][0]["reinvocationPolicy"] == "Never" and made["webhooks"][0]["name"] == url_free
    listed = await custom.list_cluster_custom_object(GROUP, VERSION, MUTATING)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["m"]


async def test_validation_messages(custom):
    bad = [
        hook("short.name", sideEffects="Some", timeoutSeconds=31, failurePolicy="Sometimes",
             admissionReviewVersions=["v9"]),
        hook("short.name", clientConfig={"url": "http://user:pw@example.com/x?a=b#frag"}),
        hook("third.example.com", clientConfig={}, rules=[{"operations": ["*", "CREATE"], "apiGroups": [""],
                                                           "apiVersions": ["v1"], "resources": ["*/*", "pods"]}]),
    ]
    del bad[2]["sideEffects"]
    del bad[2]["admissionReviewVersions"]
    code, body = await refusal(custom.create_cluster_custom_object(
        GROUP, VERSION, VALIDATING, configuration("ValidatingWebhookConfiguration", "bad", *bad)))
    assert (code, body["reason"]) == (422, "Invalid")
    messages = [cause["message"] for cause in body["details"]["causes"]]
    fields = [cause["field"] for cause in body["details"]["causes"]]
    assert messages == [
        'Invalid value: "short.name": should be a domain with at least three segments separated by dots',
        'Unsupported value: "Sometimes": supported values: "Fail", "Ignore"',
        'Unsupported value: "Some": supported values: "None", "NoneOnDryRun"',
        "Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        'Invalid value: []string{"v9"}: must include at least one of v1, v1beta1',
        'Invalid value: "short.name": should be a domain with at least three segments separated by dots',
        "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        'Invalid value: "user:pw": user information is not permitted in the URL',
        'Invalid value: "frag": fragments are not permitted in the URL',
        'Invalid value: "a=b": query parameters are not permitted in the URL',
        'Duplicate value: "short.name"',
        "Invalid value: []string{\"*\", \"CREATE\"}: if '*' is present, must not specify other operations",
        "Invalid value: []string{\"*/*\", \"pods\"}: if '*/*' is present, must not specify other resources",
        "Required value: must specify one of None, NoneOnDryRun",
        "Required value: exactly one of url or service is required",
        "Required value: must specify one of v1, v1beta1",
    ]
    assert fields == [
        "webhooks[0].name", "webhooks[0].failurePolicy", "webhooks[0].sideEffects", "webhooks[0].timeoutSeconds",
        "webhooks[0].admissionReviewVersions", "webhooks[1].name", *["webhooks[1].clientConfig.url"] * 4,
        "webhooks[1].name", "webhooks[2].rules[0].operations", "webhooks[2].rules[0].resources",
        "webhooks[2].sideEffects", "webhooks[2].clientConfig", "webhooks[2].admissionReviewVersions"]
    assert body["message"].startswith('ValidatingWebhookConfiguration.admissionregistration.k8s.io "bad" is invalid: ')


async def test_service_reference_and_selectors_are_checked(custom):
    webhook = hook(clientConfig={"service": {"name": "", "namespace": "default", "port": 0, "path": "no//slash"}},
                   objectSelector={"matchExpressions": [{"key": "a", "operator": "In"}]},
                   reinvocationPolicy="Always")
    code, body = await refusal(custom.create_cluster_custom_object(
        GROUP, VERSION, MUTATING, configuration("MutatingWebhookConfiguration", "m", webhook)))
    assert code == 422
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        ("webhooks[0].objectSelector.matchExpressions[0].values",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        ("webhooks[0].reinvocationPolicy", 'Unsupported value: "Always": supported values: "IfNeeded", "Never"'),
        ("webhooks[0].clientConfig.service.name", "Required value: service name is required"),
        ("webhooks[0].clientConfig.service.port",
         "Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive"),
        ("webhooks[0].clientConfig.service.path", "Invalid value: \"no//slash\": must start with a '/'"),
        ("webhooks[0].clientConfig.service.path", 'Invalid value: "no//slash": segment[1] may not be empty'),
    ]


async def test_an_update_is_held_to_what_the_stored_object_met(custom):
    await custom.create_cluster_custom_object(
        GROUP, VERSION, VALIDATING, configuration("ValidatingWebhookConfiguration", "v", hook()))
    code, body = await refusal(custom.patch_cluster_custom_object(
        GROUP, VERSION, VALIDATING, "v", [{"op": "replace", "path": "/webhooks/0/sideEffects", "value": "Some"}]))
    assert code == 422 and body["details"]["causes"][0]["field"] == "webhooks[0].sideEffects"


async def test_kubectl_apply_of_a_configuration(kubectl):
    manifest = configuration("ValidatingWebhookConfiguration", "applied", hook())
    (await kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))).check()
    out = (await kubectl.run("get", "validatingwebhookconfigurations", "applied", "-o", "json")).check().out
    assert json.loads(out)["webhooks"][0]["timeoutSeconds"] == 10
    manifest["webhooks"][0]["timeoutSeconds"] = 5
    (await kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))).check()
    # The defaulted scope makes the atomic rules differ from the client-side applier's: a conflict, as on a server.
    server_side = ("apply", "--server-side", "--force-conflicts", "-f", "-")
    (await kubectl.run(*server_side, stdin=yaml.safe_dump(manifest))).check()
    out = (await kubectl.run("get", "validatingwebhookconfigurations", "applied", "-o", "json")).check().out
    assert json.loads(out)["webhooks"][0]["timeoutSeconds"] == 5
    result = await kubectl.run("get", "mutatingwebhookconfigurations")
    assert result.code == 0 and "No resources found" in result.err


async def test_a_ca_bundle_that_is_not_base64_is_the_decoders_error(custom):
    webhook = hook(clientConfig={"url": "https://example.com/x", "caBundle": "not base64!"})
    code, body = await refusal(custom.create_cluster_custom_object(
        GROUP, VERSION, VALIDATING, configuration("ValidatingWebhookConfiguration", "v", webhook)))
    assert (code, body["reason"], body["message"]) == (400, "BadRequest", (
        'ValidatingWebhookConfiguration in version "v1" cannot be handled as a ValidatingWebhookConfiguration: '
        "illegal base64 data at input byte 3"))
