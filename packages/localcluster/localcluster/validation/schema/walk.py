"""Validation: a walk of the value along its compiled schema in kube-openapi's order, with the
value checks, list types, compositions and metadata.name."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from ..builtins import ANNOTATIONS_LIMIT, annotations_too_long
from .compiled import Node
from .field_errors import (
    ABSENT,
    DUPLICATE,
    INVALID,
    NOT_SUPPORTED,
    REQUIRED,
    TOO_LONG,
    FieldError,
    Key,
    counted,
    field_error_path,
    go_json,
    go_number,
    go_quote,
    openapi_field,
    openapi_invalid,
    openapi_name,
    too_many,
    type_invalid,
)
from .rules import run_rules

# --- validation: the walk -----------------------------------------------------------------------


@dataclass(slots=True)
class Findings:
    """Errors of one walk, kept apart because the server reports them in separate passes."""

    schema: list[FieldError] = dataclasses.field(default_factory=list)
    lists: list[FieldError] = dataclasses.field(default_factory=list)
    rules: list[FieldError] = dataclasses.field(default_factory=list)


def walk_value(node: Node, value: Any, path: tuple | None, old: Any, found: Findings) -> None:
    """Validates one value in kube-openapi's order: type, allOf/anyOf/oneOf/not, string or number
    limits, array, enum, object. Checks apply by the value's kind, even after a type error."""
    if old is not ABSENT and value == old:
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
        run_rules(node, value, path, old, found.rules, transition_only=False)
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


def _walk_object(node: Node, obj: dict, path: tuple | None, old: Any, found: Findings) -> None:
    count = len(obj)
    if node.min_properties is not None and count < node.min_properties:
        found.schema.append(openapi_invalid(path, count, f"should have at least {node.min_properties} properties"))
        return  # kube-openapi stops at a property count error
    if node.max_properties is not None and count > node.max_properties:
        found.schema.append(too_many(path, count, node.max_properties))
        return
    if node.atomic_map or not isinstance(old, dict):
        old = {}  # only granular maps correlate their fields with the old object's
    if node.additional is False or isinstance(node.additional, Node):
        _walk_additional(node, obj, path, old, found)
    for key, child in node.properties.items():
        if key in obj:
            walk_value(child, obj[key], (path, key), old.get(key, ABSENT), found)
    for key in node.required:
        if key not in obj:
            found.schema.append(FieldError(REQUIRED, openapi_field((path, key))))


def _walk_additional(node: Node, obj: dict, path: tuple | None, old: dict, found: Findings) -> None:
    for key, value in obj.items():
        if key in node.properties:
            continue
        if node.additional is False:
            name = openapi_name(path)
            detail = f"{name}.{key} in body is a forbidden property"
            found.schema.append(FieldError(INVALID, name or "<nil>", detail, key))
        elif isinstance(node.additional, Node):
            walk_value(node.additional, value, (path, Key(key)), old.get(key, ABSENT), found)


def _walk_array(node: Node, items: list, path: tuple | None, old: Any, found: Findings) -> None:
    if node.list_type in ("set", "map"):
        found.lists += _list_type_errors(node, items, path)
    if node.items is not None:
        old_by_key = _old_items_by_key(node, old)
        for index, item in enumerate(items):
            old_item = ABSENT
            if old_by_key and isinstance(item, dict):
                old_item = old_by_key.get(_map_key(node, item), ABSENT)
            walk_value(node.items, item, (path, index), old_item, found)
    _check_array_size(node, items, path, found.schema)


def _old_items_by_key(node: Node, old: Any) -> dict | None:
    """Old items by their map keys: only items of list-type maps correlate across an update."""
    if node.list_type != "map" or not isinstance(old, list):
        return None
    return {_map_key(node, item): item for item in old if isinstance(item, dict)}


def _map_key(node: Node, item: dict) -> tuple:
    """The identity of a list-type map item: its key fields (an absent one differs from null)."""
    return tuple((key, _identity(item[key])) for key in node.map_keys if key in item)


def _map_key_fields(node: Node, item: dict | None) -> dict:
    return {key: item[key] for key in node.map_keys if key in item} if item else {}


def _walk_transition_rules(node: Node, value: Any, path: tuple | None, found: Findings) -> None:
    """An unchanged subtree: the server ratchets all its errors except those of oldSelf rules."""
    if not node.has_transition_rules or value is None:
        return
    if node.own_transition_rules:
        run_rules(node, value, path, value, found.rules, transition_only=True)
    if isinstance(value, dict) and not node.atomic_map:
        for key, item in value.items():
            if key in node.properties:
                _walk_transition_rules(node.properties[key], item, (path, key), found)
            elif isinstance(node.additional, Node):
                _walk_transition_rules(node.additional, item, (path, Key(key)), found)
    elif isinstance(value, list) and node.items is not None and node.list_type == "map":
        for index, item in enumerate(value):
            _walk_transition_rules(node.items, item, (path, index), found)


# --- validation: value checks -------------------------------------------------------------------


_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "integer", float: "number",
               bool: "boolean", type(None): "null"}


def _check_type(node: Node, value: Any, path: tuple | None, errors: list[FieldError]) -> None:
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
        errors.append(type_invalid(path, found, ",".join(node.types)))


def _check_string(node: Node, text: str, path: tuple | None, errors: list[FieldError]) -> None:
    """maxLength, minLength and pattern stop at the first failure, as kube-openapi's string validator."""
    if node.max_length is not None and len(text) > node.max_length:
        detail = f"may not be more than {counted(node.max_length, 'byte')}"
        errors.append(FieldError(TOO_LONG, openapi_field(path), detail))
    elif node.min_length is not None and len(text) < node.min_length:
        errors.append(openapi_invalid(path, text, f"should be at least {node.min_length} chars long"))
    elif node.pattern is not None and (node.regex is None or not node.regex.search(text)):
        errors.append(openapi_invalid(path, text, f"should match '{node.pattern}'"))
    if node.format_check is not None and not node.format_check(text):
        errors.append(type_invalid(path, text, node.format))


def _check_number(node: Node, number: int | float, path: tuple | None, errors: list[FieldError]) -> None:
    """multipleOf, minimum, maximum. An integer is compared with truncated bounds, as Go's int64()."""
    as_int = isinstance(number, int)
    if node.multiple_of is not None and not _is_multiple(number, node.multiple_of):
        factor = int(node.multiple_of) if as_int else float(node.multiple_of)
        errors.append(openapi_invalid(path, number, f"should be a multiple of {go_number(factor)}"))
    if node.minimum is not None:
        bound = int(node.minimum) if as_int else float(node.minimum)
        if number < bound or (node.exclusive_minimum and number == bound):
            relation = "greater than" if node.exclusive_minimum else "greater than or equal to"
            errors.append(openapi_invalid(path, number, f"should be {relation} {go_number(bound)}"))
    if node.maximum is not None:
        bound = int(node.maximum) if as_int else float(node.maximum)
        if number > bound or (node.exclusive_maximum and number == bound):
            relation = "less than" if node.exclusive_maximum else "less than or equal to"
            errors.append(openapi_invalid(path, number, f"should be {relation} {go_number(bound)}"))


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


def _check_array_size(node: Node, items: list, path: tuple | None, errors: list[FieldError]) -> None:
    size = len(items)
    if node.min_items is not None and size < node.min_items:
        errors.append(openapi_invalid(path, size, f"should have at least {node.min_items} items"))
    if node.max_items is not None and size > node.max_items:
        errors.append(too_many(path, size, node.max_items))
    if node.unique_items and len({_identity(item) for item in items}) != size:
        errors.append(openapi_invalid(path, "", "shouldn't contain duplicates"))


def _check_enum(node: Node, value: Any, path: tuple | None, errors: list[FieldError]) -> None:
    # A null never matches, even when listed: kube-openapi compares through reflect types.
    options = node.enum or ()
    if value is not None and any(_same_json(value, option) for option in options):
        return
    supported = ", ".join(go_quote(o if isinstance(o, str) else go_json(o)) for o in options)
    errors.append(FieldError(NOT_SUPPORTED, openapi_field(path), f"supported values: {supported}", value))


def _same_json(left: Any, right: Any) -> bool:
    return isinstance(left, bool) == isinstance(right, bool) and left == right


def _check_compositions(node: Node, value: Any, path: tuple | None, found: Findings) -> None:
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


def _check_any_of(node: Node, value: Any, path: tuple | None, found: Findings) -> None:
    failures: list[list[FieldError]] = []
    for branch in node.any_of:
        errors = _branch_findings(branch, value, path).schema
        if not errors:
            return
        failures.append(errors)
    found.schema.append(_summary(path, "must validate at least one schema (anyOf)"))
    closest = min(failures, key=len)  # kube-openapi adds the errors of the closest branch
    found.schema += closest


def _check_one_of(node: Node, value: Any, path: tuple | None, found: Findings) -> None:
    outcomes = [_branch_findings(branch, value, path).schema for branch in node.one_of]
    valid = sum(1 for errors in outcomes if not errors)
    if valid != 1:
        verdict = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
        found.schema.append(_summary(path, f"must validate one and only one schema (oneOf). {verdict}"))
        if valid == 0:
            closest = min(outcomes, key=len)
            found.schema += closest


def _check_all_of(node: Node, value: Any, path: tuple | None, found: Findings) -> None:
    valid = 0
    for branch in node.all_of:
        branch_found = _branch_findings(branch, value, path)
        found.schema += branch_found.schema
        found.rules += branch_found.rules  # the server runs CEL rules of allOf branches too
        valid += not branch_found.schema
    if valid != len(node.all_of):
        suffix = ". None validated" if valid == 0 else ""
        found.schema.append(_summary(path, f"must validate all the schemas (allOf){suffix}"))


def _branch_findings(branch: Node, value: Any, path: tuple | None) -> Findings:
    branch_found = Findings()
    walk_value(branch, value, path, ABSENT, branch_found)
    return branch_found


def _summary(path: tuple | None, predicate: str) -> FieldError:
    return FieldError(INVALID, "<nil>", f"{go_quote(openapi_name(path))} {predicate}", "")


def _list_type_errors(node: Node, items: list, path: tuple | None) -> list[FieldError]:
    """x-kubernetes-list-type set and map: each duplicate reported once, at its second position."""
    if node.list_type == "set":
        repeats = _second_occurrences([_identity(item) for item in items])
        return [FieldError(DUPLICATE, field_error_path((path, i)), "", items[i]) for i in repeats]
    for index, item in enumerate(items):
        if item is not None and not isinstance(item, dict):
            message = "must be an object for an array of list-type map"
            return [FieldError(INVALID, field_error_path((path, index)), message, item)]
    repeats = _second_occurrences([_map_key(node, item) if item else () for item in items])
    return [FieldError(DUPLICATE, field_error_path((path, i)), "", _map_key_fields(node, items[i])) for i in repeats]


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
        return ("json", go_json(value))
    return (type(value), value)


# --- validation: metadata.name --------------------------------------------------------------------

_DNS1123_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN)
_DNS1123_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    f"validation is '{_DNS1123_SUBDOMAIN}')"
)


def metadata_name_errors(obj: dict) -> list[FieldError]:
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


