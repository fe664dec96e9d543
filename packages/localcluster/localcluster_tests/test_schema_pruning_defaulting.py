"""localcluster.validation.schema: pruning, defaulting, and the structural schema check."""

from __future__ import annotations

from localcluster.validation.schema import (
    apply_defaults,
    is_structural,
    prune,
)

from .schema_support import GENERIC_JOB, resource, spec_of

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
