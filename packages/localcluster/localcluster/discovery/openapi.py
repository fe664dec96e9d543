"""OpenAPI documents: /openapi/v3 (root and one document per group-version) and /openapi/v2 (JSON, or
protobuf for kubectl: openapi_v2.py).

What kubectl reads from them:
- `kubectl apply` (validation on by default) looks in the group-version's v3 document for the PATCH
  operation of the kind (`x-kubernetes-group-version-kind`) and its `fieldValidation` query
  parameter; finding it, it leaves validation to the server (`?fieldValidation=Strict`). Otherwise
  (a kind the server does not serve) it falls back to /openapi/v2, which kubectl only reads as protobuf.
- Client-side apply of a built-in kind computes a strategic merge patch from the v3 schema of the
  component carrying the kind's `x-kubernetes-group-version-kind` (its merge keys and strategies), when
  the PATCH operation accepts strategic-merge-patch+json.
- `kubectl explain` reads the descriptions and types of the kind's schema and the schemas it refers to.
Built-in kinds get Kubernetes' own schemas (builtin_schemas.py, from the published spec), and so do
the meta/v1 types every document refers to (ObjectMeta, Status...); custom resources get their CRD
version's openAPIV3Schema.
"""

from __future__ import annotations

import copy
import functools
import hashlib
from datetime import UTC, datetime, timedelta

import orjson
from aiohttp import web

from ..errors import ApiError, unknown_path
from ..storage.resources import Registry, ResourceType
from ..validation import builtin_schemas
from . import openapi_v2

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
PERMISSIVE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
# The meta.k8s.io types a document's operations and custom resources refer to.
META_TYPES = (META + "ObjectMeta", META + "ListMeta", META + "Status", META + "DeleteOptions", META + "Patch")
QUERY_PARAMS = {
    "dryRun": "When present, indicates that modifications should not be persisted.",
    "fieldManager": "fieldManager is a name associated with the actor or entity that is making these changes.",
    "fieldValidation": "fieldValidation instructs the server on how to handle objects in the request "
                       "containing unknown or duplicate fields. Valid values are: Ignore, Warn, Strict.",
    "pretty": "If 'true', then the output is pretty printed.",
}
LIST_PARAMS = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
               "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch")
JSON_TYPES = ("application/json", "application/yaml")


# --- names ----------------------------------------------------------------------------------


def gv_path(group: str, version: str) -> str:
    """The key of a group-version in the v3 root: `api/v1` or `apis/<group>/<version>`."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def schema_name(rt: ResourceType, kind: str | None = None) -> str:
    """Component names as the apiserver's: Go package paths for built-ins, reversed group for CRDs."""
    kind = kind or rt.kind
    if rt.crd_name is None:
        return builtin_schemas.definition_name(rt.group, rt.version, kind)
    return ".".join([*reversed(rt.group.split(".")), rt.version, kind])


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


# --- v3 ---------------------------------------------------------------------------------------


def _param(name: str, where: str = "query", description: str = "") -> dict:
    kind = {"limit": "integer", "timeoutSeconds": "integer", "gracePeriodSeconds": "integer", "watch": "boolean",
            "allowWatchBookmarks": "boolean", "sendInitialEvents": "boolean", "force": "boolean"}.get(name, "string")
    param: dict[str, object] = {"name": name, "in": where, "description": description or QUERY_PARAMS.get(name, ""),
             "schema": {"type": kind, "uniqueItems": True}}
    if where == "path":
        param["required"] = True
    return param


def _content(types: tuple[str, ...], schema: str) -> dict:
    return {t: {"schema": _ref(schema)} for t in types}


def _operation(rt: ResourceType, action: str, text: str, op_id: str, params: list[str], body: dict | None = None,
               returns: str | None = None) -> dict:
    op = {
        "tags": [rt.group_version.replace("/", "_").replace(".", "")],
        "description": f"{text} {rt.kind}",
        "operationId": op_id,
        "parameters": [_param(p) for p in params],
        "responses": {"200": {"description": "OK", "content": _content(JSON_TYPES, returns or schema_name(rt))},
                      "401": {"description": "Unauthorized"}},
        "x-kubernetes-action": action,
        # What kubectl matches an operation to a kind by.
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
    }
    if body:
        op["requestBody"] = {"content": body, "required": action not in ("delete", "deletecollection")}
    return op


def _operation_prefix(rt: ResourceType) -> str:
    """`CoreV1`, `AppsV1`, `RbacAuthorizationV1`, `BatchTensorstackDevV1beta1`: as in operationIds."""
    words = rt.group.removesuffix(".k8s.io").replace("-", ".").split(".") if rt.group else ["core"]
    return "".join(w[:1].upper() + w[1:] for w in words) + rt.version[:1].upper() + rt.version[1:]


def _paths(rt: ResourceType) -> dict:
    """The REST paths of one resource with their operations, as the apiserver publishes them."""
    prefix = f"/apis/{rt.group_version}" if rt.group else f"/api/{rt.version}"
    base = f"{prefix}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{prefix}/{rt.plural}"
    name = _operation_prefix(rt) + ("Namespaced" if rt.namespaced else "") + rt.kind
    write = ["dryRun", "fieldManager", "fieldValidation"]
    full = _content(JSON_TYPES, schema_name(rt))
    patch = _content(rt.patch_types, META + "Patch")
    options = _content(("application/json",), META + "DeleteOptions")
    listed = schema_name(rt, rt.list_kind)
    pretty = _param("pretty")
    scope = [_param("namespace", "path", "object name and auth scope, such as for teams and projects")] \
        if rt.namespaced else []
    item_params = [_param("name", "path", f"name of the {rt.kind}"), *scope, pretty]
    if rt.verbs == ("create",):  # the review kinds: answered, never stored
        return {base: {"post": _operation(rt, "post", "create a", f"create{name}", write, full),
                       "parameters": [*scope, pretty]}}
    paths = {
        base: {
            "get": _operation(rt, "list", "list or watch objects of kind", f"list{name}", list(LIST_PARAMS),
                              returns=listed),
            "post": _operation(rt, "post", "create a", f"create{name}", write, full),
            "delete": _operation(rt, "deletecollection", "delete collection of", f"deleteCollection{name}",
                                 ["dryRun", "gracePeriodSeconds", "propagationPolicy", *LIST_PARAMS], options,
                                 returns=META + "Status"),
            "parameters": [*scope, pretty],
        },
        f"{base}/{{name}}": {
            "get": _operation(rt, "get", "read the specified", f"read{name}", []),
            "put": _operation(rt, "put", "replace the specified", f"replace{name}", write, full),
            "patch": _operation(rt, "patch", "partially update the specified", f"patch{name}", [*write, "force"],
                                patch),
            "delete": _operation(rt, "delete", "delete a", f"delete{name}",
                                 ["dryRun", "gracePeriodSeconds", "propagationPolicy"], options,
                                 returns=META + "Status"),
            "parameters": item_params,
        },
    }
    if rt.namespaced:
        paths[f"{prefix}/{rt.plural}"] = {
            "get": _operation(rt, "list", "list or watch objects of kind",
                              f"list{name.replace('Namespaced', '', 1)}ForAllNamespaces", list(LIST_PARAMS),
                              returns=listed),
            "parameters": [pretty],
        }
    if rt.status_subresource:
        paths[f"{base}/{{name}}/status"] = {
            "get": _operation(rt, "get", "read status of the specified", f"read{name}Status", []),
            "put": _operation(rt, "put", "replace status of the specified", f"replace{name}Status", write, full),
            "patch": _operation(rt, "patch", "partially update status of the specified", f"patch{name}Status",
                                [*write, "force"], patch),
            "parameters": item_params,
        }
    return paths


def _kind_schema(rt: ResourceType) -> dict:
    if rt.schema is None:
        return {**PERMISSIVE, "description": f"{rt.kind} (schema not published by localcluster)."}
    schema = copy.deepcopy(rt.schema)
    props = schema.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", "description": "APIVersion defines the versioned schema of this "
                                                            "representation of an object."}
    props["kind"] = {"type": "string", "description": "Kind is a string value representing the REST resource "
                                                      "this object represents."}
    props["metadata"] = {"allOf": [_ref(META + "ObjectMeta")], "description": "Standard object's metadata."}
    schema.setdefault("type", "object")
    schema["x-kubernetes-group-version-kind"] = [{"group": rt.group, "version": rt.version, "kind": rt.kind}]
    return schema


def _list_schema(rt: ResourceType) -> dict:
    return {
        "type": "object",
        "description": f"{rt.list_kind} is a list of {rt.kind}",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "items": {"type": "array", "items": _ref(schema_name(rt))},
            "metadata": {"allOf": [_ref(META + "ListMeta")]},
        },
        "x-kubernetes-group-version-kind": [{"group": rt.group, "version": rt.version, "kind": rt.list_kind}],
    }


def _builtin(rt: ResourceType) -> bool:
    return rt.crd_name is None and builtin_schemas.has_kind(rt.group, rt.version, rt.kind)


def group_version_document(registry: Registry, group: str, version: str) -> dict | None:
    types = sorted(registry.in_group_version(group, version), key=lambda rt: rt.plural)
    if not types:
        return None
    paths: dict = {}
    schemas: dict = {}
    builtin_roots = list(META_TYPES)
    for rt in types:
        paths.update(_paths(rt))
        if _builtin(rt):
            builtin_roots += [schema_name(rt), schema_name(rt, rt.list_kind)]
        else:
            schemas[schema_name(rt)] = _kind_schema(rt)
            schemas[schema_name(rt, rt.list_kind)] = _list_schema(rt)
    schemas.update(_builtin_components(tuple(builtin_roots)))
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.35.0"}, "paths": paths,
            "components": {"schemas": dict(sorted(schemas.items()))}}


@functools.lru_cache(maxsize=64)
def _builtin_components(roots: tuple[str, ...]) -> dict:
    """The built-in schemas `roots` name (those that exist: review kinds have no list) and all they refer to."""
    components = builtin_schemas.components()
    out: dict = {}
    todo = [name for name in roots if name in components]
    while todo:
        name = todo.pop()
        if name not in out:
            out[name] = components[name]
            todo += builtin_schemas.references(components[name])
    return out


def _group_versions(registry: Registry) -> list[tuple[str, str]]:
    return sorted({(rt.group, rt.version) for rt in registry.all()})


def _etag(body: bytes) -> str:
    return hashlib.sha512(body).hexdigest().upper()


def root_document(registry: Registry) -> dict:
    paths = {}
    for group, version in _group_versions(registry):
        body = orjson.dumps(group_version_document(registry, group, version))
        key = gv_path(group, version)
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={_etag(body)}"}
    return {"paths": paths}


# --- v2 -----------------------------------------------------------------------------------------


def swagger_document(registry: Registry) -> dict:
    """Swagger 2.0, built from the v3 documents (served as JSON, or as protobuf by openapi_v2.py)."""
    definitions: dict = {}
    paths: dict = {}
    for group, version in _group_versions(registry):
        doc = group_version_document(registry, group, version) or {}
        definitions.update(doc["components"]["schemas"])
        for path, item in doc["paths"].items():
            paths[path] = {verb: _v2_operation(op) if verb != "parameters" else [_v2_param(p) for p in op]
                           for verb, op in item.items()}
    published = builtin_schemas.definitions()
    custom = {name: schema for name, schema in definitions.items() if name not in published}
    raw = orjson.dumps(custom).replace(b"#/components/schemas/", b"#/definitions/")
    converted = orjson.loads(raw)
    # Built-in kinds' definitions as the apiserver publishes them in v2 (their v3 form is derived from these).
    definitions = {name: published.get(name) or converted[name] for name in sorted(definitions)}
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.35.0"}, "paths": paths,
            "definitions": definitions}


def _v2_param(param: dict) -> dict:
    out = {k: v for k, v in param.items() if k != "schema"}
    out["type"] = param["schema"]["type"]
    out["uniqueItems"] = True
    return out


def _v2_operation(op: dict) -> dict:
    out = {k: v for k, v in op.items() if k not in ("requestBody", "responses", "parameters")}
    out["parameters"] = [_v2_param(p) for p in op["parameters"]]
    out["consumes"] = list((op.get("requestBody") or {}).get("content") or ["*/*"])
    out["produces"] = list(JSON_TYPES)
    schema = op["responses"]["200"]["content"]["application/json"]["schema"]
    out["responses"] = {"200": {"description": "OK", "schema": {"$ref": schema["$ref"].replace(
        "#/components/schemas/", "#/definitions/")}}}
    return out


# --- HTTP ---------------------------------------------------------------------------------------


def _accepts_json(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    if not accept:
        return True
    types = {part.split(";")[0].strip() for part in accept.split(",")}
    return bool(types & {"application/json", "*/*", "application/*"})


def _swagger(registry: Registry, request: web.Request) -> web.Response:
    """/openapi/v2 as JSON or as gnostic's protobuf (what kubectl asks for), the first the Accept header
    allows; else 406 with no body, as kube-openapi's handler answers."""
    for media in (request.headers.get("Accept") or "*/*").split(","):
        mime = media.split(";")[0].strip()
        if mime in openapi_v2.MEDIA_TYPES:
            body = openapi_v2.document(swagger_document(registry))
            return web.Response(body=body, headers={"Content-Type": openapi_v2.CONTENT_TYPE, "Vary": "Accept"})
        if mime in ("application/json", "application/*", "*/*"):
            return web.Response(body=orjson.dumps(swagger_document(registry)), content_type="application/json",
                                headers={"Vary": "Accept"})
    return web.Response(status=406, headers={"Vary": "Accept"})


def _not_found() -> ApiError:
    return unknown_path()


def handle(registry: Registry, request: web.Request, rest: list[str]) -> web.Response:
    """GET /openapi/v2, /openapi/v3 and /openapi/v3/{api/v1,apis/<group>/<version>}."""
    if rest == ["v2"]:
        return _swagger(registry, request)
    if not _accepts_json(request):
        raise ApiError(406, "NotAcceptable", "only application/json is served for OpenAPI documents")
    if rest == ["v3"]:
        return web.Response(body=orjson.dumps(root_document(registry)), content_type="application/json")
    if len(rest) == 3 and rest[:2] == ["v3", "api"]:
        group, version = "", rest[2]
    elif len(rest) == 4 and rest[:2] == ["v3", "apis"]:
        group, version = rest[2], rest[3]
    else:
        raise _not_found()
    doc = group_version_document(registry, group, version)
    if doc is None:
        raise _not_found()
    body = orjson.dumps(doc)
    etag = _etag(body)
    url = f"/openapi/v3/{gv_path(group, version)}?hash={etag}"
    headers = {"ETag": f'"{etag}"', "Vary": "Accept"}
    wanted = request.query.get("hash")
    if wanted is not None and wanted != etag:
        # As kube-openapi's handler3: an outdated hash redirects to the current document.
        raise web.HTTPMovedPermanently(url)
    if wanted is not None:
        # A hashed URL names one immutable document, so HTTP caches (kubectl's --cache-dir) may keep it.
        expires = datetime.now(UTC) + timedelta(days=365)
        headers |= {"Cache-Control": "public, immutable", "Expires": expires.strftime("%a, %d %b %Y %H:%M:%S GMT")}
    if request.headers.get("If-None-Match") == headers["ETag"]:
        return web.Response(status=304, headers=headers)
    return web.Response(body=body, content_type="application/json", headers=headers)
