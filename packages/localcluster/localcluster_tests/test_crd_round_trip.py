"""The generated CRDs survive a server round trip: what localcluster stores (as kube-apiserver does, dropping
the empty `omitempty` fields of JSONSchemaProps) equals each file, so a server-side apply over a client-side
apply of manifests/crds/ (Helm 4's install, the upgrade step) finds nothing to conflict over."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from localcluster.testing import Kubectl, starts_processes

CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"
FILES = sorted(CRDS.glob("*.yaml"))


@pytest.fixture
@starts_processes
def kubectl(cluster, tmp_path) -> Kubectl:
    return Kubectl(cluster, tmp_path)


def crd(name: str, schema: dict) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{name}s.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": f"{name}s", "singular": name, "kind": name.title(),
                               "listKind": f"{name.title()}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
async def test_what_the_server_stores_is_the_file(kubectl, path):
    [written] = [d for d in yaml.safe_load_all(path.read_text()) if d]
    await kubectl.ok("create", "-f", str(path))
    stored = json.loads((await kubectl.ok("get", "crd", written["metadata"]["name"], "-o", "json")).out)
    assert stored["spec"] == written["spec"]


async def test_server_side_apply_after_client_side_apply_of_the_crds(kubectl):
    await kubectl.ok("apply", "-f", str(CRDS))
    applied = await kubectl.ok("apply", "--server-side", "-f", str(CRDS))
    names = [yaml.load(path.read_text(), getattr(yaml, "CSafeLoader", yaml.SafeLoader))["metadata"]["name"]
             for path in FILES]  # every CRD the directory holds (a kind added adds one)
    assert len(names) >= 5, names
    assert sorted(applied.out.split()) == sorted(
        [f"customresourcedefinition.apiextensions.k8s.io/{n}" for n in names] + ["serverside-applied"] * len(names))


async def test_empty_omitempty_fields_are_dropped_as_by_kube_apiserver(kubectl, tmp_path):
    schema = {"type": "object", "description": "", "required": [], "nullable": False, "properties": {
        "spec": {"type": "object", "required": [], "x-kubernetes-preserve-unknown-fields": True, "properties": {
            "name": {"type": "string", "maxLength": 0, "default": "", "pattern": "", "enum": ["", "a"],
                     "x-kubernetes-validations": [{"rule": "self != 'b'", "message": ""}]},
            "items": {"type": "array", "items": {"type": "object", "required": [], "properties": {}}},
            "count": {"type": "integer", "minimum": 0, "exclusiveMinimum": False}}}}}
    stored = json.loads((await kubectl.ok("create", "-f", "-", "-o", "json",
                                          stdin=json.dumps(crd("widget", schema)))).out)
    assert stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"] == {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {
            "name": {"type": "string", "maxLength": 0, "default": "", "enum": ["", "a"],
                     "x-kubernetes-validations": [{"rule": "self != 'b'"}]},
            "items": {"type": "array", "items": {"type": "object"}},
            "count": {"type": "integer", "minimum": 0}}}}}
    # So a file with `required: []`, applied client-side, then server-side, conflicts over the versions
    # (an atomic list whose applied value differs from the stored one), as Helm 4 met on a real server.
    listed = {"type": "object", "properties": {"spec": {"type": "object", "required": [],
                                                         "properties": {"a": {"type": "string"}}}}}
    path = tmp_path / "gadget.yaml"
    path.write_text(yaml.safe_dump(crd("gadget", listed)))
    await kubectl.ok("apply", "-f", str(path))
    refused = await kubectl.run("apply", "--server-side", "-f", str(path))
    assert refused.code != 0 and "conflict" in refused.err and ".spec.versions" in refused.err
