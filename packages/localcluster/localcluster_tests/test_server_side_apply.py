"""Server-side apply (PATCH application/apply-patch+yaml) as kube-apiserver answers it: create, merge,
removal of what an applier stopped applying, conflicts, force, /status, and dry runs of every write."""

from __future__ import annotations

from pathlib import Path

import pytest

from .rest import APPLY, MERGE, STRATEGIC, entries, fields
from .test_managed_fields import LISTS_CRD

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
BOXES = "/apis/example.dev/v1/namespaces/default/boxes"
JOBS = "/apis/batch.tensorstack.dev/v1beta1/namespaces/default/genericjobs"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def configmap(data: dict, name: str = "c") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def box(items: list[dict], name: str = "b") -> dict:
    return {"apiVersion": "example.dev/v1", "kind": "Box", "metadata": {"name": name}, "spec": {"items": items}}


@pytest.fixture
async def boxes(rest):
    await rest.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", LISTS_CRD)


async def test_apply_creates_a_missing_object_and_owns_what_it_applied(rest):
    yaml_text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: '1'\n  b: '2'\n"
    status, created = await rest.apply(f"{CONFIGMAPS}/c", yaml_text, "deployer")
    assert status == 201 and created["data"] == {"a": "1", "b": "2"}
    [only] = created["metadata"]["managedFields"]
    assert {k: v for k, v in only.items() if k != "time"} == {
        "manager": "deployer", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
        # an applier owns exactly what it applied: data's entries, not data itself
        "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}}}}
    assert await rest.ok("GET", f"{CONFIGMAPS}/c") == created
    status, again = await rest.apply(f"{CONFIGMAPS}/c", yaml_text, "deployer")
    assert status == 200 and again == created  # nothing changed: nothing written


async def test_reapplying_removes_what_the_applier_stopped_applying_unless_someone_else_owns_it(rest):
    await rest.apply(f"{CONFIGMAPS}/c", configmap({"a": "1", "shared": "2", "dropped": "3"}), "deployer")
    await rest.apply(f"{CONFIGMAPS}/c", configmap({"shared": "2"}), "other")  # same value: owned by both
    await rest.ok("PATCH", f"{CONFIGMAPS}/c", {"data": {"edited": "4"}}, MERGE, fieldManager="editor")
    status, reapplied = await rest.apply(f"{CONFIGMAPS}/c", configmap({"a": "1"}), "deployer")
    assert status == 200
    assert reapplied["data"] == {"a": "1", "shared": "2", "edited": "4"}
    assert fields(reapplied, "deployer", "Apply") == {"f:data": {"f:a": {}}}
    assert fields(reapplied, "other", "Apply") == {"f:data": {"f:shared": {}}}


async def test_changing_a_field_another_manager_owns_is_a_409_naming_both(rest):
    await rest.ok("POST", CONFIGMAPS, configmap({"key": "one", "free": "x"}), fieldManager="kubectl-client-side-apply")
    before = await rest.ok("GET", f"{CONFIGMAPS}/c")
    status, answer = await rest.apply(f"{CONFIGMAPS}/c", configmap({"key": "two", "free": "x"}), "deployer")
    assert status == 409
    assert answer == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 409, "reason": "Conflict",
        "message": 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.key',
        "details": {"causes": [{"reason": "FieldManagerConflict", "field": ".data.key",
                                "message": 'conflict with "kubectl-client-side-apply" using v1'}]}}
    assert await rest.ok("GET", f"{CONFIGMAPS}/c") == before


async def test_conflicts_with_several_managers_are_listed_by_manager(rest):
    await rest.apply(f"{CONFIGMAPS}/c", configmap({"x": "1", "y": "1"}), "first")
    await rest.ok("PATCH", f"{CONFIGMAPS}/c", {"data": {"y": "2"}}, MERGE, fieldManager="second")
    status, answer = await rest.apply(f"{CONFIGMAPS}/c", configmap({"x": "9", "y": "9"}), "third")
    assert status == 409
    assert answer["message"] == ('Apply failed with 2 conflicts: conflicts with "first":\n- .data.x\n'
                                 'conflicts with "second" using v1:\n- .data.y')
    assert [c["field"] for c in answer["details"]["causes"]] == [".data.x", ".data.y"]


async def test_force_takes_the_fields_over(rest):
    await rest.ok("POST", CONFIGMAPS, configmap({"key": "one", "mine": "m"}), fieldManager="editor")
    status, forced = await rest.apply(f"{CONFIGMAPS}/c", configmap({"key": "two"}), "deployer", force="true")
    assert status == 200 and forced["data"] == {"key": "two", "mine": "m"}
    assert fields(forced, "deployer", "Apply") == {"f:data": {"f:key": {}}}
    assert fields(forced, "editor") == {"f:data": {".": {}, "f:mine": {}}}


async def test_apply_over_fields_nobody_tracked_conflicts_with_before_first_apply(rest):
    await rest.ok("POST", CONFIGMAPS, configmap({"a": "1"}), fieldManager="creator")
    current = await rest.ok("GET", f"{CONFIGMAPS}/c")
    current["metadata"]["managedFields"] = []  # untracked from here on
    await rest.ok("PUT", f"{CONFIGMAPS}/c", current)
    status, answer = await rest.apply(f"{CONFIGMAPS}/c", configmap({"a": "2"}), "deployer")
    assert status == 409
    assert answer["message"] == ('Apply failed with 1 conflict: conflict with "before-first-apply" using v1: '
                                 '.data.a')
    status, forced = await rest.apply(f"{CONFIGMAPS}/c", configmap({"a": "2"}), "deployer", force="true")
    assert set(entries(forced)) == {("before-first-apply", "Update", ""), ("deployer", "Apply", "")}


async def test_list_items_merge_by_their_keys_and_go_with_their_applier(rest, boxes):
    await rest.apply(f"{BOXES}/b", box([{"name": "a", "size": 1}]), "one")
    status, both = await rest.apply(f"{BOXES}/b", box([{"name": "b", "slot": 2, "size": 2}]), "two")
    assert status == 200
    assert both["spec"]["items"] == [{"name": "a", "size": 1, "slot": 0}, {"name": "b", "slot": 2, "size": 2}]
    assert fields(both, "two", "Apply") == {"f:spec": {"f:items": {'k:{"name":"b","slot":2}': {
        ".": {}, "f:name": {}, "f:size": {}, "f:slot": {}}}}}
    status, answer = await rest.apply(f"{BOXES}/b", box([{"name": "a", "size": 5}]), "two")
    assert status == 409
    assert answer["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "one"',
                                            "field": '.spec.items[name="a",slot=0].size'}]
    status, dropped = await rest.apply(f"{BOXES}/b", box([]), "one")
    assert [item["name"] for item in dropped["spec"]["items"]] == ["b"]


@pytest.mark.parametrize(("spec", "error"), [
    ({"items": [{"name": "a"}, {"name": "a"}]}, '.spec.items: duplicate entries for key [name="a",slot=0]'),
    ({"items": [{"name": "a", "colour": "red"}]}, '.spec.items[name="a",slot=0].colour: field not declared in schema'),
])
async def test_a_configuration_that_does_not_fit_the_schema_is_the_servers_500(rest, boxes, spec, error):
    config = {"apiVersion": "example.dev/v1", "kind": "Box", "metadata": {"name": "b"}, "spec": spec}
    status, answer = await rest.apply(f"{BOXES}/b", config, "one")
    assert status == 500 and "reason" not in answer  # StatusReasonUnknown is "", left out
    assert answer["message"] == f"failed to create typed patch object (/b; example.dev/v1, Kind=Box): {error}"


@pytest.mark.parametrize(("metadata", "shown"), [(1, "1"), ([1, "a", True], "[1 a true]"), ("x", "x")])
async def test_an_apply_whose_metadata_is_not_a_map_is_the_servers_500(rest, metadata, shown):
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"a": "1"}}
    status, answer = await rest.apply(f"{CONFIGMAPS}/c", config, "one")
    assert status == 500 and "reason" not in answer
    assert answer["message"] == f"failed to create typed patch object (/; /v1, Kind=ConfigMap): .metadata: expected " \
                                f"map, got &{{{shown}}}"


def deployment(name: str = "web", **container) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "c", "image": "busybox", **container}]}}}}


@pytest.mark.parametrize("exists", [False, True], ids=["create", "update"])
async def test_a_misspelt_field_of_a_builtin_kind_is_the_servers_500_as_for_a_custom_resource(rest, exists):
    """The built-in kinds' schemas declare their fields: the applied configuration's conversion to a typed
    value fails before any decoding into the Go type (which would answer a 400 for the create)."""
    if exists:
        await rest.apply(f"{DEPLOYMENTS}/web", deployment(), "deployer")
    misspelt = deployment()
    misspelt["spec"]["foo"] = 1
    status, answer = await rest.apply(f"{DEPLOYMENTS}/web", misspelt, "deployer")
    assert status == 500 and "reason" not in answer  # StatusReasonUnknown is "", left out
    assert answer["message"] == ("failed to create typed patch object (/web; apps/v1, Kind=Deployment): .spec.foo: "
                                 "field not declared in schema")
    status, answer = await rest.apply(f"{DEPLOYMENTS}/web", deployment(imagee="busybox"), "deployer")
    assert status == 500 and answer["message"].endswith(
        '.spec.template.spec.containers[name="c"].imagee: field not declared in schema')
    status, answer = await rest.apply(f"{CONFIGMAPS}/c", {**configmap({"a": "1"}), "datas": {}}, "deployer")
    assert status == 500 and answer["message"].endswith("): .datas: field not declared in schema")
    # Maps take any key, and a type that reads its own JSON any content.
    labelled = deployment()
    labelled["metadata"]["labels"] = {"any": "key"}
    labelled["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"example.dev/gpu": "1"}}
    status, _ = await rest.apply(f"{DEPLOYMENTS}/web", labelled, "deployer")
    assert status == (200 if exists else 201)


async def test_apply_to_status_owns_status_only(rest, cluster):
    cluster.apply_crds(Path(__file__).parents[3] / "manifests" / "crds")
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    job = {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "metadata": {"name": "j"},
           "spec": {"replicaSpecs": [{"type": "worker", "replicas": 1, "template": template}]},
           "status": {"phase": "Ignored"}}
    status, created = await rest.apply(f"{JOBS}/j", job, "kubectl")
    assert status == 201 and "status" not in created
    assert "f:status" not in fields(created, "kubectl", "Apply")
    config = {**job, "spec": {"cleanUpPolicy": "All"}, "status": {"phase": "Running"}}
    status, written = await rest.apply(f"{JOBS}/j/status", config, "genericjob-controller")
    assert status == 200 and written["status"] == {"phase": "Running"}
    assert written["spec"] == created["spec"]  # /status writes status only
    assert entries(written)[("genericjob-controller", "Apply", "status")]["fieldsV1"] == {
        "f:status": {"f:phase": {}}}
    status, answer = await rest.apply(f"{JOBS}/missing/status", config, "genericjob-controller")
    assert (status, answer["reason"]) == (404, "NotFound")  # a subresource never creates


# --- what the server refuses ----------------------------------------------------------------------


async def test_apply_needs_a_field_manager(rest):
    status, answer = await rest.call("PATCH", f"{CONFIGMAPS}/c", configmap({"a": "1"}), APPLY)
    assert status == 422
    assert answer == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 422, "reason": "Invalid",
        "message": 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        "details": {"name": "", "group": "meta.k8s.io", "kind": "PatchOptions", "causes": [
            {"reason": "FieldValueRequired", "message": "Required value: is required for apply patch",
             "field": "fieldManager"}]}}


async def test_force_is_for_apply_only(rest):
    await rest.ok("POST", CONFIGMAPS, configmap({"a": "1"}))
    status, answer = await rest.call("PATCH", f"{CONFIGMAPS}/c", {"data": {"a": "2"}}, MERGE, force="true")
    assert (status, answer["message"]) == (
        422, 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch')


@pytest.mark.parametrize(("config", "message"), [
    ({**configmap({}), "kind": "Secret"}, "invalid object type: /v1, Kind=Secret"),
    ({**configmap({}), "apiVersion": "apps/v1"}, "invalid object type: apps/v1, Kind=ConfigMap"),
    ({"metadata": {"name": "c"}}, "invalid object type: /, Kind="),
    ({**configmap({}), "metadata": {"name": "c", "managedFields": []}}, "metadata.managedFields must be nil"),
    ({**configmap({}), "metadata": {"name": "c", "namespace": "kube-system"}},
     "the namespace of the provided object does not match the namespace sent on the request"),
    ({**configmap({}), "metadata": {"name": "other"}},
     "the name of the object (other) does not match the name on the URL (c)"),
    ("just text", "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
                  "string into Go value of type map[string]interface {}"),
])
async def test_a_configuration_that_is_not_the_resources_object_is_a_400(rest, config, message):
    status, answer = await rest.apply(f"{CONFIGMAPS}/c", config, "deployer")  # a create
    assert (status, answer["reason"], answer["message"]) == (400, "BadRequest", message)
    await rest.apply(f"{CONFIGMAPS}/c", configmap({}), "deployer")
    status, answer = await rest.apply(f"{CONFIGMAPS}/c", config, "deployer")  # an update
    assert (status, answer["reason"], answer["message"]) == (400, "BadRequest", message)


@pytest.mark.parametrize("content_type", ["application/xml", "application/apply-patch+json"])
async def test_a_patch_type_the_resource_does_not_take_is_a_415_listing_those_it_does(rest, boxes, content_type):
    status, answer = await rest.call("PATCH", f"{CONFIGMAPS}/c", "{}", content_type, fieldManager="m")
    assert (status, answer["message"]) == (415, (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, "
        "application/apply-patch+yaml"))
    status, answer = await rest.call("PATCH", f"{BOXES}/b", "{}", STRATEGIC)
    assert status == 415 and answer["message"].endswith(
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")


# --- dry runs -------------------------------------------------------------------------------------


async def test_dry_run_answers_every_write_and_stores_nothing(rest):
    status, created = await rest.apply(f"{CONFIGMAPS}/c", configmap({"a": "1"}), "deployer", dryRun="All")
    assert status == 201 and created["data"] == {"a": "1"} and "resourceVersion" not in created["metadata"]
    assert (await rest.call("GET", f"{CONFIGMAPS}/c"))[0] == 404
    status, created = await rest.call("POST", CONFIGMAPS, configmap({"a": "1"}, "d"), dryRun="All")
    assert status == 201 and (await rest.call("GET", f"{CONFIGMAPS}/d"))[0] == 404

    stored = await rest.ok("POST", CONFIGMAPS, configmap({"a": "1"}), fieldManager="creator")
    changed = {**stored, "data": {"a": "2"}}
    for method, path, body, content_type, query in [
        ("PUT", f"{CONFIGMAPS}/c", changed, "application/json", {}),
        ("PATCH", f"{CONFIGMAPS}/c", {"data": {"a": "2"}}, MERGE, {}),
        ("PATCH", f"{CONFIGMAPS}/c", configmap({"a": "2"}), APPLY, {"fieldManager": "x", "force": "true"}),
    ]:
        status, answer = await rest.call(method, path, body, content_type, dryRun="All", **query)
        assert (status, answer["data"]) == (200, {"a": "2"}), (method, content_type, answer)
        assert answer["metadata"]["managedFields"] != stored["metadata"]["managedFields"]
    status, deleted = await rest.call("DELETE", f"{CONFIGMAPS}/c", dryRun="All")
    # A ConfigMap's registry answers a delete with a Success Status naming it (deletion.py).
    assert status == 200 and deleted["details"]["name"] == "c"
    assert await rest.ok("GET", f"{CONFIGMAPS}/c") == stored


async def test_a_dry_run_value_other_than_all_is_refused(rest):
    status, answer = await rest.call("POST", CONFIGMAPS, configmap({"a": "1"}), dryRun="Yes")
    assert (status, answer["message"]) == (422, 'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported '
                                                'value: []string{"Yes"}: supported values: "All"')
