"""What the API server keeps of a CRD's schemas: each `openAPIV3Schema` decoded into apiextensions/v1
JSONSchemaProps (k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/types_jsonschema.go) and encoded
back, so every `omitempty` field left at its zero value is gone: `required: []`, `properties: {}`,
`description: ""`, `nullable: false`, and any field given as null. Pointer fields keep their zero
(`x-kubernetes-preserve-unknown-fields: false`, `maxLength: 0`, `$ref: ""`); `default`, `example` and `enum`
values are raw JSON, kept as written. A file with `required: []` thus differs from what the server stores,
and server-side apply of it over a client-side apply conflicts, as on a real cluster.
"""

from __future__ import annotations

# JSONSchemaProps' omitempty fields whose Go type is a string, bool, slice or map (not a pointer): their zero
# value is dropped.
OMITEMPTY = frozenset({
    "id", "$schema", "description", "type", "format", "title", "pattern",
    "exclusiveMaximum", "exclusiveMinimum", "uniqueItems", "nullable",
    "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string",
    "enum", "required", "allOf", "oneOf", "anyOf", "x-kubernetes-list-map-keys", "x-kubernetes-validations",
    "properties", "patternProperties", "dependencies", "definitions",
})
RULE_OMITEMPTY = frozenset({"message", "messageExpression", "fieldPath"})  # ValidationRule's string fields
SCHEMA_MAPS = ("properties", "patternProperties", "definitions")
SCHEMA_LISTS = ("allOf", "oneOf", "anyOf")


def decode_crd(crd: dict) -> None:
    """Drop, in place, what decoding the CRD's version schemas into their Go type drops."""
    for version in (crd.get("spec") or {}).get("versions") or ():
        schema = (version.get("schema") if isinstance(version, dict) else None) or {}
        if isinstance(schema.get("openAPIV3Schema"), dict):
            _decode(schema["openAPIV3Schema"])


def _empty(value) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}


def _decode(props: dict) -> None:
    for key in [k for k, v in props.items() if v is None or (k in OMITEMPTY and _empty(v))]:
        del props[key]
    for key in SCHEMA_MAPS:
        for child in (props.get(key) or {}).values():
            if isinstance(child, dict):
                _decode(child)
    for key in SCHEMA_LISTS:
        for child in props.get(key) or ():
            if isinstance(child, dict):
                _decode(child)
    for key in ("not", "items", "additionalProperties", "additionalItems"):
        child = props.get(key)
        for one in (child if isinstance(child, list) else [child]):
            if isinstance(one, dict):
                _decode(one)
    for child in (props.get("dependencies") or {}).values():
        if isinstance(child, dict):
            _decode(child)
    for rule in props.get("x-kubernetes-validations") or ():
        if isinstance(rule, dict):
            for key in [k for k, v in rule.items() if v is None or (k in RULE_OMITEMPTY and v == "")]:
                del rule[key]
