"""CustomResourceDefinitions: the names' validation, and the status the server gives an accepted one."""

from __future__ import annotations

from .causes import Cause, invalid_value, not_supported, required


def validate_crd(crd: dict) -> list[Cause]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out = []
    for field in ("group", "names", "scope", "versions"):
        if not spec.get(field):
            out.append(required(f"spec.{field}"))
    for field in ("plural", "kind"):
        if not names.get(field):
            out.append(required(f"spec.names.{field}"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        out.append(not_supported("spec.scope", spec.get("scope"), ["Cluster", "Namespaced"]))
    expected = f"{names.get('plural')}.{spec.get('group')}"
    if crd.get("metadata", {}).get("name") != expected:
        out.append(invalid_value("metadata.name", crd.get("metadata", {}).get("name"),
                                 "must be spec.names.plural+\".\"+spec.group"))
    versions = spec.get("versions") or []
    if versions and sum(1 for v in versions if v.get("storage")) != 1:
        out.append(invalid_value("spec.versions", "", "must have exactly one version marked as storage version"))
    return out


def crd_status(crd: dict, now: str) -> dict:
    spec = crd["spec"]
    cond = {"lastTransitionTime": now, "status": "True"}
    return {
        "acceptedNames": dict(spec["names"]),
        "conditions": [
            {**cond, "type": "NamesAccepted", "reason": "NoConflicts", "message": "no conflicts found"},
            {**cond, "type": "Established", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted"},
        ],
        "storedVersions": [v["name"] for v in spec.get("versions") or [] if v.get("storage")],
    }
