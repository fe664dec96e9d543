"""Validation: what a write must satisfy before it is stored, as kube-apiserver checks it. The built-in
kinds' defaulting and validation (their REST strategies) and their OpenAPI schemas
(k8s_openapi.json.gz, generated); custom resources against their CRD's structural schema; CEL rules
(parsed, type-checked and priced as cel-go and apiextensions-apiserver do, crd_cel.py when a CRD is
written); resource.Quantity. Pure functions on dicts: nothing here stores, serves or knows who asks.

A house of its own inside localcluster (an apiextensions server's checks, with their CEL): it imports nothing of
localcluster, and the rest of localcluster uses only what this module exports (`__all__`), never its modules;
outside localcluster, its CRD tools are reached through `localcluster.crd`, its door
(tests/program/test_layers.py keeps both).
"""

from __future__ import annotations

from . import builtin_schemas, builtins
from .builtins import (
    DNS1035_LABEL,
    DNS1035_MSG,
    DNS1123_SUBDOMAIN,
    LABEL_VALUE,
    LABEL_VALUE_MSG,
    Cause,
    default_pod_template,
    default_service,
    forbidden,
    invalid_value,
    not_supported,
    required,
)
from .crd_schema_decode import decode_crd
from .envelope import cannot_be_handled, meta_type_error, unmarshal_error
from .quantity import QuantityError, go_float
from .quantity import parse as parse_quantity
from .schema import CEL_ERROR_REWRITES, admit
from .schema.memo import BySchema
from .selectors import FieldRequirement, FieldSelector, label_selector_from_dict, parse_field_selector

__all__ = ["CEL_ERROR_REWRITES", "DNS1035_LABEL", "DNS1035_MSG", "DNS1123_SUBDOMAIN", "LABEL_VALUE", "LABEL_VALUE_MSG",
           "BySchema", "Cause", "FieldRequirement", "FieldSelector", "QuantityError", "admit", "builtin_schemas",
           "builtins", "cannot_be_handled", "decode_crd", "default_pod_template", "default_service", "forbidden",
           "go_float", "invalid_value", "label_selector_from_dict", "meta_type_error", "not_supported",
           "parse_field_selector", "parse_quantity", "required", "rule_errors", "unmarshal_error"]


def rule_errors(crd: dict) -> list[Cause]:
    """A CRD's CEL rules compiled and priced as apiextensions-apiserver does when the CRD is written (crd_cel.py):
    their errors. Imported on first use: only a CRD's write needs the cost estimator."""
    from .crd_cel import errors

    return errors(crd)
