"""/openapi/v2 as kube-apiserver serves it to kubectl: Swagger 2.0 in gnostic's protobuf encoding.

kubectl reads /openapi/v2 only as `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (client-go's
`OpenAPISchema`), and needs it whenever the v3 documents do not settle a kind: `kubectl apply` of a kind the
server does not serve (a typo in `kind:` or in the apiVersion's group) asks v3 whether the kind supports
`fieldValidation`, finds nothing, falls back to v2 and, the kind being unknown there too, validates on the
client against v2 (which skips an unknown kind), so that the REST mapping then fails with the real message,
`no matches for kind "GenericJobb" in version ... ensure CRDs are installed first`. Without a v2 document
it would stop at "the server was unable to respond with a content type that the client supports".

The encoding is gnostic's openapi_v2.Document (github.com/google/gnostic-models, openapiv2/OpenAPIv2.proto):
field numbers below are that file's. Only what a Swagger document built from the v3 ones holds is encoded:
info, paths with their operations and non-body parameters, responses, and definitions (JSON schemas, with
`x-*` keys as vendor extensions holding YAML, as gnostic keeps them). Keys Swagger 2.0 lacks (`nullable`,
`anyOf`) are left out, as the apiserver's own v3-to-v2 conversion drops them.
"""

from __future__ import annotations

import struct

import yaml

MEDIA_TYPES = ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
               "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
CONTENT_TYPE = MEDIA_TYPES[1]  # what kube-openapi's handler answers with, whichever of the two was asked for


# --- the wire format ----------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1  # negative int64s as two's complement, ten bytes
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _string(field: int, text: str) -> bytes:
    return _bytes(field, text.encode()) if text else b""  # proto3 leaves out empty values


def _strings(field: int, texts) -> bytes:
    return b"".join(_bytes(field, str(text).encode()) for text in texts or ())


def _bool(field: int, value) -> bytes:
    return _varint(field << 3) + b"\x01" if value is True else b""


def _int(field: int, value) -> bytes:
    return _varint(field << 3) + _varint(int(value)) if isinstance(value, int) and value else b""


def _double(field: int, value) -> bytes:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value:
        return b""
    return _varint(field << 3 | 1) + struct.pack("<d", float(value))


def _message(field: int, data: bytes, always: bool = False) -> bytes:
    return _bytes(field, data) if data or always else b""


# --- gnostic's messages ---------------------------------------------------------------------------


def _any(value) -> bytes:
    """Any: the value as YAML (field 2), as gnostic keeps values it has no type for."""
    return _string(2, yaml.safe_dump(value, default_flow_style=False, sort_keys=True))


def _named_any(field: int, name: str, value) -> bytes:
    return _message(field, _string(1, name) + _message(2, _any(value), always=True))


def _extensions(field: int, node: dict) -> bytes:
    return b"".join(_named_any(field, key, value) for key, value in node.items() if key.startswith("x-"))


def schema(node: dict) -> bytes:
    """Schema: a JSON schema of a definition, a property, an item, a body or a response."""
    out = [_string(1, node.get("$ref", "")), _string(2, node.get("format", "")), _string(3, node.get("title", "")),
           _string(4, node.get("description", ""))]
    if "default" in node:
        out.append(_message(5, _any(node["default"]), always=True))
    out += [_double(6, node.get("multipleOf")), _double(7, node.get("maximum")), _bool(8, node.get("exclusiveMaximum")),
            _double(9, node.get("minimum")), _bool(10, node.get("exclusiveMinimum")), _int(11, node.get("maxLength")),
            _int(12, node.get("minLength")), _string(13, node.get("pattern", "")), _int(14, node.get("maxItems")),
            _int(15, node.get("minItems")), _bool(16, node.get("uniqueItems")), _int(17, node.get("maxProperties")),
            _int(18, node.get("minProperties")), _strings(19, node.get("required"))]
    out += [_message(20, _any(value), always=True) for value in node.get("enum") or ()]
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out.append(_message(21, _message(1, schema(extra), always=True), always=True))
    elif isinstance(extra, bool):
        out.append(_message(21, _varint(2 << 3) + (b"\x01" if extra else b"\x00"), always=True))
    kinds = node.get("type")
    if kinds:
        out.append(_message(22, _strings(1, kinds if isinstance(kinds, list) else [kinds])))
    items = node.get("items")
    if items:
        out.append(_message(23, b"".join(_message(1, schema(item), always=True)
                                         for item in (items if isinstance(items, list) else [items])), always=True))
    out += [_message(24, schema(part), always=True) for part in node.get("allOf") or ()]
    if "properties" in node:
        named = b"".join(_message(1, _string(1, name) + _message(2, schema(sub), always=True))
                         for name, sub in node["properties"].items())
        out.append(_message(25, named, always=True))
    out.append(_bool(27, node.get("readOnly")))
    out.append(_extensions(31, node))
    return b"".join(out)


_PARAMETER_FIELDS = {  # NonBodyParameter's oneof field, then the sub-schema's numbers for what we hold
    "query": (3, {"required": 1, "in": 2, "description": 3, "name": 4, "type": 6, "uniqueItems": 20}),
    "path": (4, {"required": 1, "in": 2, "description": 3, "name": 4, "type": 5, "uniqueItems": 19}),
    "header": (1, {"required": 1, "in": 2, "description": 3, "name": 4, "type": 5, "uniqueItems": 19}),
}


def parameter(param: dict) -> bytes:
    """ParametersItem holding a Parameter: a body parameter (its schema) or a non-body one."""
    if param.get("in") == "body":
        body = (_string(1, param.get("description", "")) + _string(2, param.get("name", "")) + _string(3, "body")
                + _bool(4, param.get("required")) + _message(5, schema(param.get("schema") or {}), always=True))
        return _message(1, _message(1, body, always=True), always=True)
    oneof, numbers = _PARAMETER_FIELDS[param["in"]]
    sub = b"".join(_bool(numbers[key], value) if isinstance(value, bool) else _string(numbers[key], value)
                   for key, value in param.items() if key in numbers)
    return _message(1, _message(2, _message(oneof, sub, always=True), always=True), always=True)


def operation(op: dict) -> bytes:
    out = [_strings(1, op.get("tags")), _string(3, op.get("description", "")), _string(5, op.get("operationId", "")),
           _strings(6, op.get("produces")), _strings(7, op.get("consumes"))]
    out += [_message(8, parameter(p), always=True) for p in op.get("parameters") or ()]
    responses = b""
    for code, response in (op.get("responses") or {}).items():
        body = _string(1, response.get("description", ""))
        if "schema" in response:
            body += _message(2, _message(1, schema(response["schema"]), always=True), always=True)
        responses += _message(1, _string(1, code) + _message(2, _message(1, body, always=True), always=True))
    out += [_message(9, responses, always=True), _strings(10, op.get("schemes")), _extensions(13, op)]
    return b"".join(out)


_VERBS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def path_item(item: dict) -> bytes:
    out = [_message(_VERBS[verb], operation(op), always=True) for verb, op in item.items() if verb in _VERBS]
    out += [_message(9, parameter(p), always=True) for p in item.get("parameters") or ()]
    return b"".join(out)


def document(swagger: dict) -> bytes:
    """openapi_v2.Document of a Swagger 2.0 document (a dict as JSON has it)."""
    info = swagger.get("info") or {}
    paths = b"".join(_message(2, _string(1, path) + _message(2, path_item(item), always=True))
                     for path, item in (swagger.get("paths") or {}).items())
    definitions = b"".join(_message(1, _string(1, name) + _message(2, schema(node), always=True))
                           for name, node in (swagger.get("definitions") or {}).items())
    return b"".join([_string(1, swagger.get("swagger", "2.0")),
                     _message(2, _string(1, info.get("title", "")) + _string(2, info.get("version", ""))),
                     _strings(7, swagger.get("produces")), _message(8, paths, always=True),
                     _message(9, definitions, always=True), _extensions(16, swagger)])
