"""localcluster.validation.schema: x-kubernetes-validations CEL rules, their messages, paths and transitions."""

from __future__ import annotations

from localcluster.validation.schema import (
    FORBIDDEN,
    REQUIRED,
    validate,
)

from .schema_support import check, crd_schema, resource, spec_of, texts

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
        'spec: Invalid value: failed rule: self.min > 0',
        'spec: Invalid value: max is 100',
    ]
    assert check(schema, {"min": 5, "max": 2}) == ['spec: Invalid value: min must not exceed max']


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
        'spec.limits[cpu]: Invalid value: failed rule: self >= 0'
    ]
    obj = resource({})
    obj["metadata"]["name"] = "forbidden"
    assert texts(validate(obj, schema)) == ['<nil>: Invalid value: bad name']


def test_transition_rule_is_skipped_on_create_and_checked_on_update():
    schema = rule_schema(
        name={"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "is immutable"}]},
        size={"type": "integer"},
    )
    assert check(schema, {"name": "a"}) == []
    assert check(schema, {"name": "a", "size": 2}, old_spec={"name": "a", "size": 1}) == []
    assert check(schema, {"name": "b"}, old_spec={"name": "a"}) == ['spec.name: Invalid value: is immutable']
    assert check(schema, {"name": "b"}, old_spec={}) == []  # no old value at that path


def test_transition_rules_run_inside_unchanged_subtrees():
    schema = rule_schema(
        count={"type": "integer", "x-kubernetes-validations": [{"rule": "self > oldSelf", "message": "must grow"}]},
        note={"type": "string"},
    )
    assert check(schema, {"count": 1, "note": "b"}, old_spec={"count": 1, "note": "a"}) == [
        'spec.count: Invalid value: must grow'
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
        'spec.ports[1].port: Invalid value: is fixed'
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
