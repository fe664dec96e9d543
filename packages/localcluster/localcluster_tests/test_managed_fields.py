"""metadata.managedFields as kube-apiserver keeps them: one entry per manager, operation and subresource,
in the FieldsV1 encoding, moved between managers as they write (server-side apply: test_server_side_apply)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .jobs import genericjob
from .rest import MERGE, STRATEGIC, entries, fields

PODS = "/api/v1/namespaces/default/pods"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
JOBS = "/apis/batch.tensorstack.dev/v1beta1/namespaces/default/genericjobs"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
LONG_AGO = "2020-01-01T00:00:00Z"


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}],
                                     "env": [{"name": "A", "value": "1"}]}]}}


def configmap(name: str, data: dict, managed: list | None = None) -> dict:
    meta: dict = {"name": name}
    if managed is not None:
        meta["managedFields"] = managed
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def entry(manager: str, fields_v1: dict, time: str = LONG_AGO, operation: str = "Update") -> dict:
    return {"manager": manager, "operation": operation, "apiVersion": "v1", "time": time, "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1}


async def test_a_create_is_an_update_entry_of_the_fields_set_including_defaults(rest):
    created = await rest.ok("POST", PODS, pod("p"), fieldManager="creator")
    [only] = created["metadata"]["managedFields"]
    assert {k: v for k, v in only.items() if k != "fieldsV1"} == {
        "manager": "creator", "operation": "Update", "apiVersion": "v1", "time": only["time"],
        "fieldsType": "FieldsV1"}
    assert RFC3339.match(only["time"])
    container = {
        ".": {}, "f:env": {".": {}, 'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}}},
        "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
        # ports are keyed by containerPort and protocol, the protocol defaulted.
        "f:ports": {".": {}, 'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {},
                                                                          "f:protocol": {}}},
        "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}
    # spec is part of a Pod from the start: not owned as such (no "."); labels are, once set. The status the
    # server sets on create is nobody's.
    assert only["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:containers": {'k:{"name":"c"}': container}, "f:dnsPolicy": {}, "f:enableServiceLinks": {},
                   "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {},
                   "f:terminationGracePeriodSeconds": {}}}
    assert list(only["fieldsV1"]["f:spec"]) == sorted(only["fieldsV1"]["f:spec"])  # the server's order


@pytest.mark.parametrize(("user_agent", "manager"), [
    ("my-controller/v1.2.3 (linux/amd64) kubernetes/abc", "my-controller"),
    ("no-slash", "no-slash"),
    ("", "unknown"),
])
async def test_without_field_manager_the_manager_is_the_user_agent_up_to_its_first_slash(rest, user_agent, manager):
    created = await rest.ok("POST", CONFIGMAPS, configmap("c", {"a": "1"}), user_agent=user_agent)
    assert [e["manager"] for e in created["metadata"]["managedFields"]] == [manager]


async def test_a_write_moves_the_fields_it_changes_to_its_manager(rest):
    await rest.ok("POST", CONFIGMAPS, configmap("c", {"a": "1", "b": "2"}), fieldManager="creator")
    edited = await rest.ok("PATCH", f"{CONFIGMAPS}/c", {"data": {"a": "changed"}}, MERGE, fieldManager="editor")
    assert fields(edited, "creator") == {"f:data": {".": {}, "f:b": {}}}
    assert fields(edited, "editor") == {"f:data": {"f:a": {}}}
    # Removing a field takes it from its owner and gives the remover nothing.
    removed = await rest.ok("PATCH", f"{CONFIGMAPS}/c", {"data": {"b": None}}, MERGE, fieldManager="remover")
    assert fields(removed, "creator") == {"f:data": {}}  # a member without children: `{}`
    assert set(entries(removed)) == {("creator", "Update", ""), ("editor", "Update", "")}
    # A field set to the value it has is no change: nobody's ownership moves, nothing is written.
    same = await rest.ok("PATCH", f"{CONFIGMAPS}/c", {"data": {"a": "changed"}}, MERGE, fieldManager="other")
    assert same["metadata"] == removed["metadata"]


async def given_entries(rest, name: str, data: dict, start: list[dict]) -> dict:
    """A ConfigMap whose managedFields are `start`: an update may set them (kubectl migrates entries so)."""
    await rest.ok("POST", CONFIGMAPS, configmap(name, data), fieldManager="creator")
    return await rest.ok("PUT", f"{CONFIGMAPS}/{name}", configmap(name, data, start), fieldManager="creator")


async def test_entries_a_create_sends_lose_every_field_it_sets(rest):
    start = [entry("a", {"f:data": {".": {}, "f:x": {}}})]
    created = await rest.ok("POST", CONFIGMAPS, configmap("c", {"x": "1"}, start), fieldManager="creator")
    assert set(entries(created)) == {("creator", "Update", "")}


async def test_a_manager_entry_is_timed_by_its_last_write_that_took_fields(rest):
    start = [entry("a", {"f:data": {".": {}, "f:x": {}}}), entry("b", {"f:data": {"f:y": {}}})]
    given = await given_entries(rest, "c", {"x": "1", "y": "2"}, start)
    assert given["metadata"]["managedFields"] == start  # an update that changes nothing takes nothing
    taken = await rest.ok("PATCH", f"{CONFIGMAPS}/c", {"data": {"y": "3"}}, MERGE, fieldManager="a")
    by_manager = {e["manager"]: e for e in taken["metadata"]["managedFields"]}
    assert set(by_manager) == {"a"} and by_manager["a"]["time"] != LONG_AGO
    assert by_manager["a"]["fieldsV1"] == {"f:data": {".": {}, "f:x": {}, "f:y": {}}}


async def test_entries_are_sorted_by_operation_then_time_then_manager(rest):
    start = [entry("zed", {"f:data": {"f:z": {}}}, "2021-01-01T00:00:00Z"),
             entry("abe", {"f:data": {"f:a": {}}}, "2022-01-01T00:00:00Z"),
             entry("bob", {"f:data": {"f:b": {}}}, "2021-01-01T00:00:00Z")]
    given = await given_entries(rest, "c", {"a": "1", "b": "2", "z": "3"}, start)
    assert [e["manager"] for e in given["metadata"]["managedFields"]] == ["bob", "zed", "abe"]


async def test_managed_fields_can_be_cleared_and_then_stay_cleared_until_an_apply(rest):
    await rest.ok("POST", CONFIGMAPS, configmap("c", {"a": "1"}), fieldManager="creator")
    current = await rest.ok("GET", f"{CONFIGMAPS}/c")
    current["metadata"]["managedFields"] = [{}]
    cleared = await rest.ok("PUT", f"{CONFIGMAPS}/c", current, fieldManager="editor")
    assert "managedFields" not in cleared["metadata"]
    later = await rest.ok("PATCH", f"{CONFIGMAPS}/c", {"data": {"b": "2"}}, MERGE, fieldManager="editor")
    assert "managedFields" not in later["metadata"]
    # A write that sends no managedFields (as a controller's cached object) keeps the stored ones.
    await rest.ok("POST", CONFIGMAPS, configmap("d", {"a": "1"}), fieldManager="creator")
    stored = await rest.ok("GET", f"{CONFIGMAPS}/d")
    del stored["metadata"]["managedFields"]
    stored["data"]["b"] = "2"
    kept = await rest.ok("PUT", f"{CONFIGMAPS}/d", stored, fieldManager="editor")
    assert set(entries(kept)) == {("creator", "Update", ""), ("editor", "Update", "")}


async def test_status_writes_are_entries_of_the_status_subresource(rest):
    await rest.ok("POST", PODS, pod("p"), fieldManager="creator")
    status = {"status": {"conditions": [{"type": "Ready", "status": "True"}], "message": "up"}}
    written = await rest.ok("PATCH", f"{PODS}/p/status", status, STRATEGIC, fieldManager="kubelet")
    assert entries(written)[("kubelet", "Update", "status")]["fieldsV1"] == {"f:status": {
        "f:conditions": {".": {}, 'k:{"type":"Ready"}': {".": {}, "f:status": {}, "f:type": {}}}, "f:message": {}}}
    # The status sent to the main resource is not written, so not recorded either.
    current = await rest.ok("GET", f"{PODS}/p")
    current["status"]["message"] = "ignored"
    current["metadata"]["labels"]["tier"] = "front"
    updated = await rest.ok("PUT", f"{PODS}/p", current, fieldManager="editor")
    assert fields(updated, "editor") == {"f:metadata": {"f:labels": {"f:tier": {}}}}


async def test_update_entries_are_capped_at_ten_the_oldest_merged_into_ancient_changes(rest):
    start = [entry(f"m{i:02}", {"f:data": {f"f:k{i:02}": {}}}, f"2020-01-01T00:00:{i:02}Z") for i in range(10)]
    await given_entries(rest, "c", {f"k{i:02}": "v" for i in range(10)}, start)
    capped = await rest.ok("PATCH", f"{CONFIGMAPS}/c", {"data": {"new": "v"}}, MERGE, fieldManager="newcomer")
    managers = [e["manager"] for e in capped["metadata"]["managedFields"]]
    assert len(managers) == 10 and "ancient-changes" in managers and "newcomer" in managers
    assert "m00" not in managers and "m01" not in managers  # the two oldest, merged
    assert fields(capped, "ancient-changes") == {"f:data": {"f:k00": {}, "f:k01": {}}}


# --- custom resources -------------------------------------------------------------------------------


@pytest.fixture
def crds(cluster):
    cluster.apply_crds(Path(__file__).parents[3] / "manifests" / "crds")


async def test_a_custom_resource_owns_its_objects_as_they_appear(rest, crds):
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    job = genericjob("j", 2, template=template, labels={"team": "a"})
    created = await rest.ok("POST", JOBS, job, fieldManager="kubectl-create")
    # A custom resource starts from nothing: spec appears with the create, so it is owned (".").
    # replicaSpecs has no x-kubernetes-list-type: an atomic list, owned whole. Defaults count.
    assert fields(created, "kubectl-create") == {
        "f:metadata": {"f:labels": {".": {}, "f:team": {}}},
        "f:spec": {".": {}, "f:cleanUpPolicy": {}, "f:replicaSpecs": {}}}
    status = {"status": {"phase": "Running", "conditions": [{"type": "Running", "status": "True"}]}}
    written = await rest.ok("PATCH", f"{JOBS}/j/status", status, MERGE, fieldManager="genericjob-controller")
    assert entries(written)[("genericjob-controller", "Update", "status")]["fieldsV1"] == {
        "f:status": {".": {}, "f:conditions": {}, "f:phase": {}}}


LISTS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "boxes.example.dev"},
    "spec": {"group": "example.dev", "scope": "Namespaced",
             "names": {"plural": "boxes", "singular": "box", "kind": "Box"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object", "properties": {
                     "items": {"type": "array", "x-kubernetes-list-type": "map",
                               "x-kubernetes-list-map-keys": ["name", "slot"],
                               "items": {"type": "object", "required": ["name"], "properties": {
                                   "name": {"type": "string"}, "slot": {"type": "integer", "default": 0},
                                   "size": {"type": "integer"}}}},
                     "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                     "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                                  "additionalProperties": {"type": "string"}},
                     "extra": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                         "n": {"type": "integer"}}}},
                 }}}}}}]}}


async def test_custom_resource_lists_and_maps_follow_the_schema(rest):
    await rest.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", LISTS_CRD)
    box = {"apiVersion": "example.dev/v1", "kind": "Box", "metadata": {"name": "b"}, "spec": {
        "items": [{"name": "a", "size": 1}, {"name": "b", "slot": 2}], "tags": ["x", "y"],
        "selector": {"k": "v"}, "extra": {"one": {"n": 1}}}}
    created = await rest.ok("POST", "/apis/example.dev/v1/namespaces/default/boxes", box, fieldManager="m")
    assert fields(created, "m") == {"f:spec": {
        ".": {},
        "f:extra": {".": {}, "f:one": {".": {}, "f:n": {}}},
        # keyed by every key field, a missing one by its default
        "f:items": {".": {}, 'k:{"name":"a","slot":0}': {".": {}, "f:name": {}, "f:size": {}, "f:slot": {}},
                    'k:{"name":"b","slot":2}': {".": {}, "f:name": {}, "f:slot": {}}},
        "f:selector": {},
        "f:tags": {".": {}, 'v:"x"': {}, 'v:"y"': {}}}}


# --- the cluster's own writers ----------------------------------------------------------------------


@pytest.mark.runner("scripted")
async def test_the_pod_runner_writes_status_as_the_kubelet(rest):
    await rest.ok("POST", PODS, pod("p"), fieldManager="creator")
    async with rest.session.get(f"{rest.url}{PODS}", params={"watch": "1", "fieldSelector": "metadata.name=p",
                                                               "timeoutSeconds": "10"}) as stream:
        async for line in stream.content:
            obj = json.loads(line)["object"]
            if obj.get("status", {}).get("phase") == "Running":
                break
        else:
            pytest.fail("the pod never ran")
    kubelet = entries(obj)[("kubelet", "Update", "status")]["fieldsV1"]["f:status"]
    assert {"f:phase", "f:conditions", "f:startTime"} <= set(kubelet)
    assert "f:spec" not in kubelet  # binding the pod to the node is not a kubelet's field
