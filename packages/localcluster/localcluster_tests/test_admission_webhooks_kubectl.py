"""Admission webhooks as the real kubectl meets them through localcluster: a denial's text as kubectl prints it
(create, an edit by apply, a scale; kubectl words a 422 Invalid by its causes, as it does the API server's own
validation errors), warnings, a webhook that is down, and a server-side dry run."""

from __future__ import annotations

import json

import yaml

from .test_admission_webhooks import free_port, hook, install, rule
from .webhook_server import allow, deny


def configmap(name: str, namespace: str, **data: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
                           "data": data})


def refuse_big(review: dict) -> dict:
    """A denial in the shape of the API server's own Invalid errors (details naming the object and the field)."""
    request = review["request"]
    data = (request["object"] or {}).get("data") or {}
    if len(data) < 2:
        return allow(review)
    causes = [{"reason": "FieldValueInvalid", "field": "data", "message": "Invalid value: 2: must have one key"}]
    return deny(review, "data: Invalid value: 2: must have one key", 422, "Invalid", causes)


async def test_kubectl_prints_a_denial_as_its_status_says(kubectl, namespace, rest, server):
    server.handlers["/forbid"] = lambda review: deny(review, "not on Fridays", 403, "Forbidden")
    await install(rest, hook("forbid.example.com", server, "/forbid"))
    result = await kubectl.run("apply", "-f", "-", stdin=configmap("c", namespace, a="1"))
    assert (result.code, result.err.strip()) == (1, (
        'Error from server (Forbidden): error when creating "STDIN": admission webhook "forbid.example.com" denied '
        'the request: not on Fridays'))
    # 422 Invalid: kubectl prints the causes (field: message), as for the API server's own validation
    server.handlers["/forbid"] = refuse_big
    result = await kubectl.run("apply", "-f", "-", stdin=configmap("big", namespace, a="1", b="2"))
    assert (result.code, result.err.strip()) == (1, "The request is invalid: data: Invalid value: 2: must have one key")

    def named(review: dict) -> dict:  # details naming the object, as apierrors.NewInvalid writes them
        answer = refuse_big(review)
        if not answer["response"]["allowed"]:
            answer["response"]["status"]["details"].update(name=review["request"]["name"], kind="ConfigMap")
        return answer

    server.handlers["/forbid"] = named
    result = await kubectl.run("apply", "-f", "-", stdin=configmap("big", namespace, a="1", b="2"))
    assert result.err.strip() == 'The ConfigMap "big" is invalid: data: Invalid value: 2: must have one key'


async def test_kubectl_prints_the_denial_of_an_edit(kubectl, namespace, rest, server):
    server.handlers["/one-key"] = lambda review: (
        deny(review, "one key only", 403, "Forbidden") if len((review["request"]["object"] or {}).get("data") or {}) > 1
        else allow(review))
    await install(rest, hook("one-key.example.com", server, "/one-key"))
    await kubectl.ok("apply", "-f", "-", stdin=configmap("small", namespace, a="1"))
    result = await kubectl.run("apply", "-f", "-", stdin=configmap("small", namespace, a="1", b="2"))
    assert result.code == 1 and result.err.startswith("Error from server (Forbidden): error when applying patch:")
    assert result.err.rstrip().endswith('for: "STDIN": error when patching "STDIN": admission webhook '
                                        '"one-key.example.com" denied the request: one key only')
    result = await kubectl.run("apply", "--server-side", "-f", "-", stdin=configmap("small", namespace, a="1", b="2"))
    assert (result.code, result.err.strip()) == (1, (
        'Error from server (Forbidden): admission webhook "one-key.example.com" denied the request: one key only'))
    shown = json.loads((await kubectl.ok("get", "configmap", "small", "-o", "json")).out)
    assert shown["data"] == {"a": "1"}


async def test_kubectl_prints_warnings_and_a_failed_call(kubectl, namespace, rest, server):
    server.handlers["/warn"] = lambda review: allow(review, warnings=["configmaps are old-fashioned"])
    await install(rest, hook("warn.example.com", server, "/warn"))
    result = await kubectl.ok("create", "-f", "-", stdin=configmap("c", namespace, a="1"))
    assert result.err.strip() == "Warning: configmaps are old-fashioned"
    port = free_port()
    down = hook("down.example.com", server, "/down")
    down["clientConfig"]["url"] = f"https://127.0.0.1:{port}/down"
    await install(rest, down, name="down")
    result = await kubectl.run("create", "-f", "-", stdin=configmap("d", namespace, a="1"))
    assert result.code == 1
    assert result.err.strip().endswith(
        'Error from server (InternalError): error when creating "STDIN": Internal error occurred: failed calling '
        f'webhook "down.example.com": failed to call webhook: Post "https://127.0.0.1:{port}/down?timeout=10s": '
        f'dial tcp 127.0.0.1:{port}: connect: connection refused')


async def test_a_server_side_dry_run_calls_webhooks_without_side_effects(kubectl, namespace, rest, server):
    await install(rest, hook("dry.example.com", server, "/dry"))
    result = await kubectl.ok("create", "--dry-run=server", "-f", "-", stdin=configmap("c", namespace, a="1"))
    assert "created (server dry run)" in result.out
    (request,) = server.requests("/dry")
    assert request["dryRun"] is True and request["options"]["dryRun"] == ["All"]
    assert (await kubectl.run("get", "configmap", "c")).code == 1


async def test_kubectl_scale_meets_a_webhook_of_the_scale_subresource(kubectl, namespace, rest, server):
    def at_most_three(review: dict) -> dict:
        request = review["request"]
        assert (request["kind"]["kind"], request["subResource"], request["oldObject"]["kind"]) == (
            "Scale", "scale", "Scale")
        if request["object"]["spec"].get("replicas", 0) > 3:
            return deny(review, "spec.replicas: at most 3", 422, "Invalid")
        return allow(review)

    server.handlers["/scale"] = at_most_three
    await install(rest, hook("scale.example.com", server, "/scale",
                             rule("UPDATE", resources=("deployments/scale",), groups=("apps",))))
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": namespace},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                           "template": {"metadata": {"labels": {"app": "d"}},
                                        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    await kubectl.ok("apply", "-f", "-", stdin=yaml.safe_dump(deployment))
    await kubectl.ok("scale", "deployment", "d", "--replicas=3")
    result = await kubectl.run("scale", "deployment", "d", "--replicas=5")
    assert result.code == 1 and result.err.strip() == (  # an Invalid Status without causes: its message
        'The request is invalid: admission webhook "scale.example.com" denied the request: spec.replicas: at most 3')
    shown = json.loads((await kubectl.ok("get", "deployment", "d", "-o", "json")).out)
    assert shown["spec"]["replicas"] == 3
    assert [r["object"]["spec"]["replicas"] for r in server.requests("/scale")] == [3, 5]
