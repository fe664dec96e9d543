"""The OpenAPI schemas of the built-in kinds (k8s_openapi.json.gz, made by scripts/gen_k8s_openapi.py from
Kubernetes' published spec), and what the apiserver's typed JSON decoding does with an object of one.

The schemas are the Go types: a definition with `properties` is a struct, whose JSON keys are exactly
those; `items` a slice; `additionalProperties` a map; anything else (Time, IntOrString, RawExtension,
FieldsV1...) a type that reads its own JSON. Decoding a built-in object into its Go type, as the
apiserver does on every write, therefore
- drops the fields the type does not have, which `fieldValidation` (Strict, Warn) reports, named by
  their path as sigs.k8s.io/json names them (`spec.template.spec.containers[0].imagee`);
- parses every Quantity (quantity.py) and writes it back in its canonical form.
The data is read on first use: once a built-in kind is written or an OpenAPI document asked for.
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import orjson

from .quantity import canonical

DATA = Path(__file__).with_name("k8s_openapi.json.gz")
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
V2_PREFIX, V3_PREFIX = "#/definitions/", "#/components/schemas/"
# kube-openapi's OpenAPIV3OneOfTypes: the types whose v3 schema lists the JSON types they read.
V3_ONE_OF = {QUANTITY: [{"type": "string"}, {"type": "number"}],
             INT_OR_STRING: [{"type": "integer"}, {"type": "string"}]}
STRICT_ERRORS_KEPT = 100  # sigs.k8s.io/json stops collecting there


def definition_name(group: str, version: str, kind: str) -> str:
    """A built-in kind's definition, named by its Go package: io.k8s.api.apps.v1.Deployment."""
    if group == "apiextensions.k8s.io":
        return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{version}.{kind}"
    return f"io.k8s.api.{group.split('.')[0] or 'core'}.{version}.{kind}"


@functools.cache
def _data() -> dict:
    return orjson.loads(gzip.decompress(DATA.read_bytes()))


def definitions() -> dict:
    """Swagger 2.0 definitions by name, as published."""
    return _data()["definitions"]


def source() -> str:
    return _data()["source"]


@functools.cache
def components() -> dict:
    """The same schemas in the shape of the apiserver's OpenAPI v3 documents: a `$ref` with siblings (a
    field's description) inside `allOf`, refs to `#/components/schemas/`, Quantity and IntOrString as
    `oneOf` their JSON types. (The v3 documents' `default` values are not in the published v2 spec.)"""
    out = {name: _v3(schema) for name, schema in definitions().items()}
    for name, one_of in V3_ONE_OF.items():
        if name in out:
            out[name] = {**{k: v for k, v in out[name].items() if k != "type"}, "oneOf": one_of}
    return out


def _v3(node):
    if isinstance(node, list):
        return [_v3(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: (value if key in ("properties", "x-kubernetes-group-version-kind") else _v3(value))
           for key, value in node.items()}
    if "properties" in node:
        out["properties"] = {name: _v3(value) for name, value in node["properties"].items()}
    ref = out.pop("$ref", None)
    if ref is None:
        return out
    ref = {"$ref": ref.replace(V2_PREFIX, V3_PREFIX)}
    return {"allOf": [ref], **out} if out else ref


def references(node) -> list[str]:
    """The names of the schemas a schema refers to (v2 or v3 refs)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        own = [ref.removeprefix(V2_PREFIX).removeprefix(V3_PREFIX)] if isinstance(ref, str) else []
        return own + [name for value in node.values() for name in references(value)]
    if isinstance(node, list):
        return [name for value in node for name in references(value)]
    return []


def has_kind(group: str, version: str, kind: str) -> bool:
    return definition_name(group, version, kind) in definitions()


def decode(obj: dict, group: str, version: str, kind: str) -> tuple[dict, list[str]]:
    """The object as the apiserver's typed decoding leaves it (Quantities canonical, fields its Go type does
    not have dropped), and the paths of those fields. Raises QuantityError for a Quantity that does not parse,
    JsonTypeError for a value of the wrong JSON type (the first, as encoding/json reports it)."""
    unknown: list[str] = []
    name = definition_name(group, version, kind)
    first_error: list[JsonTypeError] = []
    decoded = _decode(obj, {"$ref": V2_PREFIX + name}, "", unknown, False, (kind, ""), first_error)
    if first_error:
        raise first_error[0]
    return decoded, unknown[:STRICT_ERRORS_KEPT]


def decode_metadata(obj: dict) -> tuple[dict, list[str]]:
    """A custom resource's object as the apiextensions server leaves it: its `metadata` is decoded as an
    ObjectMeta (unknown fields dropped and reported, as `metadata.colour`); the rest is its schema's business."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return obj, []
    unknown: list[str] = []
    decoded = _decode(meta, {"$ref": V2_PREFIX + OBJECT_META}, "metadata", unknown, False, ("", "metadata"), [])
    return (obj if decoded is meta else {**obj, "metadata": decoded}), unknown[:STRICT_ERRORS_KEPT]


def _decode(value, schema: dict, path: str, unknown: list[str], in_map: bool, field: tuple[str, str],
            first_error: list[JsonTypeError]):
    """Copy-on-write: the same value when nothing in it changes. `field` is (the Go struct holding the value,
    its JSON field path without indices or map keys), for encoding/json's words; `first_error` keeps the first
    type error, as encoding/json goes on decoding after one and reports the first."""
    ref = schema.get("$ref")
    if ref is not None:
        name = ref.removeprefix(V2_PREFIX)
        if name == QUANTITY:
            if value is None and not in_map:
                return value  # a nil *Quantity
            return canonical(value)
        schema = definitions()[name]
        if "properties" not in schema:
            return value  # Time, IntOrString, RawExtension...: a type that reads its own JSON
    if value is not None and not _json_type_fits(value, schema):
        if not first_error:
            first_error.append(JsonTypeError(value, _go_type(schema, ref), *field))
        return value
    if "properties" in schema and isinstance(value, dict):
        fields = schema["properties"]
        struct = (ref or "").rsplit(".", 1)[-1] or field[0]
        out, changed = {}, False
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if key not in fields:  # the Go struct has nowhere to keep it: dropped, and reported
                if where not in unknown:
                    unknown.append(where)
                changed = True
                continue
            go_path = f"{field[1]}.{key}" if field[1] else key
            out[key] = _decode(item, fields[key], where, unknown, False, (struct, go_path), first_error)
            changed = changed or out[key] is not item
        return out if changed else value
    if "items" in schema and isinstance(value, list):
        new_items = [_decode(item, schema["items"], f"{path}[{i}]", unknown, False, field, first_error)
                     for i, item in enumerate(value)]
        return new_items if any(a is not b for a, b in zip(new_items, value, strict=True)) else value
    if isinstance(schema.get("additionalProperties"), dict) and isinstance(value, dict):
        entries = {key: _decode(item, schema["additionalProperties"], f"{path}.{key}", unknown, True, field,
                                first_error)
                   for key, item in value.items()}
        return entries if any(entries[k] is not value[k] for k in value) else value
    return value


class JsonTypeError(ValueError):
    """encoding/json's UnmarshalTypeError: a JSON value its Go field cannot hold, e.g. `"yes"` for a bool."""

    def __init__(self, value, go_type: str, struct: str, field: str) -> None:
        if struct or field:
            where = f"Go struct field {struct}.{field}"
        else:
            where = "Go value"
        super().__init__(f"json: cannot unmarshal {_json_kind(value, go_type)} into {where} of type {go_type}")


INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _json_type_fits(value, schema: dict) -> bool:
    kind = schema.get("type")
    if "properties" in schema or kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "integer":
        low, high = INT_RANGES.get(schema.get("format", "int64"), INT_RANGES["int64"])
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    return True


def _json_kind(value, go_type: str) -> str:
    """How encoding/json names the JSON value it could not store: a number that is one, but not of the Go type's
    kind, is named with its text ("number 1.5")."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        if go_type.startswith(("int", "uint", "float")):
            return f"number {orjson.dumps(value).decode()}"
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), "value")


def _go_type(schema: dict, ref: str | None = None) -> str:
    """The Go type a schema stands for, as reflect prints it: bool, int32, []v1.Container, map[string]string."""
    if ref is not None:
        return ".".join(ref.removeprefix(V2_PREFIX).rsplit(".", 2)[-2:])
    if "$ref" in schema:
        return _go_type(definitions()[schema["$ref"].removeprefix(V2_PREFIX)], schema["$ref"])
    kind = schema.get("type")
    if kind == "array":
        return "[]" + _go_type(schema.get("items", {}))
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return "map[string]" + _go_type(schema["additionalProperties"])
    if kind == "string":
        return "[]uint8" if schema.get("format") == "byte" else "string"
    names: dict[object, str] = {"boolean": "bool", "integer": schema.get("format", "int64"), "number": "float64"}
    return names.get(kind, "interface {}")
