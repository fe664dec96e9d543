"""localcluster.validation.schema: validating types, objects, scalars, arrays, compositions, metadata.name."""

from __future__ import annotations

from localcluster.validation.schema import (
    DUPLICATE,
    TOO_LONG,
    TYPE_INVALID,
    validate,
)

from .schema_support import check, resource, spec_of, texts

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
