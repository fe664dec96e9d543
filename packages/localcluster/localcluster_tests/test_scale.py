"""The scale subresource over HTTP: autoscaling/v1 Scale of Deployments and of custom resources declaring it."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from .test_crud import status_of

MERGE = "application/merge-patch+json"
GROUP, VERSION, PLURAL = "example.com", "v1", "replicators"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": PLURAL, "singular": "replicator", "kind": "Replicator"},
             "versions": [{"name": VERSION, "served": True, "storage": True,
                           "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size",
                                                                    "statusReplicasPath": ".status.size",
                                                                    "labelSelectorPath": ".status.selector"}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"size": {"type": "integer", "maximum": 5},
                                                                         "other": {"type": "string"}}},
                               "status": {"type": "object", "properties": {"size": {"type": "integer"},
                                                                           "selector": {"type": "string"}}}}}}}]},
}


def deployment(name: str = "web", replicas: int = 2) -> dict:
    return {"metadata": {"name": name},
            "spec": {"replicas": replicas,
                     "selector": {"matchLabels": {"app": name},
                                  "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]},
                     "template": {"metadata": {"labels": {"app": name, "tier": "a"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}}


@pytest.fixture
def apps(api_client):
    return client.AppsV1Api(api_client)


async def test_deployment_scale_reads_and_writes_replicas(apps, cluster):
    created = await apps.create_namespaced_deployment("default", deployment())
    scale = await apps.read_namespaced_deployment_scale("web", "default")
    assert scale.kind == "Scale" and scale.api_version == "autoscaling/v1"
    assert (scale.metadata.name, scale.metadata.uid) == ("web", created.metadata.uid)
    assert scale.spec.replicas == 2 and scale.status.selector == "app=web,tier in (a,b)"

    patched = await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 5}},
                                                           _content_type=MERGE)
    assert patched.spec.replicas == 5
    stored = await apps.read_namespaced_deployment("web", "default")
    assert stored.spec.replicas == 5 and stored.metadata.generation == 2

    scale.spec.replicas = 1  # read before the patch: its resourceVersion is stale
    with pytest.raises(ApiException) as stale:
        await apps.replace_namespaced_deployment_scale("web", "default", scale)
    assert stale.value.status == 409 and status_of(stale.value)["message"] == (
        'Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your '
        'changes to the latest version and try again')
    with pytest.raises(ApiException) as negative:
        await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": -1}},
                                                     _content_type=MERGE)
    assert negative.value.status == 422 and status_of(negative.value)["message"] == (
        'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0')
    with pytest.raises(ApiException) as missing:
        await apps.read_namespaced_deployment_scale("nothing", "default")
    assert missing.value.status == 404 and status_of(missing.value)["message"] == (
        'deployments.apps "nothing" not found')

    async with cluster.session(base_url=True) as http:
        async with http.delete("/apis/apps/v1/namespaces/default/deployments/web/scale") as resp:
            assert resp.status == 405  # get, update and patch only
        async with http.get("/apis/apps/v1") as resp:
            [entry] = [r for r in (await resp.json())["resources"] if r["name"] == "deployments/scale"]
    assert entry == {"name": "deployments/scale", "singularName": "", "namespaced": True, "group": "autoscaling",
                     "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}


async def test_scale_of_a_custom_resource_follows_its_crd_paths(api_client):
    ext, custom = client.ApiextensionsV1Api(api_client), client.CustomObjectsApi(api_client)
    await ext.create_custom_resource_definition(CRD)
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Replicator", "metadata": {"name": "r"},
        "spec": {"size": 1, "other": "kept"}})
    await custom.patch_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "r", {
        "status": {"size": 1, "selector": "app=r"}}, _content_type=MERGE)
    scale = await custom.get_namespaced_custom_object_scale(GROUP, VERSION, "default", PLURAL, "r")
    assert (scale["spec"], scale["status"]) == ({"replicas": 1}, {"replicas": 1, "selector": "app=r"})

    await custom.patch_namespaced_custom_object_scale(GROUP, VERSION, "default", PLURAL, "r",
                                                      [{"op": "replace", "path": "/spec/replicas", "value": 3}],
                                                      _content_type="application/json-patch+json")
    obj = await custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "r")
    assert obj["spec"] == {"size": 3, "other": "kept"} and obj["metadata"]["generation"] == 2
    with pytest.raises(ApiException) as over:  # the CRD's schema still applies to the object
        await custom.patch_namespaced_custom_object_scale(GROUP, VERSION, "default", PLURAL, "r",
                                                          {"spec": {"replicas": 6}}, _content_type=MERGE)
    assert over.value.status == 422
    assert "spec.size: Invalid value: 6: spec.size in body should be less than or equal to 5" in json.loads(
        over.value.body)["message"]


async def test_an_undeclared_subresource_of_a_custom_resource_is_not_found_by_name(api_client):
    ext, custom = client.ApiextensionsV1Api(api_client), client.CustomObjectsApi(api_client)
    crd = json.loads(json.dumps(CRD))
    del crd["spec"]["versions"][0]["subresources"]["scale"]
    await ext.create_custom_resource_definition(crd)
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Replicator", "metadata": {"name": "r"}})
    with pytest.raises(ApiException) as missing:
        await custom.get_namespaced_custom_object_scale(GROUP, VERSION, "default", PLURAL, "r")
    assert missing.value.status == 404
    assert status_of(missing.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 404, "reason": "NotFound",
        "message": f'{PLURAL}.{GROUP} "r" not found', "details": {"name": "r", "group": GROUP, "kind": PLURAL}}
