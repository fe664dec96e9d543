"""Helpers for the custom resource schema tests: CRD-shaped schemas, resources, and the error texts."""

from __future__ import annotations

from localcluster.validation.schema import (
    FieldError,
    validate,
)


def crd_schema(spec: dict, status: dict | None = None) -> dict:
    """An openAPIV3Schema shaped like a CRD version's root."""
    properties = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": spec,
    }
    if status is not None:
        properties["status"] = status
    return {"type": "object", "properties": properties}


def spec_of(**properties: dict) -> dict:
    return crd_schema({"type": "object", "properties": properties})


def resource(spec: dict | None = None, **fields) -> dict:
    obj = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "thing"}, **fields}
    if spec is not None:
        obj["spec"] = spec
    return obj


def texts(errors: list[FieldError]) -> list[str]:
    return [error.error_string() for error in errors]


def check(schema: dict, spec: dict, old_spec: dict | None = None) -> list[str]:
    old = resource(old_spec) if old_spec is not None else None
    return texts(validate(resource(spec), schema, old=old))


GENERIC_JOB = crd_schema({
    "type": "object",
    "required": ["replicaSpecs"],
    "properties": {
        "replicas": {"type": "integer", "minimum": 0},
        "name": {"type": "string", "maxLength": 63},
        "replicaSpecs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "replicas": {"type": "integer", "default": 1},
                    "restartPolicy": {
                        "type": "object",
                        "properties": {"policy": {"type": "string", "enum": ["Never", "OnFailure", "Always"]}},
                    },
                },
            },
        },
    },
})
