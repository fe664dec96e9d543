"""Request bodies (JSON, YAML, protobuf) read as the apiserver's decoders read them, and the write options
(fieldManager, dryRun, fieldValidation) checked as its handlers check them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
from aiohttp import web

from .. import errors
from . import protobuf, request_options, yaml_bodies
from .request_targets import JSON, MAX_FIELD_MANAGER

if TYPE_CHECKING:
    pass



def truthy(value: str | None) -> bool:
    """A boolean query parameter as the apiserver converts it (runtime.Convert_Slice_string_To_bool): absent,
    "0" or "false" in any case is false; anything else, "yes" and "" included, is true."""
    return value is not None and value != "0" and value.lower() != "false"


def is_dry_run(request: web.Request) -> bool:
    return "dryRun" in request.query


JSON_TYPES = (JSON, "application/yaml")


async def read_body(request: web.Request, api_version: str, kind: str):
    """An object sent to create or replace one of `kind`: JSON, YAML, or (built-in kinds) protobuf."""
    ctype = request.headers.get("Content-Type") and request.content_type
    accepted = (*JSON_TYPES, protobuf.MEDIA_TYPE) if protobuf.accepts(api_version, kind) else JSON_TYPES
    if ctype and ctype not in accepted:
        raise errors.unsupported_media_type(accepted)
    if ctype == protobuf.MEDIA_TYPE:
        return protobuf.decode(await request.read(), api_version, kind)
    return await read_json(request, kind)


def field_manager(request: web.Request) -> str:
    """The writer's name in managedFields: `fieldManager`, else the User-Agent up to its first "/"
    (printable characters, at most 128 bytes), else "unknown" (managerOrUserAgent)."""
    name = request.query.get("fieldManager")
    if not name:
        name = request.headers.get("User-Agent", "").split("/", 1)[0]
        if not name.isprintable() or len(name.encode()) > MAX_FIELD_MANAGER:
            name = "".join(char for char in name if char.isprintable())
            name = name.encode()[:MAX_FIELD_MANAGER].decode(errors="ignore")
    return name or "unknown"


def write_options(request: web.Request, kind: str) -> dict:
    """The write's options as admission webhooks get them (CreateOptions, UpdateOptions, PatchOptions)."""
    options: dict = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if is_dry_run(request):
        options["dryRun"] = ["All"]
    if kind == "PatchOptions" and truthy(request.query.get("force")):
        options["force"] = True
    for key in ("fieldManager", "fieldValidation"):
        if request.query.get(key):
            options[key] = request.query[key]
    return options


def check_write_options(request: web.Request, kind: str, apply: bool = False) -> None:
    """CreateOptions, UpdateOptions and PatchOptions as the server validates them (422 Invalid)."""
    query = request.query
    causes = []
    if kind == "PatchOptions":
        if apply and not query.get("fieldManager"):
            causes.append(("FieldValueRequired", "fieldManager",
                           "fieldManager: Required value: is required for apply patch"))
        elif not apply and "force" in query:
            causes.append(("FieldValueForbidden", "force",
                           "force: Forbidden: may not be specified for non-apply patch"))
    manager = query.get("fieldManager", "")
    if len(manager.encode()) > MAX_FIELD_MANAGER:
        causes.append(("FieldValueTooLong", "fieldManager",
                       f"fieldManager: Too long: may not be more than {MAX_FIELD_MANAGER} bytes"))
    causes += [("FieldValueInvalid", "fieldManager", f"fieldManager: Invalid value: {orjson.dumps(manager).decode()}: "
                f"invalid character {_go_rune(char)} (at position {len(manager[:i].encode())})")
               for i, char in enumerate(manager) if not char.isprintable()]
    dry_run = query.getall("dryRun", [])
    if any(value != "All" for value in dry_run):
        listed = ", ".join(orjson.dumps(value).decode() for value in dry_run)
        causes.append(("FieldValueNotSupported", "dryRun",
                       f'dryRun: Unsupported value: []string{{{listed}}}: supported values: "All"'))
    if causes:
        raise errors.invalid(f"{kind}.meta.k8s.io", "", "meta.k8s.io", kind, causes)


def _go_rune(char: str) -> str:
    """Go's %#U of a character that is not printable: U+0007."""
    return f"U+{ord(char):04X}"


async def read_json(request: web.Request, kind: str = "Object"):
    """A JSON or YAML body (Content-Type checked by the caller); YAML refused as the apiserver refuses it."""
    raw = await request.read()
    if not raw:
        raise errors.bad_request("the request body is empty")
    if "yaml" in request.content_type:
        try:
            return yaml_bodies.load(raw)
        except yaml_bodies.YamlError as exc:
            raise errors.bad_request(yaml_bodies.unrecognized(kind, exc, raw)) from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        # the serializer's first step, finding the kind (k8s.io/apimachinery's json serializer, meta.Interpret)
        raise errors.bad_request("couldn't get version/kind; json parse error: "
                                 f"{request_options.go_json_error(raw, exc)}") from None


async def read_apply(request: web.Request):
    """An apply configuration: YAML (JSON being YAML too); an empty body is an empty object."""
    raw = await request.read()
    try:
        config = yaml_bodies.load(raw) if raw.strip() else {}
    except yaml_bodies.YamlError as exc:
        raise errors.bad_request(f"error decoding YAML: error converting YAML to JSON: {exc}") from None
    return {} if config is None else config
