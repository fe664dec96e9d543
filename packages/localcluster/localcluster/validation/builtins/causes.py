"""A validation error as the apiserver's field.Error, a (reason, field, text) triple; the name formats."""

from __future__ import annotations

import re

Cause = tuple[str, str, str]

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

LABEL1123_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
                 "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
                 "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
               "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
               "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
                   "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
                   "'my_value',  or '12345', regex used for validation is "
                   "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def quoted(value) -> str:
    return '"' + str(value).replace('"', '\\"') + '"'


def required(field: str, detail: str = "") -> Cause:
    return ("FieldValueRequired", field, f"{field}: Required value" + (f": {detail}" if detail else ""))


def invalid_value(field: str, value, detail: str) -> Cause:
    shown = quoted(value) if isinstance(value, str) else value
    return ("FieldValueInvalid", field, f"{field}: Invalid value: {shown}: {detail}")


def not_supported(field: str, value, supported: list[str]) -> Cause:
    options = ", ".join(quoted(s) for s in supported)
    return ("FieldValueNotSupported", field,
            f"{field}: Unsupported value: {quoted(value)}: supported values: {options}")


def forbidden(field: str, detail: str) -> Cause:
    return ("FieldValueForbidden", field, f"{field}: Forbidden: {detail}")


