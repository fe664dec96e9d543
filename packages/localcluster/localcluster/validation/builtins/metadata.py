"""Names and metadata, for every kind: ValidateObjectMeta's checks and the annotations' size."""

from __future__ import annotations

from apimachinery.validation import SUBDOMAIN_MSG, qualified_name_errors

from .causes import (
    DNS1035_LABEL,
    DNS1035_MSG,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    LABEL1123_MSG,
    LABEL_VALUE,
    LABEL_VALUE_MSG,
    Cause,
    invalid_value,
    required,
)

# --- names and metadata, for every kind ---------------------------------------------------------

def name_errors(name: str, field: str, style: str) -> list[Cause]:
    """Validate a name as a subdomain (most kinds), an RFC 1123 label, a DNS-1035 label (services) or a
    path segment (RBAC kinds: `system:aggregate-to-edit`)."""
    if style == "path":
        if name in (".", ".."):
            return [invalid_value(field, name, f"may not be '{name}'")]
        return [invalid_value(field, name, f"may not contain '{c}'") for c in ("/", "%") if c in name]
    limit, pattern, msg = {
        "subdomain": (253, DNS1123_SUBDOMAIN, SUBDOMAIN_MSG),
        "label": (63, DNS1123_LABEL, LABEL1123_MSG),
        "dns1035": (63, DNS1035_LABEL, DNS1035_MSG),
    }[style]
    out = []
    if len(name) > limit:
        out.append(invalid_value(field, name, f"must be no more than {limit} characters"))
    if not pattern.match(name):
        out.append(invalid_value(field, name, msg))
    return out


NAME_STYLE = {("", "services"): "dns1035", ("", "namespaces"): "label",
              **{("rbac.authorization.k8s.io", p): "path" for p in ("roles", "rolebindings", "clusterroles",
                                                                     "clusterrolebindings")}}


ANNOTATIONS_LIMIT = 256 * 1024  # TotalAnnotationSizeLimitB: keys and values, in bytes


def annotations_too_long(meta: dict) -> bool:
    """ValidateAnnotationsSize: a client-side `kubectl apply` keeps the whole object in an annotation, so this
    is what refuses an object too large for it."""
    annotations = meta.get("annotations") or {}
    return sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items()) > ANNOTATIONS_LIMIT


def metadata_errors(obj: dict, style: str) -> list[Cause]:
    meta = obj.get("metadata") or {}
    out = []
    if annotations_too_long(meta):
        out.append(("FieldValueTooLong", "metadata.annotations",
                    f"metadata.annotations: Too long: may not be more than {ANNOTATIONS_LIMIT} bytes"))
    name = meta.get("name")
    if not name:
        out.append(required("metadata.name", "name or generateName is required"))
    else:
        out.extend(name_errors(name, "metadata.name", style))
    for key, value in (meta.get("labels") or {}).items():
        if not isinstance(value, str) or len(value) > 63:
            out.append(invalid_value("metadata.labels", value, "must be no more than 63 characters"))
        elif not LABEL_VALUE.match(value):
            out.append(invalid_value("metadata.labels", value, LABEL_VALUE_MSG))
        if not _valid_label_key(key):
            out.append(invalid_value("metadata.labels", key, "name part must consist of alphanumeric "
                                     "characters, '-', '_' or '.', and must start and end with an "
                                     "alphanumeric character"))
    for i, ref in enumerate(meta.get("ownerReferences") or ()):
        for part in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(part):
                out.append(required(f"metadata.ownerReferences[{i}].{part}"))
    if sum(1 for ref in meta.get("ownerReferences") or () if ref.get("controller")) > 1:
        out.append(invalid_value("metadata.ownerReferences", "", "Only one reference can have Controller set "
                                 "to true"))
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:  # kept as given by kinds that track none
        out.append(invalid_value("metadata.generation", generation, "must be greater than or equal to 0"))
    return out


def _valid_label_key(key: str) -> bool:
    return not qualified_name_errors(key)


