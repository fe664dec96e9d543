"""CustomResourceDefinitions: serving, discovery, schema validation with defaults and pruning, status."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from localcluster.testing import Kubectl

GROUP, VERSION, PLURAL = "example.dev", "v1", "widgets"
# kubernetes_asyncio picks JSON patch for custom objects unless told; a real apiserver would reject it too.
MERGE = "application/merge-patch+json"

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [{
            "name": VERSION, "served": True, "storage": True,
            "subresources": {"status": {}},
            "additionalPrinterColumns": [{"name": "Phase", "type": "string", "jsonPath": ".status.phase"}],
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "required": ["size"],
                        "properties": {
                            "size": {"type": "integer", "minimum": 0},
                            "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    },
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                },
            }},
        }],
    },
}


def widget(name: str, **spec) -> dict:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
async def crd(api_client):
    ext = client.ApiextensionsV1Api(api_client)
    created = await ext.create_custom_resource_definition(copy.deepcopy(CRD))
    return created


async def test_crd_is_established_and_discoverable(crd, api_client):
    conditions = {c.type: c.status for c in crd.status.conditions}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    resources = await client.CustomObjectsApi(api_client).get_api_resources(GROUP, VERSION)
    main = next(r for r in resources.resources if r.name == PLURAL)
    assert main.kind == "Widget" and main.short_names == ["wd"] and main.namespaced
    assert any(r.name == f"{PLURAL}/status" for r in resources.resources)


async def test_custom_object_crud_with_defaults_and_pruning(crd, custom):
    body = widget("w", size=2, unknown="pruned", free={"anything": {"goes": 1}})
    created = await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    assert created["spec"] == {"size": 2, "color": "red", "free": {"anything": {"goes": 1}}}
    assert created["metadata"]["generation"] == 1
    fetched = await custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w")
    assert fetched == created
    listed = await custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["w"]


async def test_schema_violation_is_422_naming_the_field(crd, custom):
    with pytest.raises(ApiException) as exc:
        await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("bad", size=-1))
    assert exc.value.status == 422
    body = json.loads(exc.value.body)
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "spec.size"
    assert body["message"].startswith('Widget.example.dev "bad" is invalid: spec.size: Invalid value: -1')
    with pytest.raises(ApiException) as exc:
        await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL,
                                                     widget("bad", size=1, color="green"))
    assert 'spec.color: Unsupported value: "green"' in json.loads(exc.value.body)["message"]
    with pytest.raises(ApiException) as exc:
        await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("bad"))
    assert "spec.size: Required value" in json.loads(exc.value.body)["message"]


async def test_strategic_merge_is_unsupported_for_custom_resources(crd, cluster):

    await _create(cluster, widget("w", size=1))
    async with cluster.session() as s:
        url = f"{cluster.url}/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}/w"
        async with s.patch(url, data=b'{"spec":{"size":2}}',
                           headers={"Content-Type": "application/strategic-merge-patch+json"}) as r:
            assert r.status == 415
        async with s.patch(url, data=b'{"spec":{"size":2}}',
                           headers={"Content-Type": "application/merge-patch+json"}) as r:
            assert r.status == 200 and (await r.json())["metadata"]["generation"] == 2


async def test_custom_status_subresource(crd, custom):
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w", size=1))
    ignored = await custom.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w",
                                                          {"status": {"phase": "Ready"}}, _content_type=MERGE)
    assert "status" not in ignored
    updated = await custom.patch_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "w",
                                                                 {"status": {"phase": "Ready"}}, _content_type=MERGE)
    assert updated["status"] == {"phase": "Ready"}
    assert updated["metadata"]["generation"] == 1  # status writes never bump the generation
    current = updated["metadata"]["resourceVersion"]
    stale = {**updated, "metadata": {**updated["metadata"], "resourceVersion": str(int(current) - 1)}}
    with pytest.raises(ApiException) as exc:
        await custom.replace_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "w", stale)
    assert exc.value.status == 409


async def test_deleting_the_crd_removes_its_objects(crd, custom, api_client):
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w", size=1))
    await client.ApiextensionsV1Api(api_client).delete_custom_resource_definition(f"{PLURAL}.{GROUP}")
    with pytest.raises(ApiException) as exc:
        await custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert exc.value.status == 404


async def test_transition_rule_makes_a_field_immutable(api_client, custom):
    crd = copy.deepcopy(CRD)
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["properties"]["color"]["x-kubernetes-validations"] = [
        {"rule": "self == oldSelf", "message": "color is immutable"}]
    await client.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd)
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w", size=1))
    with pytest.raises(ApiException) as exc:
        await custom.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w", {"spec": {"color": "blue"}},
                                                    _content_type=MERGE)
    assert "color is immutable" in json.loads(exc.value.body)["message"]


async def test_invalid_crd_is_rejected(api_client):
    bad = copy.deepcopy(CRD)
    bad["metadata"]["name"] = "wrong.name"
    with pytest.raises(ApiException) as exc:
        await client.ApiextensionsV1Api(api_client).create_custom_resource_definition(bad)
    assert exc.value.status == 422


async def test_cluster_scoped_custom_resource(api_client, custom):
    crd = copy.deepcopy(CRD)
    crd["spec"]["scope"] = "Cluster"
    await client.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd)
    created = await custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, widget("global", size=1))
    assert "namespace" not in created["metadata"]


async def _create(cluster, body: dict) -> dict:
    rt = cluster.registry.get(GROUP, VERSION, PLURAL)
    return cluster.api.create(rt, "default", body)


async def test_status_writes_validate_only_the_status(api_client, custom):
    crd = copy.deepcopy(CRD)
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["x-kubernetes-validations"] = [{"rule": "self.size < 100", "message": "size too big"}]
    await client.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd)
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w", size=1))
    updated = await custom.patch_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "w",
                                                                 {"status": {"phase": "Ready"}}, _content_type=MERGE)
    assert updated["status"] == {"phase": "Ready"} and updated["spec"]["size"] == 1
    with pytest.raises(ApiException) as exc:
        await custom.patch_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "w",
                                                           {"status": {"phase": 3}}, _content_type=MERGE)
    assert exc.value.status == 422
    assert json.loads(exc.value.body)["details"]["causes"][0]["field"] == "status.phase"


# --- CEL rules when a CRD is written (localcluster/validation/crd_cel.py) -------------------------------------

PROJECT_CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"  # the controller's, as data
# As commit dabcc66 shipped it (the repository's tests/data).
OLD_GENERICJOB = Path(__file__).parents[3] / "tests" / "data" / "genericjob-dabcc66.yaml.gz"
RULE_COST_TOTAL = ("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total "
                   "for entire OpenAPIv3 schema exceeds budget by factor of 12.9x (try simplifying the rule, or adding "
                   "maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")


@pytest.mark.slow  # kubectl
async def test_kubectl_apply_of_a_crd_over_the_cost_budget_is_refused(cluster, tmp_path):
    """The issue's data point: the GenericJob CRD whose Service-port rule compares protocol strings with no
    maxLength, refused as a real server of the minimum version (1.28) refuses it."""
    manifest = tmp_path / "genericjob.yaml"
    manifest.write_bytes(gzip.decompress(OLD_GENERICJOB.read_bytes()))
    ports = "spec.validation.openAPIV3Schema.properties[spec].properties[service].properties[ports]"
    for mode in ("--server-side=false", "--server-side"):
        result = await Kubectl(cluster, tmp_path).run("apply", mode, "-f", str(manifest))
        assert result.code == 1
        refused = 'The CustomResourceDefinition "genericjobs.batch.tensorstack.dev" is invalid: \n'
        assert result.err.startswith(refused), result.err
        assert f"* {ports}.x-kubernetes-validations[2].rule: Forbidden: estimated rule cost exceeds budget by factor " \
               "of more than 100x" in result.err
        assert f"* {RULE_COST_TOTAL}" in result.err
    listed = await Kubectl(cluster, tmp_path).ok("get", "crd", "-o", "name")
    assert "genericjobs.batch.tensorstack.dev" not in listed.out


@pytest.mark.slow  # kubectl
async def test_the_projects_crds_are_accepted(cluster, tmp_path):
    for name in ("genericjob.yaml", "tensorflowtrainingjob.yaml", "pytorchtrainingjob.yaml", "podgroup.yaml"):
        await Kubectl(cluster, tmp_path).ok("apply", "--server-side", "-f", str(PROJECT_CRDS / name))
    listed = await Kubectl(cluster, tmp_path).ok("get", "crd", "-o", "name")
    assert {"customresourcedefinition.apiextensions.k8s.io/genericjobs.batch.tensorstack.dev",
            "customresourcedefinition.apiextensions.k8s.io/tensorflowtrainingjobs.batch.tensorstack.dev",
            "customresourcedefinition.apiextensions.k8s.io/pytorchtrainingjobs.batch.tensorstack.dev"} \
        <= set(listed.out.split())


async def test_a_rule_that_does_not_compile_is_refused(api_client):
    crd = copy.deepcopy(CRD)
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["x-kubernetes-validations"] = [{"rule": "self.sise < 100", "message": "size too big"}]
    with pytest.raises(ApiException) as exc:
        await client.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd)
    assert exc.value.status == 422
    body = json.loads(exc.value.body)
    path = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert [(c["reason"], c["field"]) for c in body["details"]["causes"]] == [("FieldValueInvalid", path)]
    assert body["message"] == (
        f'CustomResourceDefinition.apiextensions.k8s.io "{PLURAL}.{GROUP}" is invalid: {path}: Invalid value: '
        'apiextensions.ValidationRule{Rule:"self.sise < 100", Message:"size too big", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: '
        "compilation failed: ERROR: <input>:1:5: undefined field 'sise'\n | self.sise < 100\n | ....^")


async def test_a_rule_calling_what_the_minimum_version_lacks_is_refused(api_client):
    """isIP() is served from 1.31: a 1.28 server does not know it."""
    crd = copy.deepcopy(CRD)
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["properties"]["address"] = {"type": "string", "maxLength": 45,
                                            "x-kubernetes-validations": [{"rule": "isIP(self)"}]}
    with pytest.raises(ApiException) as exc:
        await client.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd)
    assert "undeclared reference to 'isIP' (in container '')" in json.loads(exc.value.body)["message"]


async def test_a_custom_resources_watch_cache_starts_when_its_crd_is_served(crd, custom, cluster, api_client):
    """The apiextensions server makes a CRD's storage (and its cacher, which lists at the latest revision) when the
    CRD is served, and anew when its spec changes: a watch from an older version gets 410, as on a real 1.35 server
    (tests/real's corpus: a watch of GenericJobs from resourceVersion 1). A status write keeps the cache."""
    from .test_watch import RawWatch

    path = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
    served = int(crd.metadata.resource_version)

    async def first_event(rv: int) -> dict:
        async with RawWatch(cluster, path, resourceVersion=rv, timeoutSeconds=1) as w:
            return await w.next()

    refused = await first_event(served - 1)
    assert refused["type"] == "ERROR" and refused["object"]["code"] == 410
    assert refused["object"]["message"] == f"too old resource version: {served - 1} ({served})"
    made = await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w", size=1))
    assert (await first_event(served))["object"]["metadata"]["uid"] == made["metadata"]["uid"]
    ext = client.ApiextensionsV1Api(api_client)
    await ext.patch_custom_resource_definition_status(CRD["metadata"]["name"], {"status": {"storedVersions": ["v1"]}})
    assert (await first_event(served))["object"]["metadata"]["uid"] == made["metadata"]["uid"]
    changed = await ext.patch_custom_resource_definition(
        CRD["metadata"]["name"], {"spec": {"names": {"categories": ["all"]}}})
    restarted = int(changed.metadata.resource_version)
    refused = await first_event(served)
    assert refused["object"]["message"] == f"too old resource version: {served} ({restarted})"
