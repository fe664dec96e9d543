"""The real kubectl 1.35 against localcluster: apply, get (tables, YAML, watch, selectors), delete.

Also the protocol pieces kubectl relies on: OpenAPI v3 documents (validation and patch types),
server-side printing (meta.k8s.io Tables) and PartialObjectMetadata views.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from google.protobuf import empty_pb2
from google.protobuf.unknown_fields import UnknownFieldSet

from localcluster.endpoints.table import human_duration
from localcluster.testing import Kubectl, starts_processes, until

from . import jobs

GROUP, VERSION, PLURAL = "batch.tensorstack.dev", "v1beta1", "genericjobs"
CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"  # the project's own
MERGE = "application/merge-patch+json"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "genericjob", "kind": "GenericJob", "listKind": "GenericJobList",
                  "shortNames": ["gj"]},
        "versions": [{
            "name": VERSION,
            "served": True,
            "storage": True,
            "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            ],
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "properties": {
                        "replicaSpecs": {"type": "array", "items": {"type": "object", "properties": {
                            "type": {"type": "string"},
                            "replicas": {"type": "integer", "minimum": 0},
                        }}},
                    }},
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                },
            }},
        }],
    },
}


def genericjob(name: str, replicas: int = 1, labels: dict | None = None) -> dict:
    return jobs.genericjob(name, replicas, labels=labels or {})


def manifest(*docs: dict) -> str:
    return yaml.safe_dump_all(docs)


@pytest.fixture
@starts_processes
def kubectl(cluster, tmp_path) -> Kubectl:
    return Kubectl(cluster, tmp_path)


@pytest.fixture
async def crd(kubectl) -> dict:
    result = await kubectl.ok("apply", "-f", "-", stdin=manifest(CRD))
    assert result.out.strip() == f"customresourcedefinition.apiextensions.k8s.io/{PLURAL}.{GROUP} created"
    return CRD


@pytest.fixture
def patch_types(cluster, monkeypatch) -> list[str]:
    """The Content-Type of every PATCH the API serves, in order."""
    seen: list[str] = []
    real = cluster.api.patch_steps  # what the HTTP layer runs (Api.patch is the in-process verb)

    def spy(rt, namespace, name, content_type, *args, **kwargs):
        seen.append(content_type)
        return real(rt, namespace, name, content_type, *args, **kwargs)

    monkeypatch.setattr(cluster.api, "patch_steps", spy)
    return seen


# --- apply ------------------------------------------------------------------------------------


async def test_apply_crd_then_object_then_again(kubectl, crd, custom, patch_types):
    assert (await kubectl.ok("apply", "-f", "-", stdin=manifest(CRD))).out.strip().endswith("unchanged")
    job = genericjob("train", replicas=2)
    created = await kubectl.ok("apply", "-f", "-", stdin=manifest(job))
    assert created.out.strip() == f"genericjob.{GROUP}/train created"
    again = await kubectl.ok("apply", "-f", "-", stdin=manifest(job))
    assert again.out.strip() == f"genericjob.{GROUP}/train unchanged"

    job["spec"]["replicaSpecs"][0]["replicas"] = 3
    job["metadata"]["labels"] = {"team": "a"}
    changed = await kubectl.ok("apply", "-f", "-", stdin=manifest(job))
    assert changed.out.strip() == f"genericjob.{GROUP}/train configured"
    assert "warning" not in changed.err
    stored = await custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "train")
    assert stored["spec"]["replicaSpecs"] == [{"type": "worker", "replicas": 3}]
    assert stored["metadata"]["labels"] == {"team": "a"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in stored["metadata"]["annotations"]
    assert stored["metadata"]["generation"] == 2
    assert patch_types == ["application/merge-patch+json"]  # client-side apply of a custom resource


async def test_apply_builtin_uses_strategic_merge_patch(kubectl, core, patch_types):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "main", "image": "nginx:1.27"},
                                   {"name": "side", "image": "busybox:1.36"}]}}
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod))
    changed = copy.deepcopy(pod)
    changed["metadata"]["labels"]["tier"] = "front"
    changed["spec"]["containers"][1]["image"] = "busybox:1.37"
    result = await kubectl.ok("apply", "-f", "-", stdin=manifest(changed))
    assert result.out.strip() == "pod/web configured"
    assert "warning" not in result.err  # no failed attempt at a patch from the OpenAPI schema
    assert patch_types == ["application/strategic-merge-patch+json"]
    stored = await core.read_namespaced_pod("web", "default")
    assert stored.metadata.labels == {"app": "web", "tier": "front"}
    assert [(c.name, c.image) for c in stored.spec.containers] == [("main", "nginx:1.27"), ("side", "busybox:1.37")]


async def test_apply_breaking_the_schema_names_the_field(kubectl, crd):
    result = await kubectl.run("apply", "-f", "-", stdin=manifest(genericjob("bad", replicas=-1)))
    assert result.code == 1
    assert ('The GenericJob "bad" is invalid: spec.replicaSpecs[0].replicas: Invalid value: -1: '
            in result.err), result.err
    assert "greater than or equal to 0" in result.err


async def test_apply_with_an_unknown_field_fails_strictly(kubectl, crd):
    job = genericjob("odd")
    job["spec"]["foo"] = 1
    result = await kubectl.run("apply", "-f", "-", stdin=manifest(job))
    assert result.code == 1
    assert 'strict decoding error: unknown field "spec.foo"' in result.err, result.err


async def test_client_side_apply_of_the_project_crds_fits_in_their_annotations(kubectl):
    """The CRDs embed a pod template's schema, and a client-side apply keeps each whole in an annotation: they
    must stay within the API server's 256 KiB of annotations (test_crd.py checks the margin)."""
    crds = CRDS
    applied = await kubectl.ok("apply", "-f", str(crds))
    files = len(list(crds.glob("*.yaml")))  # a CRD a file: every kind's and the PodGroup's
    assert applied.out.count(" created") == files, applied.out
    again = await kubectl.ok("apply", "-f", str(crds))
    assert again.out.count(" unchanged") == files, again.out


async def test_an_object_too_large_for_its_last_applied_annotation_is_refused(kubectl):
    big = copy.deepcopy(CRD)
    big["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "x" * 300_000
    result = await kubectl.run("apply", "-f", "-", stdin=manifest(big))
    assert result.code == 1
    assert (f'The CustomResourceDefinition "{PLURAL}.{GROUP}" is invalid: metadata.annotations: Too long: '
            "may not be more than 262144 bytes") in result.err, result.err
    created = await kubectl.ok("create", "-f", "-", stdin=manifest(big))  # no annotation made: it fits
    assert "created" in created.out
    job = genericjob("annotated")
    job["metadata"]["annotations"] = {"note": "x" * 300_000}  # a custom object is held to the same limit
    result = await kubectl.run("create", "-f", "-", stdin=manifest(job))
    assert ('The GenericJob "annotated" is invalid: metadata.annotations: Too long: may not be more than 262144 '
            "bytes") in result.err, result.err


# --- get ----------------------------------------------------------------------------------------


async def test_get_yaml(kubectl, crd):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(genericjob("train", replicas=2)))
    got = yaml.safe_load((await kubectl.ok("get", "gj", "train", "-o", "yaml")).out)
    assert got["kind"] == "GenericJob" and got["apiVersion"] == f"{GROUP}/{VERSION}"
    assert got["metadata"]["namespace"] == "default" and got["metadata"]["uid"]
    assert got["spec"] == {"replicaSpecs": [{"type": "worker", "replicas": 2}]}
    listed = yaml.safe_load((await kubectl.ok("get", PLURAL, "-o", "yaml")).out)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["train"]


async def test_get_prints_printer_columns(kubectl, crd, custom):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(genericjob("a"), genericjob("b")))
    await custom.patch_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "a",
                                                       {"status": {"phase": "Running"}}, _content_type=MERGE)
    rows = (await kubectl.ok("get", "gj")).rows()
    assert rows[0] == ["NAME", "PHASE", "AGE"]
    assert rows[1][:2] == ["a", "Running"] and rows[1][2].endswith("s")
    assert rows[2][0] == "b" and len(rows[2]) == 2  # no phase yet: an empty cell
    wide = (await kubectl.ok("get", f"{PLURAL}.{GROUP}", "-A", "--show-labels")).rows()
    assert wide[0] == ["NAMESPACE", "NAME", "PHASE", "AGE", "LABELS"]
    assert wide[1][:3] == ["default", "a", "Running"] and wide[1][-1] == "<none>"


async def test_get_pods_table(kubectl, core):
    await core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "busybox:1.36"}]}})
    rows = (await kubectl.ok("get", "pods")).rows()
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert rows[1][:4] == ["p", "0/1", "Pending", "0"]
    wide = (await kubectl.ok("get", "pods", "-o", "wide")).rows()
    assert wide[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    namespaces = (await kubectl.ok("get", "namespaces")).rows()
    assert namespaces[0] == ["NAME", "STATUS", "AGE"] and ["default", "Active"] == namespaces[1][:2]


@pytest.mark.runner("scripted")
async def test_get_pods_shows_what_the_kubelet_reports(kubectl):
    scripts = {"run": {}, "fail": {"run_for": 0, "exit_code": 1}, "done": {"run_for": 0},
               "pull": {"fail_to_start": "ImagePullBackOff"}}
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": name, "annotations": {"localcluster.dev/script": json.dumps(script)}},
             "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}} for name, script in scripts.items()]
    await kubectl.ok("apply", "-f", "-", stdin=manifest(*pods))
    expected = [["done", "0/1", "Completed", "0"], ["fail", "0/1", "Error", "0"],
                ["pull", "0/1", "ImagePullBackOff", "0"], ["run", "1/1", "Running", "0"]]

    async def settled() -> bool:
        return [row[:4] for row in (await kubectl.ok("get", "pods")).rows()[1:]] == expected

    await until(settled, what="the pods to reach their scripted states")
    deleted = await kubectl.ok("delete", "pod", "run")  # graceful: kubectl waits for the kubelet
    assert deleted.out.startswith('pod "run" deleted')
    assert [row[0] for row in (await kubectl.ok("get", "pods")).rows()] == ["NAME", "done", "fail", "pull"]


async def test_get_with_label_selector(kubectl, crd):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(genericjob("a", labels={"team": "red"}),
                                                         genericjob("b", labels={"team": "blue"}),
                                                         genericjob("c")))
    names = await kubectl.ok("get", "gj", "-l", "team=red", "-o", "name")
    assert names.out.split() == [f"genericjob.{GROUP}/a"]
    rows = (await kubectl.ok("get", "gj", "-l", "team in (red,blue)")).rows()
    assert [r[0] for r in rows] == ["NAME", "a", "b"]
    rows = (await kubectl.ok("get", "gj", "-l", "!team")).rows()
    assert [r[0] for r in rows] == ["NAME", "c"]
    none = await kubectl.ok("get", "gj", "-l", "team=green")
    assert none.out == "" and "No resources found in default namespace." in none.err


async def test_get_watch_sees_a_change(kubectl, crd, custom):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(genericjob("train")))
    async with kubectl.stream("get", "gj", "-w") as lines:
        await lines.until(r"^NAME\s+PHASE\s+AGE$")
        assert len((await lines.until(r"^train\b")).split()) == 2  # name and age: no phase yet
        await custom.patch_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "train",
                                                           {"status": {"phase": "Running"}}, _content_type=MERGE)
        await lines.until(r"^train\s+Running\s+\S+$")
        await kubectl.ok("apply", "-f", "-", stdin=manifest(genericjob("other")))
        await lines.until(r"^other\s+\S+$")
    assert sum(1 for line in lines.seen if line.startswith("NAME")) == 1  # headers once, as from a real server


async def test_get_watch_output_events(kubectl, core, cluster):
    async with kubectl.stream("get", "configmaps", "--watch-only", "--output-watch-events") as lines:
        # --watch-only prints nothing of the initial list: create only once kubectl watches.
        await until(lambda: cluster.hub.count() > 0, what="kubectl to start watching")
        await core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
        await lines.until(r"^ADDED\s+cm\s+1\s+\S+$")
        await core.delete_namespaced_config_map("cm", "default")
        await lines.until(r"^DELETED\s+cm\s+1\s+\S+$")


# --- delete -------------------------------------------------------------------------------------


async def _pod_names(core) -> set[str]:
    return {p.metadata.name for p in (await core.list_namespaced_pod("default")).items}


def _owned_pod(name: str, owner: dict) -> dict:
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    return {"metadata": {"name": name, "ownerReferences": [ref]},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


async def test_delete_cascades_to_owned_objects(kubectl, crd, core, custom):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(genericjob("train")))
    job = await custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "train")
    cm = (await core.create_namespaced_config_map("default", {"metadata": {"name": "cfg"}})).to_dict()
    cm_owner = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": cm["metadata"]}
    await core.create_namespaced_pod("default", _owned_pod("train-worker-0", job))
    await core.create_namespaced_pod("default", _owned_pod("cfg-user", cm_owner))
    await core.create_namespaced_pod("default", {"metadata": {"name": "bystander"}, "spec": {"containers": [
        {"name": "c", "image": "busybox:1.36"}]}})

    deleted = await kubectl.ok("delete", "gj", "train")
    assert deleted.out.strip().startswith(f'genericjob.{GROUP} "train" deleted')
    await until(lambda: _gone("train-worker-0", core), what="the GenericJob's pod to be collected")

    await kubectl.ok("delete", "configmap", "cfg", "--cascade=foreground")
    assert await _pod_names(core) == {"bystander"}  # foreground: kubectl waited until the dependents went


async def _gone(name: str, core) -> bool:
    return name not in await _pod_names(core)


# --- the protocol underneath -------------------------------------------------------------------


async def test_openapi_v3_declares_field_validation(cluster, crd):
    async with cluster.session(base_url=True) as http:
        async with http.get("/openapi/v3") as resp:
            root = await resp.json()
        url = root["paths"][f"apis/{GROUP}/{VERSION}"]["serverRelativeURL"]
        assert url.startswith(f"/openapi/v3/apis/{GROUP}/{VERSION}?hash=")
        assert "api/v1" in root["paths"]
        async with http.get(url) as resp:
            assert resp.headers["Cache-Control"] == "public, immutable"
            doc = await resp.json()
        async with http.get(f"/openapi/v3/apis/{GROUP}/{VERSION}?hash=stale", allow_redirects=False) as resp:
            assert resp.status == 301 and resp.headers["Location"] == url
        async with http.get("/openapi/v2") as resp:
            assert (await resp.json())["swagger"] == "2.0"
    item = doc["paths"][f"/apis/{GROUP}/{VERSION}/namespaces/{{namespace}}/{PLURAL}/{{name}}"]
    patch = item["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": GROUP, "version": VERSION, "kind": "GenericJob"}
    assert {(p["name"], p["in"]) for p in patch["parameters"]} >= {("fieldValidation", "query"),
                                                                     ("dryRun", "query")}
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    schema = doc["components"]["schemas"][f"dev.tensorstack.batch.{VERSION}.GenericJob"]
    assert schema["properties"]["spec"]["properties"]["replicaSpecs"]["items"]["properties"]["replicas"] == {
        "type": "integer", "minimum": 0}


def _proto(data: bytes) -> dict[int, list]:
    """A protobuf message's fields by number, as Google's parser reads them (bytes, or ints for varints)."""
    message = empty_pb2.Empty()
    message.ParseFromString(data)
    fields: dict[int, list] = {}
    for field in UnknownFieldSet(message):
        fields.setdefault(field.field_number, []).append(field.data)
    return fields


def _named(entries: list[bytes]) -> dict[str, bytes]:
    """gnostic's Named* messages ({1: name, 2: value}) as a dict."""
    return {_proto(entry)[1][0].decode(): _proto(entry)[2][0] for entry in entries}


async def test_openapi_v2_is_served_as_gnostic_protobuf(cluster, crd):
    """What kubectl reads when v3 does not know a kind (a typo in kind or group: test_kubectl in tests/e2e)."""
    async with cluster.session(base_url=True) as http:
        async with http.get("/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0"
                                                              "+protobuf"}) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
            body = await resp.read()
        async with http.get("/openapi/v2", headers={"Accept": "text/html"}) as resp:
            assert resp.status == 406 and await resp.read() == b""  # as kube-openapi's handler: no body
    document = _proto(body)
    assert document[1] == [b"2.0"]
    paths = _named(_proto(document[8][0])[2])
    patch = _proto(_proto(paths[f"/apis/{GROUP}/{VERSION}/namespaces/{{namespace}}/{PLURAL}/{{name}}"])[8][0])
    extensions = {name: yaml.safe_load(_proto(value)[2][0]) for name, value in _named(patch[13]).items()}
    assert extensions["x-kubernetes-group-version-kind"] == {"group": GROUP, "version": VERSION, "kind": "GenericJob"}
    queries = [_proto(_proto(_proto(_proto(item)[1][0])[2][0])[3][0]) for item in patch[8]
               if 3 in _proto(_proto(_proto(item)[1][0])[2][0])]
    assert b"fieldValidation" in [query[4][0] for query in queries]
    definitions = _named(_proto(document[9][0])[1])

    def properties(schema: dict) -> dict[str, dict]:  # Schema.properties (25) -> NamedSchema (1)
        return {name: _proto(value) for name, value in _named(_proto(schema[25][0])[1]).items()}

    spec = properties(_proto(definitions[f"dev.tensorstack.batch.{VERSION}.GenericJob"]))["spec"]
    assert _proto(spec[22][0])[1] == [b"object"]  # Schema.type (22): TypeItem
    replica = _proto(_proto(properties(spec)["replicaSpecs"][23][0])[1][0])  # Schema.items (23): ItemsItem
    assert _proto(properties(replica)["replicas"][22][0])[1] == [b"integer"]


async def test_table_and_partial_metadata_views(cluster, crd, custom):
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, genericjob("a", labels={"k": "v"}))
    path = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
    table_v1 = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    async with cluster.session(base_url=True) as http:
        async with http.get(path, headers={"Accept": table_v1}) as resp:
            table = await resp.json()
        async with http.get(path + "/a", params={"includeObject": "Object"}, headers={"Accept": table_v1}) as resp:
            single = await resp.json()
        async with http.get(path, params={"includeObject": "None"},
                            headers={"Accept": "application/json;as=Table;v=v1beta1;g=meta.k8s.io"}) as resp:
            bare = await resp.json()
        accept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
        async with http.get(path, headers={"Accept": accept}) as resp:
            partial = await resp.json()
        async with http.get(path) as resp:
            plain = await resp.json()
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Phase", "Age"]
    assert table["columnDefinitions"][0]["format"] == "name"
    [row] = table["rows"]
    assert row["cells"][:2] == ["a", None]
    assert row["object"]["kind"] == "PartialObjectMetadata" and row["object"]["apiVersion"] == "meta.k8s.io/v1"
    assert row["object"]["metadata"]["labels"] == {"k": "v"}
    assert table["metadata"]["resourceVersion"] == plain["metadata"]["resourceVersion"]
    assert single["rows"][0]["object"]["kind"] == "GenericJob"
    assert bare["apiVersion"] == "meta.k8s.io/v1beta1" and "object" not in bare["rows"][0]
    assert partial["kind"] == "PartialObjectMetadataList"
    assert partial["items"][0] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                   "metadata": plain["items"][0]["metadata"]}
    assert plain["kind"] == "GenericJobList"


async def test_table_watch_sends_columns_once(cluster, crd, custom):
    path = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, genericjob("a"))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    async with cluster.session(base_url=True) as http:
        async with http.get(path, params={"watch": "true", "resourceVersion": "0", "timeoutSeconds": "5"},
                            headers={"Accept": accept}) as resp:
            first = json.loads(await resp.content.readline())
            await custom.patch_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "a",
                                                               {"status": {"phase": "Done"}}, _content_type=MERGE)
            second = json.loads(await resp.content.readline())
    assert first["type"] == "ADDED" and first["object"]["kind"] == "Table"
    assert [c["name"] for c in first["object"]["columnDefinitions"]] == ["Name", "Phase", "Age"]
    assert second["type"] == "MODIFIED" and second["object"]["columnDefinitions"] == []
    assert second["object"]["rows"][0]["cells"][:2] == ["a", "Done"]
    assert second["object"]["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_printer_helpers():
    """The age of `kubectl get`; the printer columns' JSONPath: test_jsonpath.py."""
    assert [human_duration(s) for s in (-5, 0, 119, 120, 610, 3 * 3600, 9 * 3600, 50 * 3600, 400 * 86400)] == [
        "<invalid>", "0s", "119s", "2m", "10m", "3h", "9h", "2d2h", "400d"]
