"""Submit manifests as `kubectl create -f` would: read YAML documents, find each kind's resource, POST it.

Any kind the server serves can be submitted (GenericJobs, ConfigMaps, Namespaces, CRDs, ...): the
resource (plural name and scope) is looked up in the server's discovery document of the object's
group version, so nothing here knows a kind in advance. Objects are sent with
`fieldValidation=Strict`, as kubectl does, so a misspelt field is an error rather than silently
dropped.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

import yaml

from informers import ApiStatusError
from kubeclient.rest import RestClient

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
REQUEST_TIMEOUT = 30.0  # seconds


class ManifestError(Exception):
    """A file that cannot be read, or a document that is not a Kubernetes object."""


def load_manifests(paths: Iterable[str]) -> list[dict]:
    """Every object in the files, in order: multi-document YAML, `List` kinds, directories, `-` for stdin."""
    objects: list[dict] = []
    for raw in paths:
        for source, text in _read(raw):
            try:
                docs = list(yaml.safe_load_all(text))
            except yaml.YAMLError as exc:
                raise ManifestError(f"{source}: not valid YAML: {exc}") from exc
            for index, doc in enumerate(docs):
                if doc is None:  # an empty document, e.g. after a trailing `---`
                    continue
                items = (doc["items"] or []) if _is_list(doc) else [doc]
                objects.extend(_checked(obj, f"{source} (document {index + 1})") for obj in items)
    return objects


def _read(raw: str) -> list[tuple[str, str]]:
    if raw == "-":
        return [("<stdin>", sys.stdin.read())]
    path = Path(raw)
    try:
        if path.is_dir():
            return [(str(p), p.read_text()) for p in sorted(path.iterdir()) if p.suffix in MANIFEST_SUFFIXES]
        return [(raw, path.read_text())]
    except OSError as exc:
        raise ManifestError(f"{raw}: {exc.strerror or exc}") from exc


def _is_list(doc) -> bool:
    return isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc


def _checked(obj, where: str) -> dict:
    if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
        raise ManifestError(f"{where}: not a Kubernetes object (apiVersion and kind are required)")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        raise ManifestError(f"{where}: {obj['kind']} has no metadata.name")
    return obj


def describe(obj: dict) -> str:
    """`kind/name` as kubectl prints it, e.g. `genericjob.batch.tensorstack.dev/generic-example`."""
    group = obj["apiVersion"].rpartition("/")[0]
    kind = obj["kind"].lower() + (f".{group}" if group else "")
    return f"{kind}/{obj['metadata'].get('name') or obj['metadata'].get('generateName')}"


class Submitter:
    """Creates objects through the API; caches discovery per group version until a CRD is created."""

    def __init__(self, rest: RestClient, default_namespace: str = "default") -> None:
        self.rest = rest
        self.default_namespace = default_namespace
        self._resources: dict[str, dict[str, tuple[str, bool]]] = {}  # groupVersion -> kind -> (plural, namespaced)

    async def create(self, obj: dict) -> dict:
        """POST the object to its collection; the created object (with uid, namespace) is returned."""
        plural, namespaced = await self._resource(obj["apiVersion"], obj["kind"])
        base = "/api/v1" if obj["apiVersion"] == "v1" else f"/apis/{obj['apiVersion']}"
        if namespaced:
            namespace = obj["metadata"].get("namespace") or self.default_namespace
            obj = {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}
            path = f"{base}/namespaces/{namespace}/{plural}"
        else:
            path = f"{base}/{plural}"
        created = await self._request("POST", path, obj, {"fieldValidation": "Strict"})
        if obj["kind"] == "CustomResourceDefinition":
            self._resources.clear()  # a new kind may be served now
        return created

    async def _resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        kinds = self._resources.get(api_version)
        if kinds is None:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            try:
                listed = await self._request("GET", path)
            except ApiStatusError as exc:
                if exc.code != 404:
                    raise
                listed = {}
            kinds = {r["kind"]: (r["name"], bool(r.get("namespaced")))
                     for r in listed.get("resources") or () if "/" not in r["name"]}
            self._resources[api_version] = kinds
        if kind not in kinds:
            raise ApiStatusError(404, "NotFound", f'no kind "{kind}" is served in version "{api_version}"')
        return kinds[kind]

    async def _request(self, method: str, path: str, body: dict | None = None, query: dict | None = None) -> dict:
        return await self.rest.call(method, path, body, params=query, timeout=REQUEST_TIMEOUT) or {}
