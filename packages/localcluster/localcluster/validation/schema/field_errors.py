"""apimachinery's field.Error as the apiextensions server writes it: the error types, their paths
(kube-openapi's and field.Path's), and Go's renderings of the bad values."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

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
BLOCKING = frozenset({NOT_SUPPORTED, REQUIRED, TOO_LONG, TOO_MANY, TYPE_INVALID})
RULES_SKIPPED = ("some validation rules were not checked because the object was invalid; "
                  "correct the existing errors to complete validation")

RESOURCE_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
ABSENT: Any = object()  # no value here (no old object, no default): unlike None, which is JSON null
# field.OmitValueType: a bad value field.Error leaves out ("Invalid value: <detail>"), as 1.35 does for a CEL rule's
# violation (measured against a real 1.35.3 kube-apiserver by tests/real/test_fidelity.py)
OMITTED: Any = object()


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
        if self.reason not in _LABEL_ONLY and self.bad_value is not OMITTED:
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
        "message": f"{qualified} {go_quote(name)} is invalid: {_aggregate(errors)}",
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


# --- paths and error constructors -------------------------------------------------------------
# A path is a linked tuple (parent, segment), None at the root, rendered only when an error needs it.
# Segments are property names, list indices, or map keys (Key): kube-openapi prints a map key as
# `.key` in schema errors, field.Path as `[key]` in list-type and CEL errors.


class Key(str):
    """A key of an additionalProperties map within a path."""

    __slots__ = ()


def format_path(path: tuple | None, brackets_for_keys: bool) -> str:
    segments = []
    while path is not None:
        path, segment = path
        segments.append(segment)
    parts: list[str] = []
    for segment in reversed(segments):
        if isinstance(segment, int) or (brackets_for_keys and isinstance(segment, Key)):
            parts.append(f"[{segment}]")
        else:
            parts.append(f".{segment}" if parts else segment)
    return "".join(parts)


def openapi_name(path: tuple | None) -> str:
    """The path as kube-openapi names it in messages: `spec.replicaSpecs[0].replicas`."""
    return format_path(path, brackets_for_keys=False)


def openapi_field(path: tuple | None) -> str:
    return openapi_name(path) or "<nil>"  # a nil field.Path prints as <nil>


def field_error_path(path: tuple | None) -> str:
    return format_path(path, brackets_for_keys=True) or "<nil>"


def openapi_invalid(path: tuple | None, value: Any, predicate: str) -> FieldError:
    name = openapi_name(path)
    return FieldError(INVALID, name or "<nil>", f"{name} in body {predicate}", value)


def type_invalid(path: tuple | None, found: str, expected: str) -> FieldError:
    name = openapi_name(path)
    detail = f"{name} in body must be of type {expected}: {go_quote(found)}"
    return FieldError(TYPE_INVALID, name or "<nil>", detail, found)


def too_many(path: tuple | None, actual: int, limit: int) -> FieldError:
    return FieldError(TOO_MANY, openapi_field(path), f"must have at most {counted(limit, 'item')}", actual)


def counted(number: int, noun: str) -> str:
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
        return go_number(value)
    if isinstance(value, str):
        return go_quote(value)
    return go_json(value)


def go_quote(text: str) -> str:
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


def go_json(value: Any) -> str:
    """encoding/json.Marshal: sorted keys, no spaces, HTML-safe strings, Go's float format."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{go_json(str(k))}:{go_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(go_json(item) for item in value) + "]"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return re.sub("[<>&\u2028\u2029]", lambda m: _JSON_HTML_ESCAPES[m[0]], text)
    if isinstance(value, float) and not isinstance(value, bool):
        return _go_float(value, json_style=True)
    return json.dumps(value)


def go_number(number: int | float) -> str:
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


