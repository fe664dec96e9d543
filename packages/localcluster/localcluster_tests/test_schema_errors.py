"""localcluster.validation.schema: the apiserver's error texts and reasons, and admit's Status body."""

from __future__ import annotations

import copy

from localcluster.validation.schema import (
    DUPLICATE,
    FORBIDDEN,
    INVALID,
    NOT_SUPPORTED,
    REQUIRED,
    TOO_MANY,
    FieldError,
    admit,
    invalid_status,
    validate,
)

from .schema_support import GENERIC_JOB, check, resource, spec_of

# --- the apiserver's texts --------------------------------------------------------------------


def test_minimum_error_text():
    assert check(GENERIC_JOB, {"replicas": -1, "replicaSpecs": []}) == [
        "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
    ]


def test_enum_error_text():
    spec = {"replicaSpecs": [{"restartPolicy": {"policy": "Sometimes"}}]}
    assert check(GENERIC_JOB, spec) == [
        'spec.replicaSpecs[0].restartPolicy.policy: Unsupported value: "Sometimes": '
        'supported values: "Never", "OnFailure", "Always"'
    ]


def test_required_error_text():
    assert check(GENERIC_JOB, {}) == ["spec.replicaSpecs: Required value"]


def test_type_error_text():
    assert check(GENERIC_JOB, {"replicaSpecs": [{"replicas": "string"}]}) == [
        'spec.replicaSpecs[0].replicas: Invalid value: "string": '
        'spec.replicaSpecs[0].replicas in body must be of type integer: "string"'
    ]


def test_max_length_error_text():
    assert check(GENERIC_JOB, {"name": "n" * 64, "replicaSpecs": []}) == [
        "spec.name: Too long: may not be more than 63 bytes"
    ]


def test_cel_immutable_error_text():
    schema = spec_of(runMode={
        "type": "object",
        "properties": {"pause": {"type": "object", "properties": {"resumeSpecs": {
            "type": "array",
            "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "resumeSpecs is immutable"}],
        }}}},
    })
    spec = {"runMode": {"pause": {"resumeSpecs": ["a", "b"]}}}
    old = {"runMode": {"pause": {"resumeSpecs": ["a"]}}}
    assert check(schema, spec, old_spec=old) == [
        'spec.runMode.pause.resumeSpecs: Invalid value: resumeSpecs is immutable'
    ]


def test_error_reasons_and_bodies():
    errors = validate(resource({"replicas": -1}), GENERIC_JOB)
    assert [(e.reason, e.field) for e in errors] == [(INVALID, "spec.replicas"), (REQUIRED, "spec.replicaSpecs")]
    assert errors[0].bad_value == -1
    assert errors[1].error_body() == "Required value"


def test_bad_values_render_as_go_prints_them():
    assert FieldError(INVALID, "f", "d", 1.5).error_string() == "f: Invalid value: 1.5: d"
    assert FieldError(INVALID, "f", "d", 1e6).error_string() == "f: Invalid value: 1e+06: d"
    assert FieldError(INVALID, "f", "d", True).error_string() == "f: Invalid value: true: d"
    assert FieldError(INVALID, "f", "d", 'say "hi"\n').error_string() == 'f: Invalid value: "say \\"hi\\"\\n": d'
    assert FieldError(INVALID, "f", "d", None).error_string() == "f: Invalid value: null: d"
    assert FieldError(DUPLICATE, "f", "", {"b": 1.0, "a": "<x>"}).error_string() == (
        'f: Duplicate value: {"a":"\\u003cx\\u003e","b":1}'
    )
    assert FieldError(FORBIDDEN, "f", "no").error_string() == "f: Forbidden: no"
    assert FieldError(TOO_MANY, "f", "must have at most 2 items", 3).error_string() == (
        "f: Too many: 3: must have at most 2 items"
    )


# --- admit and the Status body --------------------------------------------------------------------


def test_admit_prunes_defaults_then_validates_a_crd_shaped_object():
    schema = copy.deepcopy(GENERIC_JOB)
    schema["properties"]["status"] = {"type": "object", "properties": {"phase": {"type": "string"}}}
    obj = resource({"replicaSpecs": [{"restartPolicy": {"policy": "Never"}}], "unknown": 1},
                   status={"phase": "Running", "extra": 1})
    assert admit(obj, schema) == []
    assert obj["spec"] == {"replicaSpecs": [{"replicas": 1, "restartPolicy": {"policy": "Never"}}]}
    assert obj["status"] == {"phase": "Running"}


def test_invalid_status_with_one_error():
    errors = validate(resource({"replicaSpecs": [], "replicas": -1}), GENERIC_JOB)
    assert invalid_status("GenericJob", "batch.tensorstack.dev", "job", errors) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'GenericJob.batch.tensorstack.dev "job" is invalid: spec.replicas: Invalid value: -1: '
                   "spec.replicas in body should be greater than or equal to 0",
        "reason": "Invalid",
        "details": {
            "name": "job",
            "group": "batch.tensorstack.dev",
            "kind": "GenericJob",
            "causes": [{
                "reason": "FieldValueInvalid",
                "message": "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
                "field": "spec.replicas",
            }],
        },
        "code": 422,
    }


def test_invalid_status_aggregates_several_errors_without_repeats():
    errors = [
        FieldError(REQUIRED, "spec.a"),
        FieldError(NOT_SUPPORTED, "spec.b", 'supported values: "x"', "y"),
        FieldError(REQUIRED, "spec.a"),
    ]
    status = invalid_status("ConfigMap", "", "cm", errors)
    assert status["message"] == (
        'ConfigMap "cm" is invalid: [spec.a: Required value, spec.b: Unsupported value: "y": supported values: "x"]'
    )
    assert status["details"] == {"name": "cm", "kind": "ConfigMap", "causes": [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.a"},
        {"reason": "FieldValueNotSupported", "message": 'Unsupported value: "y": supported values: "x"',
         "field": "spec.b"},
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.a"},
    ]}
