"""Names and label values as Kubernetes validates them (k8s.io/apimachinery/pkg/util/validation): a qualified name
(a label key, an Event's reporting controller) and a label value, with the apiserver's messages word for word.
The label-selector parser checks its keys and values with them; localcluster validates objects with them."""

from __future__ import annotations

import re

_QUALIFIED_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


_DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


_NAME_CHARS_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
    " (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def qualified_name_errors(key: str) -> list[str]:
    """validation.IsQualifiedName (a label key, an Event's reporting controller): an optional DNS-subdomain
    prefix, '/', and a name; its messages word for word."""
    parts = key.split("/")
    if len(parts) > 2:
        return [f"a qualified name {_NAME_CHARS_MSG} with an optional DNS subdomain prefix and '/' "
                f"(e.g. 'example.com/MyName')"]
    errors = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        elif len(prefix) > 253:
            errors.append("prefix part must be no more than 253 characters")
        if prefix and not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
            errors.append(f"prefix part {SUBDOMAIN_MSG}")
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errors.append(f"name part {_NAME_CHARS_MSG}")
    return errors


def label_value_errors(value: str) -> list[str]:
    """validation.IsValidLabelValue: at most 63 characters, alphanumeric at both ends."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(f"a valid label must be an empty string or {_NAME_CHARS_MSG.removeprefix('must ')}")
    return errors
