"""ValidatingAdmissionPolicy as the kube-apiserver evaluates it: which requests a policy and its binding match,
variables, match conditions, failure policy, the `authorizer` library, and the Status a denial answers with
(`<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<p>' with binding '<b>' denied request: <m>`,
reason Invalid and 422 unless the validation gives another reason)."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

ADMISSION = ("admissionregistration.k8s.io", "v1")
POD = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


def pod(name: str, **labels: str) -> dict:
    return {**POD, "metadata": {"name": name, "labels": labels}}


def policy(name: str, validations: list[dict], **spec) -> dict:
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": rules}, "validations": validations, **spec}}


def binding(name: str, policy_name: str, actions=("Deny",), **spec) -> dict:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": policy_name, "validationActions": list(actions), **spec}}


@pytest.fixture
def admin(api_client):
    return client.CustomObjectsApi(api_client)


@pytest.fixture
def core(api_client):
    return client.CoreV1Api(api_client)


async def install(admin, *objects: dict) -> None:
    for obj in objects:
        plural = "validatingadmissionpolicies" if obj["kind"] == "ValidatingAdmissionPolicy" \
            else "validatingadmissionpolicybindings"
        await admin.create_cluster_custom_object(*ADMISSION, plural, obj)


async def refusal(call) -> tuple[int, dict]:
    with pytest.raises(ApiException) as caught:
        await call
    return caught.value.status, json.loads(caught.value.body)


async def test_a_denial_is_the_servers_status_and_a_passing_request_goes_through(admin, core):
    await install(admin, policy("names", [{"expression": "object.metadata.name.startsWith('ok-')"}]),
                  binding("names-everywhere", "names"))
    code, body = await refusal(core.create_namespaced_pod("default", pod("bad")))
    cause = ("ValidatingAdmissionPolicy 'names' with binding 'names-everywhere' denied request: failed expression: "
             "object.metadata.name.startsWith('ok-')")
    assert (code, body["reason"], body["message"]) == (422, "Invalid", f'pods "bad" is forbidden: {cause}')
    assert body["details"] == {"name": "bad", "kind": "pods", "causes": [{"message": cause}]}
    await core.create_namespaced_pod("default", pod("ok-1"))
    # The status subresource is another resource (pods/status): the rule on pods does not match it.
    await core.patch_namespaced_pod_status("ok-1", "default", {"metadata": {"labels": {"x": "y"}}})


async def test_message_message_expression_reason_and_variables(admin, core):
    validations = [{"expression": "variables.team == 'a'", "reason": "Forbidden",
                    "messageExpression": "'team ' + variables.team + ' may not'", "message": "unused"},
                   {"expression": "false", "message": "never reached"}]
    variables = [{"name": "team", "expression": "has(object.metadata.labels) && 'team' in object.metadata.labels"
                                                " ? object.metadata.labels['team'] : 'none'"}]
    await install(admin, policy("teams", validations, variables=variables), binding("teams", "teams"))
    code, body = await refusal(core.create_namespaced_pod("default", pod("p", team="b")))
    assert (code, body["reason"]) == (403, "Forbidden") and body["message"].endswith("denied request: team b may not")
    code, body = await refusal(core.create_namespaced_pod("default", pod("q", team="a")))
    assert (code, body["message"].rsplit(": ", 1)[1]) == (422, "never reached")


async def test_what_a_binding_matches(admin, core, cluster):
    cluster.api.ensure_namespace("prod")
    await core.patch_namespace("prod", {"metadata": {"labels": {"env": "prod"}}})
    condition = {"name": "labelled", "expression": "'checked' in object.metadata.labels"}
    prod = {"namespaceSelector": {"matchLabels": {"env": "prod"}}}
    await install(admin, policy("no-latest", [{"expression": "false", "message": "refused"}],
                                matchConditions=[condition]),
                  binding("prod-only", "no-latest", matchResources=prod),
                  binding("warn-only", "no-latest", actions=("Warn",)))
    await core.create_namespaced_pod("default", pod("elsewhere", checked="1"))  # not a prod namespace
    await core.create_namespaced_pod("prod", pod("unchecked"))  # its match condition is false
    code, body = await refusal(core.create_namespaced_pod("prod", pod("checked", checked="1")))
    assert code == 422 and "with binding 'prod-only' denied request: refused" in body["message"]


async def test_the_failure_policy_decides_what_an_evaluation_error_does(admin, core):
    failing = [{"expression": "object.metadata.labels['missing'] == 'x'"}]
    await install(admin, policy("ignores", failing, failurePolicy="Ignore"), binding("ignores", "ignores"))
    await core.create_namespaced_pod("default", pod("ignored", other="1"))
    await install(admin, policy("fails", failing), binding("fails", "fails"))  # failurePolicy Fail by default
    code, body = await refusal(core.create_namespaced_pod("default", pod("p", other="1")))
    assert code == 422 and body["message"].endswith(
        "ValidatingAdmissionPolicy 'fails' with binding 'fails' denied request: expression "
        "'object.metadata.labels['missing'] == 'x'' resulted in error: no such key: missing")


async def test_the_authorizer_checks_as_the_requests_user(admin, core, cluster):
    await install(admin, policy("may-delete", [{
        "expression": "authorizer.requestResource.check('delete').allowed()",
        "messageExpression": "request.userInfo.username + ' may create but not delete pods'"}]),
        binding("may-delete", "may-delete"))
    rbac = client.RbacAuthorizationV1Api(core.api_client)
    for name, verbs in (("creator", ["create"]), ("manager", ["create", "delete"])):
        await rbac.create_namespaced_role("default", {"metadata": {"name": name}, "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": verbs}]})
        await rbac.create_namespaced_role_binding("default", {
            "metadata": {"name": name}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                    "name": name},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}]})
    users = {}
    for name in ("creator", "manager"):
        configuration = client.Configuration()
        await config.load_kube_config_from_dict(cluster.kubeconfig(token=cluster.add_token(name, name)),
                                                client_configuration=configuration)
        users[name] = client.ApiClient(configuration)
    try:
        code, body = await refusal(client.CoreV1Api(users["creator"]).create_namespaced_pod("default", pod("c")))
        assert code == 422 and body["message"].endswith("denied request: creator may create but not delete pods")
        await client.CoreV1Api(users["manager"]).create_namespaced_pod("default", pod("m"))
    finally:
        for api in users.values():
            await api.close()
    # The cluster's own writes (the kubelet, the garbage collector) go through no admission.
    cluster.api.create(cluster.registry.get("", "v1", "pods"), "default", pod("internal"))


async def test_a_policy_that_does_not_compile_is_refused(admin):
    code, body = await refusal(admin.create_cluster_custom_object(
        *ADMISSION, "validatingadmissionpolicies", policy("broken", [{"expression": "object.metadata.name =="}])))
    assert code == 422 and body["details"]["causes"][0]["field"] == "spec.validations[0].expression"
    assert "compilation failed" in body["message"]
