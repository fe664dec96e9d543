"""What a typed decoder refuses before any validation: an object's metadata that is not an ObjectMeta.

kube-apiserver decodes a built-in kind's body into its Go struct, so `"metadata": true` or a number for
`metadata.name` never reaches validation: the decode fails in encoding/json's words, `json: cannot
unmarshal bool into Go struct field ConfigMap.metadata of type v1.ObjectMeta`. A create or replace
answers 400 `ConfigMap in version "v1" cannot be handled as a ConfigMap: <that>`; a patch whose result
does not decode answers 422 `patch: Invalid value: "<the patched JSON>": <that>`. Without this check
such a body reached code that assumes a dict or a string and answered 500 (found by
localcluster_tests/test_fuzz_decoding.py). The callers raise (validation/ sits below errors.py).
"""

from __future__ import annotations

# ObjectMeta's string fields a write reads before validation.
STRING_FIELDS = ("name", "generateName", "namespace", "resourceVersion", "uid")
# Its maps and lists: (JSON type, element JSON type, the Go type named in the error).
COLLECTIONS = {"labels": (dict, str, "map[string]string"), "annotations": (dict, str, "map[string]string"),
               "finalizers": (list, str, "[]string"), "ownerReferences": (list, dict, "[]v1.OwnerReference"),
               "managedFields": (list, dict, "[]v1.ManagedFieldsEntry")}


def go_type(value) -> str:
    """encoding/json's name for a JSON value's type in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), "object")


def unmarshal_error(got, field: str, go: str) -> str:
    return f"json: cannot unmarshal {go_type(got)} into Go struct field {field} of type {go}"


def meta_type_error(kind: str, body: dict) -> str | None:
    """The decode error of metadata that is not an object, or an ObjectMeta field of the wrong JSON type."""
    meta = body.get("metadata")
    if meta is None:
        return None
    if not isinstance(meta, dict):
        return unmarshal_error(meta, f"{kind}.metadata", "v1.ObjectMeta")
    for field in STRING_FIELDS:
        if meta.get(field) is not None and not isinstance(meta[field], str):
            return unmarshal_error(meta[field], f"ObjectMeta.metadata.{field}", "string")
    for field, (shape, element, go) in COLLECTIONS.items():
        value = meta.get(field)
        if value is None:
            continue
        elements = list(value.values() if isinstance(value, dict) else value) if isinstance(value, shape) else []
        wrong = value if not isinstance(value, shape) else next((e for e in elements if not isinstance(e, element)),
                                                                None)
        if wrong is not None:
            return unmarshal_error(wrong, f"ObjectMeta.metadata.{field}", go)
    return None


def cannot_be_handled(kind: str, api_version: str, error: str) -> str:
    """A create's or replace's 400 for a body that does not decode (transformDecodeError)."""
    return f'{kind} in version "{api_version.rpartition("/")[2]}" cannot be handled as a {kind}: {error}'
