"""What of an API answer the differential test compares, with what legitimately differs between two servers
left out (uids, timestamps, resourceVersions, managedFields, generated names, continue tokens)."""

from __future__ import annotations

PAYLOAD = ("data", "stringData", "spec", "rules", "type", "status")


def summary(code: int, body: dict | None) -> dict:
    """The code, and: for a Status its reason and message; for a list its kind and item names; for an object its
    kind, name, namespace, labels, annotations and payload (spec, data, rules)."""
    body = body or {}
    if body.get("kind") == "Status":
        return {"code": code, "reason": body.get("reason"), "message": body.get("message")}
    if "items" in body:
        return {"code": code, "kind": body.get("kind"),
                "items": sorted(i.get("metadata", {}).get("name", "") for i in body["items"] or ())}
    meta = body.get("metadata") or {}
    name = meta.get("name")
    if meta.get("generateName") and name:
        name = meta["generateName"] + "*"  # the random suffix
    shown = {"code": code, "kind": body.get("kind"), "name": name, "namespace": meta.get("namespace"),
             "labels": meta.get("labels"), "annotations": meta.get("annotations"),
             "deleting": bool(meta.get("deletionTimestamp"))}
    if body.get("kind") not in ("Pod", "Service"):  # their servers' defaults are compared in their own tests
        shown.update({k: body[k] for k in PAYLOAD if k in body and k != "status"})
    return shown
