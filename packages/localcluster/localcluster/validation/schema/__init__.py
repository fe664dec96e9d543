"""Custom resources against their CRD schema, as kube-apiserver's apiextensions handles them.

For every write of a custom object the server calls ``admit(obj, schema, old)``: unknown fields
are pruned, structural defaults applied, then the object is validated against the CRD's
``openAPIV3Schema``, its ``x-kubernetes-list-type`` invariants and its ``x-kubernetes-validations``
CEL rules. Errors carry the paths, reasons and texts of the real server (apimachinery's
``field.Error``, kube-openapi's validator, apiextensions-apiserver's CEL validator), so a client
sees the same 422 body as from a real cluster.

A schema is compiled once into a tree of ``_Node`` (cached by identity) with its regexes and CEL
programs; objects are walked in place and never deep-copied. The rooms: field_errors (field.Error, its
paths and Go's renderings of values), compiled (the nodes), formats, rules (CEL), defaults (pruning and
defaulting), walk (validation), structural (the structural check); this module, the operations.
"""

from __future__ import annotations

from .compiled import _compiled
from .defaults import _default, _prune_object
from .field_errors import (
    _ABSENT,
    _BLOCKING,
    _RESOURCE_FIELDS,
    _RULES_SKIPPED,
    DUPLICATE,
    FORBIDDEN,
    INVALID,
    NOT_SUPPORTED,
    REQUIRED,
    TOO_LONG,
    TOO_MANY,
    TYPE_INVALID,
    FieldError,
    invalid_status,
)
from .rules import CEL_ERROR_REWRITES, _cel_program
from .structural import _collect_structural_problems
from .walk import _Findings, _metadata_name_errors, _walk

__all__ = ["CEL_ERROR_REWRITES", "DUPLICATE", "FORBIDDEN", "INVALID", "NOT_SUPPORTED", "REQUIRED", "TOO_LONG",
           "TOO_MANY", "TYPE_INVALID", "FieldError", "_cel_program", "admit", "apply_defaults", "invalid_status",
           "is_structural", "prune", "validate"]

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


