"""Custom resources against their CRD schema, as kube-apiserver's apiextensions handles them.

For every write of a custom object the server calls ``admit(obj, schema, old)``: unknown fields
are pruned, structural defaults applied, then the object is validated against the CRD's
``openAPIV3Schema``, its ``x-kubernetes-list-type`` invariants and its ``x-kubernetes-validations``
CEL rules. Errors carry the paths, reasons and texts of the real server (apimachinery's
``field.Error``, kube-openapi's validator, apiextensions-apiserver's CEL validator), so a client
sees the same 422 body as from a real cluster.

A schema is compiled once into a tree of ``Node`` (cached by identity) with its regexes and CEL
programs; objects are walked in place and never deep-copied. The rooms: field_errors (field.Error, its
paths and Go's renderings of values), compiled (the nodes), formats, rules (CEL), defaults (pruning and
defaulting), walk (validation), structural (the structural check); this module, the operations.
"""

from __future__ import annotations

from .compiled import compiled_node
from .defaults import default_value, prune_object
from .field_errors import (
    ABSENT,
    BLOCKING,
    DUPLICATE,
    FORBIDDEN,
    INVALID,
    NOT_SUPPORTED,
    REQUIRED,
    RESOURCE_FIELDS,
    RULES_SKIPPED,
    TOO_LONG,
    TOO_MANY,
    TYPE_INVALID,
    FieldError,
    invalid_status,
)
from .rules import CEL_ERROR_REWRITES, cel_program
from .structural import structural_problems
from .walk import Findings, metadata_name_errors, walk_value

__all__ = [
    "CEL_ERROR_REWRITES",
    "DUPLICATE",
    "FORBIDDEN",
    "INVALID",
    "NOT_SUPPORTED",
    "REQUIRED",
    "TOO_LONG",
    "TOO_MANY",
    "TYPE_INVALID",
    "FieldError",
    "admit",
    "apply_defaults",
    "cel_program",
    "invalid_status",
    "is_structural",
    "prune",
    "validate",
]

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
    prune_object(obj, compiled_node(schema), RESOURCE_FIELDS, "", dropped)
    return dropped


def apply_defaults(obj: dict, schema: dict) -> None:
    """Fills in ``default`` values of absent fields, and of nulls where null is not allowed."""
    node = compiled_node(schema)
    if node.has_defaults:
        default_value(obj, node)


def validate(obj: dict, schema: dict, old: dict | None = None) -> list[FieldError]:
    """The errors of ``obj`` in the server's order: metadata.name, schema, list types, CEL rules.

    On update, subtrees equal to the old object's are not reported (CRD validation ratcheting,
    on by default since Kubernetes 1.30), except for transition rules, which read ``oldSelf``.
    """
    node = compiled_node(schema)
    found = Findings()
    walk_value(node, obj, None, ABSENT if old is None else old, found)
    errors = metadata_name_errors(obj) + found.schema + found.lists
    if node.has_rules:
        if any(error.reason in BLOCKING for error in errors):
            errors.append(FieldError(INVALID, "<nil>", RULES_SKIPPED))
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
    structural_problems(schema, "", "at the root", problems)
    return problems


