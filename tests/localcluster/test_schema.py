"""localcluster.validation.schema: pruning, defaulting and validation of custom resources, with the
apiserver's texts."""

from __future__ import annotations

import copy

from localcluster.validation.schema import (
    DUPLICATE,
    FORBIDDEN,
    INVALID,
    NOT_SUPPORTED,
    REQUIRED,
    TOO_LONG,
    TOO_MANY,
    TYPE_INVALID,
    FieldError,
    admit,
    apply_defaults,
    invalid_status,
    is_structural,
    prune,
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


# --- the apiserver's texts --------------------------------------------------------------------

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
        'spec.runMode.pause.resumeSpecs: Invalid value: "array": resumeSpecs is immutable'
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


# --- types ----------------------------------------------------------------------------------------


def test_each_type_accepts_its_values_only():
    schema = spec_of(
        o={"type": "object"}, a={"type": "array"}, s={"type": "string"},
        i={"type": "integer"}, n={"type": "number"}, b={"type": "boolean"},
    )
    good = {"o": {}, "a": [], "s": "x", "i": 3, "n": 2.5, "b": False}
    assert check(schema, good) == []
    bad = {"o": [], "a": {}, "s": 1, "i": True, "n": "1", "b": 0}
    assert check(schema, bad) == [
        'spec.o: Invalid value: "array": spec.o in body must be of type object: "array"',
        'spec.a: Invalid value: "object": spec.a in body must be of type array: "object"',
        'spec.s: Invalid value: "integer": spec.s in body must be of type string: "integer"',
        'spec.i: Invalid value: "boolean": spec.i in body must be of type integer: "boolean"',
        'spec.n: Invalid value: "string": spec.n in body must be of type number: "string"',
        'spec.b: Invalid value: "integer": spec.b in body must be of type boolean: "integer"',
    ]
    assert all(e.reason == TYPE_INVALID for e in validate(resource(bad), schema))


def test_integer_takes_whole_numbers_and_number_takes_integers():
    schema = spec_of(i={"type": "integer"}, n={"type": "number"})
    assert check(schema, {"i": 2.0, "n": 2}) == []
    assert check(schema, {"i": 2.5}) == [
        'spec.i: Invalid value: "number": spec.i in body must be of type integer: "number"'
    ]


def test_nullable():
    schema = spec_of(
        maybe={"type": "string", "nullable": True},
        names={"type": "array", "items": {"type": "string"}},
    )
    assert check(schema, {"maybe": None}) == []
    assert check(schema, {"names": ["a", None]}) == [
        'spec.names[1]: Invalid value: "null": spec.names[1] in body must be of type string: "null"'
    ]


def test_int_or_string():
    schema = spec_of(port={"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]})
    assert check(schema, {"port": 8080}) == []
    assert check(schema, {"port": "http"}) == []
    assert check(schema, {"port": 1.5})[0] == (
        'spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"'
    )


def test_preserve_unknown_fields_accepts_anything_without_a_type():
    schema = spec_of(anything={"x-kubernetes-preserve-unknown-fields": True})
    for value in ({"a": [1, {"b": None}]}, [1], "s", 3, None):
        assert check(schema, {"anything": value}) == []


# --- objects --------------------------------------------------------------------------------------


def test_additional_properties_schema_and_map_key_paths():
    schema = spec_of(labels={"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}})
    assert check(schema, {"labels": {"ok": "abc", "app": "long"}}) == [
        "spec.labels.app: Too long: may not be more than 3 bytes"
    ]


def test_additional_properties_false_forbids_unknown_fields():
    schema = spec_of(strict={"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False})
    assert check(schema, {"strict": {"a": "x", "b": "y"}}) == [
        'spec.strict: Invalid value: "b": spec.strict.b in body is a forbidden property'
    ]


def test_required_properties():
    schema = spec_of(inner={"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "string"}}})
    assert check(schema, {"inner": {"a": None}}) == [
        'spec.inner.a: Invalid value: "null": spec.inner.a in body must be of type string: "null"',
        "spec.inner.b: Required value",
    ]


def test_property_counts():
    schema = spec_of(m={"type": "object", "minProperties": 1, "maxProperties": 2,
                        "additionalProperties": {"type": "string"}})
    assert check(schema, {"m": {}}) == ["spec.m: Invalid value: 0: spec.m in body should have at least 1 properties"]
    assert check(schema, {"m": {"a": "1", "b": "2", "c": "3"}}) == ["spec.m: Too many: 3: must have at most 2 items"]


# --- scalars --------------------------------------------------------------------------------------


def test_enum_of_numbers_and_null():
    schema = spec_of(n={"type": "integer", "enum": [1, 2]}, s={"type": "string", "nullable": True, "enum": ["a"]})
    assert check(schema, {"n": 2, "s": "a"}) == []
    assert check(schema, {"n": 3}) == ['spec.n: Unsupported value: 3: supported values: "1", "2"']
    assert check(schema, {"s": None}) == ['spec.s: Unsupported value: null: supported values: "a"']


def test_bounds():
    schema = spec_of(
        low={"type": "integer", "minimum": 1, "exclusiveMinimum": True},
        high={"type": "number", "maximum": 10},
        top={"type": "integer", "maximum": 5, "exclusiveMaximum": True},
    )
    assert check(schema, {"low": 2, "high": 10, "top": 4}) == []
    assert check(schema, {"low": 1, "high": 10.5, "top": 5}) == [
        "spec.low: Invalid value: 1: spec.low in body should be greater than 1",
        "spec.high: Invalid value: 10.5: spec.high in body should be less than or equal to 10",
        "spec.top: Invalid value: 5: spec.top in body should be less than 5",
    ]


def test_multiple_of():
    schema = spec_of(even={"type": "integer", "multipleOf": 2}, half={"type": "number", "multipleOf": 0.5})
    assert check(schema, {"even": 4, "half": 1.5}) == []
    assert check(schema, {"even": 3, "half": 1.2}) == [
        "spec.even: Invalid value: 3: spec.even in body should be a multiple of 2",
        "spec.half: Invalid value: 1.2: spec.half in body should be a multiple of 0.5",
    ]


def test_string_limits_report_the_first_failure_only():
    schema = spec_of(code={"type": "string", "minLength": 3, "maxLength": 5, "pattern": "^[a-z]+$"})
    assert check(schema, {"code": "abcd"}) == []
    assert check(schema, {"code": "ab"}) == [
        'spec.code: Invalid value: "ab": spec.code in body should be at least 3 chars long'
    ]
    assert check(schema, {"code": "ABCD"}) == [
        "spec.code: Invalid value: \"ABCD\": spec.code in body should match '^[a-z]+$'"
    ]
    assert check(schema, {"code": "ABCDEFG"}) == ["spec.code: Too long: may not be more than 5 bytes"]
    assert validate(resource({"code": "ABCDEFG"}), schema)[0].reason == TOO_LONG


def test_formats():
    schema = spec_of(
        at={"type": "string", "format": "date-time"},
        day={"type": "string", "format": "date"},
        id={"type": "string", "format": "uuid"},
        ip={"type": "string", "format": "ipv4"},
        small={"type": "integer", "format": "int32"},
        big={"type": "integer", "format": "int64"},
        other={"type": "string", "format": "no-such-format"},
    )
    good = {"at": "2024-02-29T12:30:00.5Z", "day": "2024-02-29", "id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
            "ip": "10.0.0.1", "small": 2**40, "big": 2**62, "other": "anything"}
    # the apiserver strips integer formats from CRD schemas, so int32 does not bound the value
    assert check(schema, good) == []
    assert check(schema, {"at": "2024-02-30T12:00:00Z", "day": "yesterday", "id": "x", "ip": "300.0.0.1"}) == [
        'spec.at: Invalid value: "2024-02-30T12:00:00Z": spec.at in body must be of type date-time: '
        '"2024-02-30T12:00:00Z"',
        'spec.day: Invalid value: "yesterday": spec.day in body must be of type date: "yesterday"',
        'spec.id: Invalid value: "x": spec.id in body must be of type uuid: "x"',
        'spec.ip: Invalid value: "300.0.0.1": spec.ip in body must be of type ipv4: "300.0.0.1"',
    ]


# --- arrays ---------------------------------------------------------------------------------------


def test_item_counts_and_uniqueness():
    schema = spec_of(tags={"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2,
                           "uniqueItems": True})
    assert check(schema, {"tags": ["a", "b"]}) == []
    assert check(schema, {"tags": []}) == [
        "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"
    ]
    assert check(schema, {"tags": ["a", "b", "c"]}) == ["spec.tags: Too many: 3: must have at most 2 items"]
    assert check(schema, {"tags": ["a", "a"]}) == [
        "spec.tags: Invalid value: \"\": spec.tags in body shouldn't contain duplicates"
    ]


def test_list_type_set_reports_each_duplicate_once():
    schema = spec_of(ids={"type": "array", "items": {"type": "integer"}, "x-kubernetes-list-type": "set"})
    assert check(schema, {"ids": [1, 2, 1, 1, 2]}) == [
        "spec.ids[2]: Duplicate value: 1",
        "spec.ids[4]: Duplicate value: 2",
    ]
    assert validate(resource({"ids": [1, 1]}), schema)[0].reason == DUPLICATE


def test_list_type_map_duplicates_by_keys():
    item = {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}
    schema = spec_of(ports={"type": "array", "items": item, "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name", "port"]})
    ports = [{"name": "http", "port": 80}, {"name": "http", "port": 81}, {"name": "http", "port": 80}]
    assert check(schema, {"ports": ports}) == ['spec.ports[2]: Duplicate value: {"name":"http","port":80}']
    assert check(schema, {"ports": [{"name": "a"}, "x"]}) == [
        'spec.ports[1]: Invalid value: "string": spec.ports[1] in body must be of type object: "string"',
        'spec.ports[1]: Invalid value: "x": must be an object for an array of list-type map',
    ]


# --- compositions ---------------------------------------------------------------------------------


def test_one_of_and_any_of_as_value_validations():
    schema = spec_of(source={
        "type": "object",
        "properties": {"url": {"type": "string"}, "path": {"type": "string"}},
        "oneOf": [{"required": ["url"]}, {"required": ["path"]}],
        "anyOf": [{"properties": {"url": {"pattern": "^https://"}}}, {"required": ["path"]}],
    })
    assert check(schema, {"source": {"path": "/x"}}) == []
    assert check(schema, {"source": {"url": "https://x", "path": "/x"}}) == [
        '<nil>: Invalid value: "": "spec.source" must validate one and only one schema (oneOf). '
        "Found 2 valid alternatives"
    ]
    assert check(schema, {"source": {"url": "http://x"}}) == [
        '<nil>: Invalid value: "": "spec.source" must validate at least one schema (anyOf)',
        "spec.source.url: Invalid value: \"http://x\": spec.source.url in body should match '^https://'",
    ]
    assert check(schema, {"source": {}}) == [
        '<nil>: Invalid value: "": "spec.source" must validate one and only one schema (oneOf). Found none valid',
        "spec.source.url: Required value",
    ]


def test_all_of_and_not():
    schema = spec_of(size={"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 9}], "not": {"enum": [5]}})
    assert check(schema, {"size": 3}) == []
    assert check(schema, {"size": 0}) == [
        "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
        '<nil>: Invalid value: "": "spec.size" must validate all the schemas (allOf)',
    ]
    assert check(schema, {"size": 5}) == ['<nil>: Invalid value: "": "spec.size" must not validate the schema (not)']


# --- CEL rules ------------------------------------------------------------------------------------


def rule_schema(*rules: dict, **properties: dict) -> dict:
    return crd_schema({"type": "object", "properties": properties, "x-kubernetes-validations": list(rules)})


def test_rule_message_default_and_message_expression():
    schema = rule_schema(
        {"rule": "self.min <= self.max", "message": "min must not exceed max"},
        {"rule": " self.min > 0 "},
        {"rule": "self.max < 100", "messageExpression": "'max is ' + string(self.max)"},
        min={"type": "integer"}, max={"type": "integer"},
    )
    assert check(schema, {"min": 1, "max": 2}) == []
    assert check(schema, {"min": 0, "max": 100}) == [
        'spec: Invalid value: "object": failed rule: self.min > 0',
        'spec: Invalid value: "object": max is 100',
    ]
    assert check(schema, {"min": 5, "max": 2}) == ['spec: Invalid value: "object": min must not exceed max']


def test_rule_field_path_and_reasons():
    schema = rule_schema(
        {"rule": "has(self.name)", "message": "name is needed", "fieldPath": ".name", "reason": "FieldValueRequired"},
        {"rule": "self.mode != 'root'", "message": "root mode", "reason": "FieldValueForbidden"},
        {"rule": "self.mode != 'twin'", "reason": "FieldValueDuplicate"},
        name={"type": "string"}, mode={"type": "string"},
    )
    errors = validate(resource({"mode": "root"}), schema)
    assert texts(errors) == ["spec.name: Required value: name is needed", "spec: Forbidden: root mode"]
    assert [e.reason for e in errors] == [REQUIRED, FORBIDDEN]
    assert check(schema, {"name": "n", "mode": "twin"}) == ['spec: Duplicate value: "object"']


def test_rules_on_map_values_use_bracketed_keys_and_root_rules_print_nil():
    schema = crd_schema(
        {"type": "object", "properties": {"limits": {
            "type": "object",
            "additionalProperties": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]},
        }}},
    )
    schema["x-kubernetes-validations"] = [{"rule": "self.metadata.name != 'forbidden'", "message": "bad name"}]
    assert check(schema, {"limits": {"cpu": -1}}) == [
        'spec.limits[cpu]: Invalid value: "integer": failed rule: self >= 0'
    ]
    obj = resource({})
    obj["metadata"]["name"] = "forbidden"
    assert texts(validate(obj, schema)) == ['<nil>: Invalid value: "object": bad name']


def test_transition_rule_is_skipped_on_create_and_checked_on_update():
    schema = rule_schema(
        name={"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "is immutable"}]},
        size={"type": "integer"},
    )
    assert check(schema, {"name": "a"}) == []
    assert check(schema, {"name": "a", "size": 2}, old_spec={"name": "a", "size": 1}) == []
    assert check(schema, {"name": "b"}, old_spec={"name": "a"}) == ['spec.name: Invalid value: "string": is immutable']
    assert check(schema, {"name": "b"}, old_spec={}) == []  # no old value at that path


def test_transition_rules_run_inside_unchanged_subtrees():
    schema = rule_schema(
        count={"type": "integer", "x-kubernetes-validations": [{"rule": "self > oldSelf", "message": "must grow"}]},
        note={"type": "string"},
    )
    assert check(schema, {"count": 1, "note": "b"}, old_spec={"count": 1, "note": "a"}) == [
        'spec.count: Invalid value: "integer": must grow'
    ]


def test_transition_rules_follow_list_map_items_by_key():
    item = {"type": "object", "properties": {
        "name": {"type": "string"},
        "port": {"type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "is fixed"}]},
    }}
    schema = spec_of(ports={"type": "array", "items": item, "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"]})
    old = {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}
    assert check(schema, {"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}]}, old_spec=old) == []
    assert check(schema, {"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 3}]}, old_spec=old) == [
        'spec.ports[1].port: Invalid value: "integer": is fixed'
    ]


def test_rule_runtime_error():
    schema = rule_schema({"rule": "self.missing == 1"}, present={"type": "integer"})
    assert check(schema, {"present": 1}) == [
        'spec: Invalid value: "object": no such key: missing evaluating rule: self.missing == 1'
    ]


def test_rules_are_not_run_on_an_object_with_blocking_errors():
    schema = rule_schema({"rule": "self.size > 1"}, size={"type": "integer"})
    assert check(schema, {"size": "big"}) == [
        'spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"',
        "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation",
    ]


# --- metadata.name --------------------------------------------------------------------------------


def test_metadata_name():
    schema = spec_of()
    assert texts(validate({"metadata": {}}, schema)) == [
        "metadata.name: Required value: name or generateName is required"
    ]
    assert validate({"metadata": {"generateName": "job-"}}, schema) == []
    assert texts(validate({"metadata": {"name": "Bad_Name"}}, schema)) == [
        'metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    ]
    long_name = "a" * 254
    assert texts(validate({"metadata": {"name": long_name}}, schema)) == [
        f'metadata.name: Invalid value: "{long_name}": must be no more than 253 characters'
    ]


# --- ratcheting -----------------------------------------------------------------------------------


def test_unchanged_invalid_fields_pass_an_update():
    schema = spec_of(size={"type": "integer", "maximum": 3}, note={"type": "string"})
    assert check(schema, {"size": 5, "note": "b"}, old_spec={"size": 5, "note": "a"}) == []
    assert check(schema, {"size": 6}, old_spec={"size": 5}) == [
        "spec.size: Invalid value: 6: spec.size in body should be less than or equal to 3"
    ]


# --- pruning --------------------------------------------------------------------------------------


def test_prune_drops_undeclared_fields_but_keeps_the_resource_envelope():
    schema = spec_of(size={"type": "integer"})
    obj = resource({"size": 1, "extra": True}, junk=1)
    obj["metadata"]["labels"] = {"a": "b"}
    prune(obj, schema)
    assert obj == {"apiVersion": "example.com/v1", "kind": "Thing",
                   "metadata": {"name": "thing", "labels": {"a": "b"}}, "spec": {"size": 1}}


def test_prune_keeps_preserved_subtrees_and_still_prunes_their_known_fields():
    schema = spec_of(
        raw={"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        mixed={"type": "object", "x-kubernetes-preserve-unknown-fields": True,
               "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
    )
    obj = resource({"raw": {"x": {"y": [1]}}, "mixed": {"free": 1, "known": {"a": "s", "b": "t"}}})
    prune(obj, schema)
    assert obj["spec"] == {"raw": {"x": {"y": [1]}}, "mixed": {"free": 1, "known": {"a": "s"}}}


def test_prune_follows_additional_properties_and_items():
    schema = spec_of(
        byName={"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}},
        anyMap={"type": "object", "additionalProperties": True},
        list={"type": "array", "items": {"type": "object", "properties": {"v": {"type": "string"}}}},
    )
    obj = resource({"byName": {"k": {"v": "1", "w": "2"}}, "anyMap": {"k": {"deep": 1}},
                    "list": [{"v": "1", "w": "2"}]})
    prune(obj, schema)
    assert obj["spec"] == {"byName": {"k": {"v": "1"}}, "anyMap": {"k": {"deep": 1}}, "list": [{"v": "1"}]}


def test_prune_keeps_envelope_of_embedded_resources():
    schema = spec_of(template={"type": "object", "x-kubernetes-embedded-resource": True,
                               "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}})
    embedded = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "anything": 1},
                "spec": {"a": "x", "b": "y"}, "status": {}}
    obj = resource({"template": embedded})
    prune(obj, schema)
    assert obj["spec"]["template"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "anything": 1},
                                       "spec": {"a": "x"}}


def test_prune_drops_nulls_that_are_neither_nullable_nor_defaulted():
    schema = spec_of(a={"type": "string"}, b={"type": "string", "nullable": True}, c={"type": "string", "default": "x"})
    obj = resource({"a": None, "b": None, "c": None})
    prune(obj, schema)
    assert obj["spec"] == {"b": None, "c": None}


# --- defaulting -----------------------------------------------------------------------------------


def test_defaults_fill_absent_fields_recursively_and_into_defaults():
    schema = spec_of(
        replicas={"type": "integer", "default": 1},
        policy={"type": "object", "default": {},
                "properties": {"mode": {"type": "string", "default": "Never"}, "limit": {"type": "integer"}}},
        workers={"type": "array", "items": {"type": "object", "properties": {
            "image": {"type": "string", "default": "busybox"}}}},
        given={"type": "integer", "default": 5},
    )
    obj = resource({"workers": [{}, {"image": "alpine"}], "given": 7})
    apply_defaults(obj, schema)
    assert obj["spec"] == {"replicas": 1, "policy": {"mode": "Never"}, "given": 7,
                           "workers": [{"image": "busybox"}, {"image": "alpine"}]}


def test_defaults_replace_non_nullable_nulls_and_are_not_shared():
    schema = spec_of(
        opts={"type": "object", "default": {"a": [1]},
              "properties": {"a": {"type": "array", "items": {"type": "integer"}}}},
        keep={"type": "string", "nullable": True, "default": "x"},
        byName={"type": "object", "additionalProperties": {"type": "string", "default": "v"}},
        list={"type": "array", "items": {"type": "string", "default": "d"}},
    )
    first = resource({"opts": None, "keep": None, "byName": {"k": None}, "list": [None, "s"]})
    second = resource({})
    apply_defaults(first, schema)
    apply_defaults(second, schema)
    assert first["spec"] == {"opts": {"a": [1]}, "keep": None, "byName": {"k": "v"}, "list": ["d", "s"]}
    first["spec"]["opts"]["a"].append(2)
    assert second["spec"]["opts"] == {"a": [1]}


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


# --- structural check -----------------------------------------------------------------------------


def test_is_structural():
    assert is_structural(GENERIC_JOB) == []
    assert is_structural({"type": "object", "properties": {
        "spec": {"properties": {"port": {"x-kubernetes-int-or-string": True}, "free": {
            "x-kubernetes-preserve-unknown-fields": True}}},
        "list": {"type": "array"},
        "keyed": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "map"},
        "ruled": {"type": "string", "x-kubernetes-validations": [{"rule": "self =="}]},
    }}) == [
        "properties[spec].type: Required value: must not be empty for specified object fields",
        "properties[list].items: Required value: must be specified",
        "properties[keyed].x-kubernetes-list-map-keys: Required value: "
        "must not be empty if x-kubernetes-list-type is map",
        'properties[ruled].x-kubernetes-validations[0].rule: Invalid value: "self ==": compilation failed: '
        "self == ^",
    ]
    assert is_structural({}) == ["type: Required value: must not be empty at the root"]
