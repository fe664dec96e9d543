"""Submit manifests as `kubectl create -f` would: read YAML documents, find each kind's resource, POST it.

Any kind the server serves can be submitted (GenericJobs, ConfigMaps, Namespaces, CRDs, ...): the
resource (plural name and scope) is looked up in the server's discovery document of the object's
group version, so nothing here knows a kind in advance. Objects are sent with
`fieldValidation=Strict`, as kubectl does, so a misspelt field is an error rather than silently
dropped.

Several files are applied as `kubectl apply -f A -f B` applies them: every object the server takes is created,
and one it refuses (the admission webhook, a schema's rule, a name taken), or a document that is no object, is
reported (its file, and the server's message, which names the field) while the rest go on. Only a path that
cannot be read stops everything before anything is created, as kubectl refuses a path that does not exist.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from informers import ApiStatusError
from kubeclient.rest import RestClient

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
REQUEST_TIMEOUT = 30.0  # seconds


class ManifestError(Exception):
    """A path that cannot be read: nothing is applied."""


@dataclass(frozen=True)
class Manifest:
    """One document of the files: the object to create, or (`obj` None) why it is not one."""

    source: str  # the file it came from, as named (a directory's file by its path; "<stdin>" for -)
    obj: dict | None
    problem: str = ""


def load_manifests(paths: Iterable[str]) -> list[Manifest]:
    """Every document in the files, in order: multi-document YAML, `List` kinds, directories, `-` for stdin. A
    document that is not an object, or YAML that cannot be parsed (from there to the file's end: the documents
    before it stand, as kubectl's decoder keeps them), is a Manifest with a problem; the others are unaffected."""
    manifests: list[Manifest] = []
    for raw in paths:
        for source, text in _read(raw):
            docs = yaml.safe_load_all(text)
            index = 0
            while True:
                try:
                    doc = next(docs)
                except StopIteration:
                    break
                except yaml.YAMLError as exc:
                    manifests.append(Manifest(source, None, f"{source}: not valid YAML: {_yaml_error(exc)}"))
                    break
                index += 1
                if doc is None:  # an empty document, e.g. after a trailing `---`
                    continue
                items = (doc["items"] or []) if _is_list(doc) else [doc]
                manifests.extend(_checked(source, obj, f"{source} (document {index})") for obj in items)
    return manifests


def _yaml_error(exc: yaml.YAMLError) -> str:
    """The parser's complaint on one line, where it is in the file: `line 12, column 7: expected ',' or '}', ...`
    (its own text spans several lines, quoting the file)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).replace("\n", " ")
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark is not None else problem


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


def _checked(source: str, obj, where: str) -> Manifest:
    if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
        return Manifest(source, None, f"{where}: not a Kubernetes object (apiVersion and kind are required)")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        return Manifest(source, None, f"{where}: {obj['kind']} has no metadata.name")
    return Manifest(source, obj)


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


async def create_all(submitter: Submitter, manifests: Iterable[Manifest], created: Callable[[dict], None],
                     refused: Callable[[str], None]) -> list[str]:
    """Create every object in order, `created(object)` for each the server took; past a refusal the rest go on,
    as `kubectl apply` goes on. Every refusal and every document that is no object, `FILE: kind/name: message`,
    is told to `refused` as it comes, and returned."""
    refusals: list[str] = []
    for manifest in manifests:
        if manifest.obj is None:
            refusals.append(manifest.problem)
            refused(manifest.problem)
            continue
        try:
            obj = await submitter.create(manifest.obj)
        except ApiStatusError as exc:
            refusals.append(f"{manifest.source}: {describe(manifest.obj)}: {exc.message or exc}")
            refused(refusals[-1])
            continue
        created(obj)
    return refusals
