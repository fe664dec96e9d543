"""What a typed decoder refuses before any validation: an object's metadata that is not an ObjectMeta.

kube-apiserver decodes a built-in kind's body into its Go struct, so `"metadata": true` or a number for
`metadata.name` never reaches validation: the decode fails with a 400 in encoding/json's words,
`ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal bool into Go struct
field ConfigMap.metadata of type v1.ObjectMeta`. Without this check such a body reached code that
assumes a dict or a string and answered 500 (found by tests/localcluster/test_fuzz_decoding.py).
"""

from __future__ import annotations

from .. import errors

# ObjectMeta's string fields a write reads before validation.
STRING_FIELDS = ("name", "generateName", "namespace", "resourceVersion", "uid")


def go_type(value) -> str:
    """encoding/json's name for a JSON value's type in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "object")


def check_object_meta(kind: str, api_version: str, body: dict) -> None:
    """400 for metadata that is not an object, or an ObjectMeta string field that is not a string."""
    version = api_version.rpartition("/")[2]
    meta = body.get("metadata")

    def refuse(got, field: str, go: str) -> errors.ApiError:
        return errors.bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: json: cannot '
                                  f"unmarshal {go_type(got)} into Go struct field {field} of type {go}")

    if meta is None:
        return
    if not isinstance(meta, dict):
        raise refuse(meta, f"{kind}.metadata", "v1.ObjectMeta")
    for field in STRING_FIELDS:
        if meta.get(field) is not None and not isinstance(meta[field], str):
            raise refuse(meta[field], f"ObjectMeta.metadata.{field}", "string")
