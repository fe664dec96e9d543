"""Custom resources against their CRD schema, as kube-apiserver's apiextensions handles them.

For every write of a custom object the server calls ``admit(obj, schema, old)``: unknown fields
are pruned, structural defaults applied, then the object is validated against the CRD's
``openAPIV3Schema``, its ``x-kubernetes-list-type`` invariants and its ``x-kubernetes-validations``
CEL rules. Errors carry the paths, reasons and texts of the real server (apimachinery's
``field.Error``, kube-openapi's validator, apiextensions-apiserver's CEL validator), so a client
sees the same 422 body as from a real cluster.

A schema is compiled once into a tree of ``_Node`` (cached by identity) with its regexes and CEL
programs; objects are walked in place and never deep-copied.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import ipaddress
import json
import math
import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import celpy
from celpy import celtypes

from . import cel_lists
from .builtins import ANNOTATIONS_LIMIT, annotations_too_long

# CauseType values of k8s.io/apimachinery/pkg/apis/meta/v1 (= field.ErrorType) that this module emits.
REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
TYPE_INVALID = "FieldValueTypeInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
DUPLICATE = "FieldValueDuplicate"
FORBIDDEN = "FieldValueForbidden"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"

_LABELS = {
    REQUIRED: "Required value",
    INVALID: "Invalid value",
    TYPE_INVALID: "Invalid value",
    NOT_SUPPORTED: "Unsupported value",
    DUPLICATE: "Duplicate value",
    FORBIDDEN: "Forbidden",
    TOO_LONG: "Too long",
    TOO_MANY: "Too many",
}
_LABEL_ONLY = frozenset({REQUIRED, FORBIDDEN, TOO_LONG})  # field.Error prints no bad value for these

# Schema errors after which the server does not run CEL rules (strategy.go hasBlockingErr).
_BLOCKING = frozenset({NOT_SUPPORTED, REQUIRED, TOO_LONG, TOO_MANY, TYPE_INVALID})
_RULES_SKIPPED = ("some validation rules were not checked because the object was invalid; "
                  "correct the existing errors to complete validation")

_RESOURCE_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
_ABSENT: Any = object()  # no value here (no old object, no default): unlike None, which is JSON null


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation error, as k8s.io/apimachinery/pkg/util/validation/field.Error."""

    reason: str
    field: str
    detail: str = ""
    bad_value: Any = None

    def error_body(self) -> str:
        """The text without the field (field.Error.ErrorBody()): a StatusCause's message."""
        body = _LABELS[self.reason]
        if self.reason not in _LABEL_ONLY:
            body = f"{body}: {_go_value(self.bad_value)}"
        return f"{body}: {self.detail}" if self.detail else body

    def error_string(self) -> str:
        """The full text (field.Error.Error()), e.g. ``spec.replicaSpecs: Required value``."""
        return f"{self.field}: {self.error_body()}"


def invalid_status(kind: str, group: str, name: str, errors: list[FieldError]) -> dict:
    """The metav1.Status of a 422, as apierrors.NewInvalid builds it (core kinds have group "")."""
    qualified = f"{kind}.{group}" if group else kind
    details = {"name": name, "group": group, "kind": kind, "causes": [_cause(e) for e in errors]}
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"{qualified} {_go_quote(name)} is invalid: {_aggregate(errors)}",
        "reason": "Invalid",
        "details": {key: value for key, value in details.items() if value},  # Go's omitempty
        "code": 422,
    }


def _cause(error: FieldError) -> dict:
    cause = {"reason": error.reason, "message": error.error_body(), "field": error.field}
    return {key: value for key, value in cause.items() if value}


def _aggregate(errors: list[FieldError]) -> str:
    """ErrorList.ToAggregate().Error(): repeated texts dropped, several texts in brackets."""
    texts = list(dict.fromkeys(error.error_string() for error in errors))
    if not texts:
        return "<nil>"
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


# --- the public operations --------------------------------------------------------------------


def admit(obj: dict, schema: dict, old: dict | None = None, unknown: list[str] | None = None) -> list[FieldError]:
    """Prunes and defaults ``obj`` in place, then validates it (``old`` is the stored object on update).

    The paths of pruned unknown fields are appended to ``unknown`` (for fieldValidation=Strict/Warn).
    """
    dropped = prune(obj, schema)
    if unknown is not None:
        unknown.extend(dropped)
    apply_defaults(obj, schema)
    return validate(obj, schema, old=old)


def prune(obj: dict, schema: dict) -> list[str]:
    """Drops fields the schema does not declare, as the apiserver does when decoding a write.

    ``x-kubernetes-preserve-unknown-fields`` and ``additionalProperties`` keep unknown fields;
    apiVersion, kind and metadata are kept whole at the root and in embedded resources. Like the
    server (PruneNonNullableNullsWithoutDefaults), nulls of non-nullable fields without a default
    are dropped too.
    """
    dropped: list[str] = []
    _prune_object(obj, _compiled(schema), _RESOURCE_FIELDS, "", dropped)
    return dropped


def apply_defaults(obj: dict, schema: dict) -> None:
    """Fills in ``default`` values of absent fields, and of nulls where null is not allowed."""
    node = _compiled(schema)
    if node.has_defaults:
        _default(obj, node)


def validate(obj: dict, schema: dict, old: dict | None = None) -> list[FieldError]:
    """The errors of ``obj`` in the server's order: metadata.name, schema, list types, CEL rules.

    On update, subtrees equal to the old object's are not reported (CRD validation ratcheting,
    on by default since Kubernetes 1.30), except for transition rules, which read ``oldSelf``.
    """
    node = _compiled(schema)
    found = _Findings()
    _walk(node, obj, None, _ABSENT if old is None else old, found)
    errors = _metadata_name_errors(obj) + found.schema + found.lists
    if node.has_rules:
        if any(error.reason in _BLOCKING for error in errors):
            errors.append(FieldError(INVALID, "<nil>", _RULES_SKIPPED))
        else:
            errors += found.rules
    return errors


def is_structural(schema: dict) -> list[str]:
    """Problems that make an openAPIV3Schema unusable, checked when a CRD is written.

    A light version of the server's structural-schema check: every node needs a type unless it is
    int-or-string or preserves unknown fields, arrays need items, list-type maps need keys, and
    CEL rules must compile. Paths are relative to the openAPIV3Schema.
    """
    problems: list[str] = []
    _collect_structural_problems(schema, "", "at the root", problems)
    return problems


# --- compiled schemas ---------------------------------------------------------------------------


class _Node:
    """One schema node with its keywords read, its regex and CEL rules compiled."""

    __slots__ = (
        "additional", "all_of", "any_of", "atomic_map", "default", "embedded", "enum",
        "exclusive_maximum", "exclusive_minimum", "format", "format_check", "has_defaults",
        "has_rules", "has_transition_rules", "items", "list_type", "map_keys", "max_items",
        "max_length", "max_properties", "maximum", "min_items", "min_length", "min_properties",
        "minimum", "multiple_of", "not_", "nullable", "one_of", "own_transition_rules", "pattern",
        "preserve_unknown", "properties", "regex", "required", "rules", "schema_type", "types",
        "unique_items",
    )

    def __init__(self, schema: dict) -> None:
        self._read_shape(schema)
        self._read_value_limits(schema)
        self._read_compositions(schema)
        self._read_rules(schema)
        self._summarize()

    def _read_shape(self, schema: dict) -> None:
        self.schema_type = schema.get("type") or ""
        if schema.get("x-kubernetes-int-or-string"):
            self.types: tuple[str, ...] = ("integer", "string")
        else:
            self.types = (self.schema_type,) if self.schema_type else ()
        self.nullable = bool(schema.get("nullable"))
        self.preserve_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        self.embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        self.atomic_map = schema.get("x-kubernetes-map-type") == "atomic"
        self.properties = {name: _Node(sub) for name, sub in (schema.get("properties") or {}).items()}
        extra = schema.get("additionalProperties")
        self.additional: _Node | bool | None = _Node(extra) if isinstance(extra, dict) else extra
        items = schema.get("items")
        self.items = _Node(items) if isinstance(items, dict) else None
        self.required = tuple(schema.get("required") or ())
        self.default = schema.get("default", _ABSENT)
        self.list_type = schema.get("x-kubernetes-list-type")
        self.map_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())

    def _read_value_limits(self, schema: dict) -> None:
        self.enum = schema.get("enum") or None  # kube-openapi ignores an empty enum
        self.minimum = schema.get("minimum")
        self.maximum = schema.get("maximum")
        self.exclusive_minimum = bool(schema.get("exclusiveMinimum"))
        self.exclusive_maximum = bool(schema.get("exclusiveMaximum"))
        self.multiple_of = schema.get("multipleOf")
        self.min_length = schema.get("minLength")
        self.max_length = schema.get("maxLength")
        self.pattern = schema.get("pattern")
        self.regex = None
        if self.pattern is not None:
            try:
                self.regex = re.compile(self.pattern)
            except re.error as err:  # never matches, and says why, as kube-openapi does
                self.pattern = f"{self.pattern}, but pattern is invalid: {err}"
        self.format = schema.get("format") or ""
        self.format_check = _FORMAT_CHECKS.get(self.format.replace("-", ""))
        self.min_items = schema.get("minItems")
        self.max_items = schema.get("maxItems")
        self.unique_items = bool(schema.get("uniqueItems"))
        self.min_properties = schema.get("minProperties")
        self.max_properties = schema.get("maxProperties")

    def _read_compositions(self, schema: dict) -> None:
        self.all_of = tuple(_Node(sub) for sub in schema.get("allOf") or ())
        self.any_of = tuple(_Node(sub) for sub in schema.get("anyOf") or ())
        self.one_of = tuple(_Node(sub) for sub in schema.get("oneOf") or ())
        self.not_ = _Node(schema["not"]) if isinstance(schema.get("not"), dict) else None

    def _read_rules(self, schema: dict) -> None:
        self.rules = tuple(_Rule.from_spec(spec) for spec in schema.get("x-kubernetes-validations") or ())
        self.own_transition_rules = any(rule.uses_old_self for rule in self.rules)

    def _summarize(self) -> None:
        """Subtree flags that let the walks skip whole branches."""
        extra = self.additional if isinstance(self.additional, _Node) else None
        children = [child for child in (*self.properties.values(), self.items, extra) if child is not None]
        self.has_defaults: bool = any(child.default is not _ABSENT or child.has_defaults for child in children)
        self.has_rules: bool = bool(self.rules) or any(c.has_rules for c in (*children, *self.all_of))
        self.has_transition_rules: bool = self.own_transition_rules or any(
            c.has_transition_rules for c in children)


_compiled_schemas: dict[int, tuple[dict, _Node]] = {}
_COMPILED_LIMIT = 512


def _compiled(schema: dict) -> _Node:
    """The compiled form of a schema dict, built on first use. CRD schemas are not mutated in place:
    a changed CRD brings a new dict. The cache holds the dict, so its id cannot be reused."""
    hit = _compiled_schemas.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    if len(_compiled_schemas) >= _COMPILED_LIMIT:
        _compiled_schemas.clear()
    node = _Node(schema)
    _compiled_schemas[id(schema)] = (schema, node)
    return node


# --- pruning and defaulting ---------------------------------------------------------------------


def _prune(value: Any, node: _Node, path: str, dropped: list[str]) -> None:
    if isinstance(value, dict):
        _prune_object(value, node, _RESOURCE_FIELDS if node.embedded else frozenset(), path, dropped)
    elif isinstance(value, list) and node.items is not None:
        for i, item in enumerate(value):
            _prune(item, node.items, f"{path}[{i}]", dropped)


def _prune_object(obj: dict, node: _Node, kept: frozenset[str], path: str, dropped: list[str]) -> None:
    extra = node.additional
    keeps_unknown = node.preserve_unknown or extra is True
    for key in list(obj):
        if key in kept:
            continue
        child = node.properties.get(key) or (extra if isinstance(extra, _Node) else None)
        child_path = f"{path}.{key}" if path else key
        if child is None:
            if not keeps_unknown:
                del obj[key]
                dropped.append(child_path)
        elif obj[key] is None and not child.nullable and child.default is _ABSENT:
            del obj[key]
        else:
            _prune(obj[key], child, child_path, dropped)


def _default(value: Any, node: _Node) -> None:
    """structuraldefaulting.Default: defaults land before recursing, so defaults get defaulted too."""
    if isinstance(value, dict):
        _default_object(value, node)
    elif isinstance(value, list) and node.items is not None:
        items = node.items
        for index, item in enumerate(value):
            if _needs_default(item, items):
                value[index] = item = _copy_json(items.default)
            if items.has_defaults:
                _default(item, items)


def _default_object(obj: dict, node: _Node) -> None:
    for key, prop in node.properties.items():
        if _needs_default(obj.get(key, _ABSENT), prop):
            obj[key] = _copy_json(prop.default)
    extra = node.additional if isinstance(node.additional, _Node) else None
    for key, value in obj.items():
        child: _Node | None = node.properties.get(key)
        if child is None and extra is not None:
            child = extra
            if _needs_default(value, extra):
                obj[key] = value = _copy_json(extra.default)
        if child is not None and child.has_defaults:
            _default(value, child)


def _needs_default(value: Any, node: _Node) -> bool:
    """Absent, or null where null is not allowed, and the schema has a default."""
    return node.default is not _ABSENT and (value is _ABSENT or (value is None and not node.nullable))


def _copy_json(value: Any) -> Any:
    """A copy of a default value, so objects never share it with the schema."""
    if isinstance(value, dict):
        return {key: _copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_json(item) for item in value]
    return value


# --- validation: the walk -----------------------------------------------------------------------


@dataclass(slots=True)
class _Findings:
    """Errors of one walk, kept apart because the server reports them in separate passes."""

    schema: list[FieldError] = dataclasses.field(default_factory=list)
    lists: list[FieldError] = dataclasses.field(default_factory=list)
    rules: list[FieldError] = dataclasses.field(default_factory=list)


def _walk(node: _Node, value: Any, path: tuple | None, old: Any, found: _Findings) -> None:
    """Validates one value in kube-openapi's order: type, allOf/anyOf/oneOf/not, string or number
    limits, array, enum, object. Checks apply by the value's kind, even after a type error."""
    if old is not _ABSENT and value == old:
        _walk_transition_rules(node, value, path, found)
        return
    if node.types:
        _check_type(node, value, path, found.schema)
    if value is None:
        if node.enum is not None:
            _check_enum(node, value, path, found.schema)
        return
    if node.all_of or node.any_of or node.one_of or node.not_ is not None:
        _check_compositions(node, value, path, found)
    if node.rules:
        _run_rules(node, value, path, old, found.rules, transition_only=False)
    if isinstance(value, str):
        _check_string(node, value, path, found.schema)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(node, value, path, found.schema)
    elif isinstance(value, list):
        _walk_array(node, value, path, old, found)
    if node.enum is not None:
        _check_enum(node, value, path, found.schema)
    if isinstance(value, dict):
        _walk_object(node, value, path, old, found)


def _walk_object(node: _Node, obj: dict, path: tuple | None, old: Any, found: _Findings) -> None:
    count = len(obj)
    if node.min_properties is not None and count < node.min_properties:
        found.schema.append(_openapi_invalid(path, count, f"should have at least {node.min_properties} properties"))
        return  # kube-openapi stops at a property count error
    if node.max_properties is not None and count > node.max_properties:
        found.schema.append(_too_many(path, count, node.max_properties))
        return
    if node.atomic_map or not isinstance(old, dict):
        old = {}  # only granular maps correlate their fields with the old object's
    if node.additional is False or isinstance(node.additional, _Node):
        _walk_additional(node, obj, path, old, found)
    for key, child in node.properties.items():
        if key in obj:
            _walk(child, obj[key], (path, key), old.get(key, _ABSENT), found)
    for key in node.required:
        if key not in obj:
            found.schema.append(FieldError(REQUIRED, _openapi_field((path, key))))


def _walk_additional(node: _Node, obj: dict, path: tuple | None, old: dict, found: _Findings) -> None:
    for key, value in obj.items():
        if key in node.properties:
            continue
        if node.additional is False:
            name = _openapi_name(path)
            detail = f"{name}.{key} in body is a forbidden property"
            found.schema.append(FieldError(INVALID, name or "<nil>", detail, key))
        elif isinstance(node.additional, _Node):
            _walk(node.additional, value, (path, _Key(key)), old.get(key, _ABSENT), found)


def _walk_array(node: _Node, items: list, path: tuple | None, old: Any, found: _Findings) -> None:
    if node.list_type in ("set", "map"):
        found.lists += _list_type_errors(node, items, path)
    if node.items is not None:
        old_by_key = _old_items_by_key(node, old)
        for index, item in enumerate(items):
            old_item = _ABSENT
            if old_by_key and isinstance(item, dict):
                old_item = old_by_key.get(_map_key(node, item), _ABSENT)
            _walk(node.items, item, (path, index), old_item, found)
    _check_array_size(node, items, path, found.schema)


def _old_items_by_key(node: _Node, old: Any) -> dict | None:
    """Old items by their map keys: only items of list-type maps correlate across an update."""
    if node.list_type != "map" or not isinstance(old, list):
        return None
    return {_map_key(node, item): item for item in old if isinstance(item, dict)}


def _map_key(node: _Node, item: dict) -> tuple:
    """The identity of a list-type map item: its key fields (an absent one differs from null)."""
    return tuple((key, _identity(item[key])) for key in node.map_keys if key in item)


def _map_key_fields(node: _Node, item: dict | None) -> dict:
    return {key: item[key] for key in node.map_keys if key in item} if item else {}


def _walk_transition_rules(node: _Node, value: Any, path: tuple | None, found: _Findings) -> None:
    """An unchanged subtree: the server ratchets all its errors except those of oldSelf rules."""
    if not node.has_transition_rules or value is None:
        return
    if node.own_transition_rules:
        _run_rules(node, value, path, value, found.rules, transition_only=True)
    if isinstance(value, dict) and not node.atomic_map:
        for key, item in value.items():
            if key in node.properties:
                _walk_transition_rules(node.properties[key], item, (path, key), found)
            elif isinstance(node.additional, _Node):
                _walk_transition_rules(node.additional, item, (path, _Key(key)), found)
    elif isinstance(value, list) and node.items is not None and node.list_type == "map":
        for index, item in enumerate(value):
            _walk_transition_rules(node.items, item, (path, index), found)


# --- validation: value checks -------------------------------------------------------------------


_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "integer", float: "number",
               bool: "boolean", type(None): "null"}


def _check_type(node: _Node, value: Any, path: tuple | None, errors: list[FieldError]) -> None:
    found = _JSON_TYPES.get(type(value), "object")
    if found in node.types:
        return
    if found == "null":
        ok = node.nullable
    elif found == "number":  # 2.0 is an integer to kube-openapi
        ok = "integer" in node.types and _is_json_integer(value)
    else:
        ok = found == "integer" and "number" in node.types
    if not ok:
        errors.append(_type_invalid(path, found, ",".join(node.types)))


def _check_string(node: _Node, text: str, path: tuple | None, errors: list[FieldError]) -> None:
    """maxLength, minLength and pattern stop at the first failure, as kube-openapi's string validator."""
    if node.max_length is not None and len(text) > node.max_length:
        detail = f"may not be more than {_count(node.max_length, 'byte')}"
        errors.append(FieldError(TOO_LONG, _openapi_field(path), detail))
    elif node.min_length is not None and len(text) < node.min_length:
        errors.append(_openapi_invalid(path, text, f"should be at least {node.min_length} chars long"))
    elif node.pattern is not None and (node.regex is None or not node.regex.search(text)):
        errors.append(_openapi_invalid(path, text, f"should match '{node.pattern}'"))
    if node.format_check is not None and not node.format_check(text):
        errors.append(_type_invalid(path, text, node.format))


def _check_number(node: _Node, number: int | float, path: tuple | None, errors: list[FieldError]) -> None:
    """multipleOf, minimum, maximum. An integer is compared with truncated bounds, as Go's int64()."""
    as_int = isinstance(number, int)
    if node.multiple_of is not None and not _is_multiple(number, node.multiple_of):
        factor = int(node.multiple_of) if as_int else float(node.multiple_of)
        errors.append(_openapi_invalid(path, number, f"should be a multiple of {_go_number(factor)}"))
    if node.minimum is not None:
        bound = int(node.minimum) if as_int else float(node.minimum)
        if number < bound or (node.exclusive_minimum and number == bound):
            relation = "greater than" if node.exclusive_minimum else "greater than or equal to"
            errors.append(_openapi_invalid(path, number, f"should be {relation} {_go_number(bound)}"))
    if node.maximum is not None:
        bound = int(node.maximum) if as_int else float(node.maximum)
        if number > bound or (node.exclusive_maximum and number == bound):
            relation = "less than" if node.exclusive_maximum else "less than or equal to"
            errors.append(_openapi_invalid(path, number, f"should be {relation} {_go_number(bound)}"))


def _is_multiple(number: int | float, factor: int | float) -> bool:
    if isinstance(number, int) and int(factor) != 0:
        return number % int(factor) == 0
    quotient = (1 / factor) * number if factor < 1 else number / factor
    return _is_json_integer(quotient)


def _is_json_integer(number: float) -> bool:
    """swag.IsFloat64AJSONInteger: whole, or within a relative 1e-9 of a whole number."""
    if not math.isfinite(number) or abs(number) > 2**53:
        return False
    nearest = round(number)
    return number == nearest or abs(number - nearest) / (abs(number) + abs(nearest)) < 1e-9


def _check_array_size(node: _Node, items: list, path: tuple | None, errors: list[FieldError]) -> None:
    size = len(items)
    if node.min_items is not None and size < node.min_items:
        errors.append(_openapi_invalid(path, size, f"should have at least {node.min_items} items"))
    if node.max_items is not None and size > node.max_items:
        errors.append(_too_many(path, size, node.max_items))
    if node.unique_items and len({_identity(item) for item in items}) != size:
        errors.append(_openapi_invalid(path, "", "shouldn't contain duplicates"))


def _check_enum(node: _Node, value: Any, path: tuple | None, errors: list[FieldError]) -> None:
    # A null never matches, even when listed: kube-openapi compares through reflect types.
    options = node.enum or ()
    if value is not None and any(_same_json(value, option) for option in options):
        return
    supported = ", ".join(_go_quote(o if isinstance(o, str) else _go_json(o)) for o in options)
    errors.append(FieldError(NOT_SUPPORTED, _openapi_field(path), f"supported values: {supported}", value))


def _same_json(left: Any, right: Any) -> bool:
    return isinstance(left, bool) == isinstance(right, bool) and left == right


def _check_compositions(node: _Node, value: Any, path: tuple | None, found: _Findings) -> None:
    """allOf/anyOf/oneOf/not as value validations, with kube-openapi's summary errors, which the
    server reports at the root ("<nil>") because they are not field errors."""
    if node.any_of:
        _check_any_of(node, value, path, found)
    if node.one_of:
        _check_one_of(node, value, path, found)
    if node.all_of:
        _check_all_of(node, value, path, found)
    if node.not_ is not None and not _branch_findings(node.not_, value, path).schema:
        found.schema.append(_summary(path, "must not validate the schema (not)"))


def _check_any_of(node: _Node, value: Any, path: tuple | None, found: _Findings) -> None:
    failures: list[list[FieldError]] = []
    for branch in node.any_of:
        errors = _branch_findings(branch, value, path).schema
        if not errors:
            return
        failures.append(errors)
    found.schema.append(_summary(path, "must validate at least one schema (anyOf)"))
    closest = min(failures, key=len)  # kube-openapi adds the errors of the closest branch
    found.schema += closest


def _check_one_of(node: _Node, value: Any, path: tuple | None, found: _Findings) -> None:
    outcomes = [_branch_findings(branch, value, path).schema for branch in node.one_of]
    valid = sum(1 for errors in outcomes if not errors)
    if valid != 1:
        verdict = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
        found.schema.append(_summary(path, f"must validate one and only one schema (oneOf). {verdict}"))
        if valid == 0:
            closest = min(outcomes, key=len)
            found.schema += closest


def _check_all_of(node: _Node, value: Any, path: tuple | None, found: _Findings) -> None:
    valid = 0
    for branch in node.all_of:
        branch_found = _branch_findings(branch, value, path)
        found.schema += branch_found.schema
        found.rules += branch_found.rules  # the server runs CEL rules of allOf branches too
        valid += not branch_found.schema
    if valid != len(node.all_of):
        suffix = ". None validated" if valid == 0 else ""
        found.schema.append(_summary(path, f"must validate all the schemas (allOf){suffix}"))


def _branch_findings(branch: _Node, value: Any, path: tuple | None) -> _Findings:
    branch_found = _Findings()
    _walk(branch, value, path, _ABSENT, branch_found)
    return branch_found


def _summary(path: tuple | None, predicate: str) -> FieldError:
    return FieldError(INVALID, "<nil>", f"{_go_quote(_openapi_name(path))} {predicate}", "")


def _list_type_errors(node: _Node, items: list, path: tuple | None) -> list[FieldError]:
    """x-kubernetes-list-type set and map: each duplicate reported once, at its second position."""
    if node.list_type == "set":
        repeats = _second_occurrences([_identity(item) for item in items])
        return [FieldError(DUPLICATE, _field_path((path, i)), "", items[i]) for i in repeats]
    for index, item in enumerate(items):
        if item is not None and not isinstance(item, dict):
            message = "must be an object for an array of list-type map"
            return [FieldError(INVALID, _field_path((path, index)), message, item)]
    repeats = _second_occurrences([_map_key(node, item) if item else () for item in items])
    return [FieldError(DUPLICATE, _field_path((path, i)), "", _map_key_fields(node, items[i])) for i in repeats]


def _second_occurrences(identities: list) -> list[int]:
    seen: dict[Any, int] = {}
    repeats = []
    for index, identity in enumerate(identities):
        seen[identity] = seen.get(identity, 0) + 1
        if seen[identity] == 2:
            repeats.append(index)
    return repeats


def _identity(value: Any) -> tuple:
    """A hashable stand-in with Go's equality: 1, 1.0 and true are different values."""
    if isinstance(value, (dict, list)):
        return ("json", _go_json(value))
    return (type(value), value)


# --- validation: metadata.name --------------------------------------------------------------------

_DNS1123_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN)
_DNS1123_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    f"validation is '{_DNS1123_SUBDOMAIN}')"
)


def _metadata_name_errors(obj: dict) -> list[FieldError]:
    """ValidateObjectMeta's name checks (a generateName stands in until the server picks a name), and the
    size of the annotations."""
    metadata = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    sized = [FieldError(TOO_LONG, "metadata.annotations", f"may not be more than {ANNOTATIONS_LIMIT} bytes")] \
        if annotations_too_long(metadata) else []
    name = metadata.get("name")
    if not name:
        if metadata.get("generateName"):
            return sized
        return [FieldError(REQUIRED, "metadata.name", "name or generateName is required"), *sized]
    text = str(name)
    problems = []
    if len(text) > 253:
        problems.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(text):
        problems.append(_DNS1123_SUBDOMAIN_MESSAGE)
    return [*(FieldError(INVALID, "metadata.name", problem, name) for problem in problems), *sized]


# --- validation: CEL rules ------------------------------------------------------------------------

_REASONS = frozenset({REQUIRED, FORBIDDEN, DUPLICATE, INVALID})
CEL_ERROR_REWRITES = (  # celpy's wording of runtime errors -> cel-go's, which the server prints
    (re.compile(r"no such member in mapping: '(.*)'", re.DOTALL), r"no such key: \1"),
    (re.compile(r"found no matching overload.*", re.DOTALL), "no such overload"),
    (re.compile(r"modulus or divide by zero"), "division by zero"),
)


@functools.cache
def _cel_environment() -> celpy.Environment:
    return celpy.Environment()  # built on first use: it costs a tenth of a second


@functools.lru_cache(maxsize=2048)
def _cel_program(expression: str) -> tuple[Any, str, bool]:
    """(program, compile error, whether it reads oldSelf), compiled once per expression text."""
    environment = _cel_environment()
    try:
        ast = environment.compile(expression)
    except celpy.CELParseError as err:
        return None, " ".join(str(err).split()), False
    names = ast.scan_values(lambda token: getattr(token, "type", None) == "IDENT")
    return environment.program(ast, functions=cel_lists.FUNCTIONS), "", any(name == "oldSelf" for name in names)


@dataclass(frozen=True, slots=True)
class _Rule:
    text: str
    message: str
    message_program: Any
    field_path: str
    reason: str
    program: Any
    compile_error: str
    uses_old_self: bool

    @classmethod
    def from_spec(cls, spec: dict) -> _Rule:
        text = (spec.get("rule") or "").strip()
        program, compile_error, uses_old_self = _cel_program(text)
        expression = spec.get("messageExpression")
        reason = spec.get("reason")
        return cls(
            text=text,
            message=(spec.get("message") or "").strip(),
            message_program=_cel_program(expression)[0] if expression else None,
            field_path=_normalized_field_path(spec.get("fieldPath") or ""),
            reason=reason if reason in _REASONS else INVALID,
            program=program,
            compile_error=compile_error,
            uses_old_self=uses_old_self,
        )


def _normalized_field_path(json_path: str) -> str:
    """`.spec['a.b'].c` -> `spec.a.b.c`: the server appends the rule's fieldPath as one child."""
    return re.sub(r"\['((?:[^'\\]|\\.)*)'\]", r".\1", json_path).lstrip(".")


def _run_rules(node: _Node, value: Any, path: tuple | None, old: Any, errors: list[FieldError],
               transition_only: bool) -> None:
    """Evaluates a node's rules on a non-null value. Rules reading oldSelf need an old value."""
    has_old = old is not _ABSENT and old is not None
    activation = None
    for rule in node.rules:
        if (rule.uses_old_self and not has_old) or (transition_only and not rule.uses_old_self):
            continue
        if activation is None:
            activation = {"self": _to_cel(value)}
            if has_old and node.own_transition_rules:
                activation["oldSelf"] = _to_cel(old)
        error = _rule_error(rule, node, path, activation)
        if error is not None:
            errors.append(error)


def _to_cel(value: Any) -> Any:
    """celpy.json_to_cel, three times faster: JSON values need none of the checks of celtypes'
    constructors (which dominate the cost of a rule on a large object), so they are bypassed."""
    kind = type(value)
    if kind is str:
        return str.__new__(celtypes.StringType, value)
    if kind is dict:
        result = celtypes.MapType()
        dict.update(result, {str.__new__(celtypes.StringType, k): _to_cel(v) for k, v in value.items()})
        return result
    if kind is list:
        return celtypes.ListType([_to_cel(item) for item in value])
    if kind is int:
        return int.__new__(celtypes.IntType, value)
    if kind is float:
        return float.__new__(celtypes.DoubleType, value)
    return celpy.json_to_cel(value)  # bool and None


def _rule_error(rule: _Rule, node: _Node, path: tuple | None, activation: dict) -> FieldError | None:
    if rule.program is None:
        return FieldError(INVALID, _field_path(path), f"rule compile error: {rule.compile_error}", node.schema_type)
    try:
        result = rule.program.evaluate(activation)
    except Exception as err:  # celpy raises CELEvalError and, for odd inputs, plain Python errors
        return FieldError(INVALID, _field_path(path), _evaluation_failure(err, rule), node.schema_type)
    if isinstance(result, celpy.CELEvalError):
        return FieldError(INVALID, _field_path(path), _evaluation_failure(result, rule), node.schema_type)
    if result is True or (isinstance(result, celtypes.BoolType) and result):
        return None
    return _rule_violation(rule, node, path, activation)


def _rule_violation(rule: _Rule, node: _Node, path: tuple | None, activation: dict) -> FieldError:
    detail = _evaluated_message(rule, activation) or rule.message or f"failed rule: {rule.text}"
    base = _format_path(path, brackets_for_keys=True)
    where = ".".join(part for part in (base, rule.field_path) if part) or "<nil>"
    if rule.reason in (REQUIRED, FORBIDDEN):
        return FieldError(rule.reason, where, detail)
    if rule.reason == DUPLICATE:
        return FieldError(DUPLICATE, where, "", node.schema_type)
    return FieldError(INVALID, where, detail, node.schema_type)


def _evaluated_message(rule: _Rule, activation: dict) -> str:
    """The messageExpression's text, or "" when it fails, for the server then falls back to message."""
    if rule.message_program is None:
        return ""
    try:
        result = rule.message_program.evaluate(activation)
    except Exception:  # any failure means: use the static message
        return ""
    text = result.strip() if isinstance(result, str) else ""
    return "" if "\n" in text else text


def _evaluation_failure(err: Exception, rule: _Rule) -> str:
    text = str(err.args[0]) if err.args else str(err)
    text = text.split(" (in activation", 1)[0]
    for pattern, replacement in CEL_ERROR_REWRITES:
        text = pattern.sub(replacement, text)
    label = rule.message or rule.text
    if text.startswith("no such overload"):
        return (f"'{text}': call arguments did not match a supported operator, function or macro "
                f"signature for rule: {label}")
    return f"{text} evaluating rule: {label}"


# --- formats ------------------------------------------------------------------------------------
# The string formats the server validates (others are stripped from CRD schemas, int32/int64
# included, so they accept anything); the cheap ones are checked here, the rest are lenient.

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_UUIDS = {
    "uuid": re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.IGNORECASE),
    "uuid3": re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-3[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE),
    "uuid4": re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.IGNORECASE),
    "uuid5": re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.IGNORECASE),
}


def _is_date(text: str) -> bool:
    try:
        return bool(_DATE.fullmatch(text)) and bool(date.fromisoformat(text))
    except ValueError:
        return False


def _is_date_time(text: str) -> bool:
    match = _DATE_TIME.fullmatch(text)
    return match is not None and _is_date(match[1]) and int(match[2]) < 24 and int(match[3]) < 60 and int(match[4]) < 60


def _matches(pattern: re.Pattern) -> Any:
    return lambda text: pattern.fullmatch(text) is not None


def _parses(parser: Any) -> Any:
    def check(text: str) -> bool:
        try:
            parser(text)
        except ValueError:  # binascii.Error included
            return False
        return True

    return check


_FORMAT_CHECKS = {
    "datetime": _is_date_time,
    "date": _is_date,
    **{name: _matches(pattern) for name, pattern in _UUIDS.items()},
    "ipv4": _parses(ipaddress.IPv4Address),
    "ipv6": _parses(ipaddress.IPv6Address),
    "cidr": _parses(functools.partial(ipaddress.ip_network, strict=False)),
    "byte": _parses(functools.partial(base64.b64decode, validate=True)),
}


# --- paths and error constructors -------------------------------------------------------------
# A path is a linked tuple (parent, segment), None at the root, rendered only when an error needs it.
# Segments are property names, list indices, or map keys (_Key): kube-openapi prints a map key as
# `.key` in schema errors, field.Path as `[key]` in list-type and CEL errors.


class _Key(str):
    """A key of an additionalProperties map within a path."""

    __slots__ = ()


def _format_path(path: tuple | None, brackets_for_keys: bool) -> str:
    segments = []
    while path is not None:
        path, segment = path
        segments.append(segment)
    parts: list[str] = []
    for segment in reversed(segments):
        if isinstance(segment, int) or (brackets_for_keys and isinstance(segment, _Key)):
            parts.append(f"[{segment}]")
        else:
            parts.append(f".{segment}" if parts else segment)
    return "".join(parts)


def _openapi_name(path: tuple | None) -> str:
    """The path as kube-openapi names it in messages: `spec.replicaSpecs[0].replicas`."""
    return _format_path(path, brackets_for_keys=False)


def _openapi_field(path: tuple | None) -> str:
    return _openapi_name(path) or "<nil>"  # a nil field.Path prints as <nil>


def _field_path(path: tuple | None) -> str:
    return _format_path(path, brackets_for_keys=True) or "<nil>"


def _openapi_invalid(path: tuple | None, value: Any, predicate: str) -> FieldError:
    name = _openapi_name(path)
    return FieldError(INVALID, name or "<nil>", f"{name} in body {predicate}", value)


def _type_invalid(path: tuple | None, found: str, expected: str) -> FieldError:
    name = _openapi_name(path)
    detail = f"{name} in body must be of type {expected}: {_go_quote(found)}"
    return FieldError(TYPE_INVALID, name or "<nil>", detail, found)


def _too_many(path: tuple | None, actual: int, limit: int) -> FieldError:
    return FieldError(TOO_MANY, _openapi_field(path), f"must have at most {_count(limit, 'item')}", actual)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


# --- Go's renderings --------------------------------------------------------------------------

_GO_ESCAPES = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n",
               "\r": "\\r", "\t": "\\t", "\v": "\\v"}
_JSON_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _go_value(value: Any) -> str:
    """A bad value as field.Error prints it: %v for numbers and bools, %q for strings, else JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _go_number(value)
    if isinstance(value, str):
        return _go_quote(value)
    return _go_json(value)


def _go_quote(text: str) -> str:
    """strconv.Quote."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    out = []
    for char in text:
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def _go_json(value: Any) -> str:
    """encoding/json.Marshal: sorted keys, no spaces, HTML-safe strings, Go's float format."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_go_json(str(k))}:{_go_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_go_json(item) for item in value) + "]"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return re.sub("[<>&\u2028\u2029]", lambda m: _JSON_HTML_ESCAPES[m[0]], text)
    if isinstance(value, float) and not isinstance(value, bool):
        return _go_float(value, json_style=True)
    return json.dumps(value)


def _go_number(number: int | float) -> str:
    return str(number) if isinstance(number, int) else _go_float(number)


def _go_float(number: float, json_style: bool = False) -> str:
    """Go's %v of a float64 (shortest digits, exponent from 1e+06 or below 1e-04), or with
    json_style encoding/json's (exponent from 1e+21 or below 1e-06, written e-7)."""
    if not math.isfinite(number):
        return "NaN" if math.isnan(number) else ("+Inf" if number > 0 else "-Inf")
    if number == 0:
        return "0"
    _, digit_tuple, exponent = Decimal(repr(abs(number))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + int(exponent)  # where the decimal point sits within digits
    sign = "-" if number < 0 else ""
    if json_style:
        scientific = abs(number) < 1e-6 or abs(number) >= 1e21
    else:
        scientific = not -4 <= point - 1 < 6
    if scientific:
        magnitude = point - 1
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        width = 1 if json_style and magnitude < 0 else 2
        return f"{sign}{mantissa}e{'-' if magnitude < 0 else '+'}{abs(magnitude):0{width}d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


# --- structural schema check --------------------------------------------------------------------


def _collect_structural_problems(schema: Any, path: str, scope: str, problems: list[str]) -> None:
    where = f"{path}." if path else ""
    if not isinstance(schema, dict):
        problems.append(f"{path or '<root>'}: Invalid value: must be a schema object")
        return
    if not (schema.get("type") or schema.get("x-kubernetes-int-or-string")
            or schema.get("x-kubernetes-preserve-unknown-fields")):
        problems.append(f"{where}type: Required value: must not be empty {scope}")
    if schema.get("type") == "array" and not isinstance(schema.get("items"), dict):
        problems.append(f"{where}items: Required value: must be specified")
    if schema.get("x-kubernetes-list-type") == "map" and not schema.get("x-kubernetes-list-map-keys"):
        problems.append(f"{where}x-kubernetes-list-map-keys: Required value: "
                        "must not be empty if x-kubernetes-list-type is map")
    for index, rule in enumerate(schema.get("x-kubernetes-validations") or ()):
        text = (rule.get("rule") or "").strip() if isinstance(rule, dict) else ""
        error = _cel_program(text)[1] if text else "rule must not be empty"
        if error:
            problems.append(f"{where}x-kubernetes-validations[{index}].rule: Invalid value: "
                            f"{_go_quote(text)}: compilation failed: {error}")
    for name, child in (schema.get("properties") or {}).items():
        _collect_structural_problems(child, f"{where}properties[{name}]", "for specified object fields", problems)
    if "items" in schema:
        _collect_structural_problems(schema["items"], f"{where}items", "for specified array items", problems)
    if isinstance(schema.get("additionalProperties"), dict):
        _collect_structural_problems(schema["additionalProperties"], f"{where}additionalProperties",
                                     "for specified object fields", problems)
