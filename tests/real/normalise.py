"""What of an API answer the differential test compares, with what legitimately differs between two servers
left out (uids, timestamps, resourceVersions, managedFields, generated names, continue tokens)."""

from __future__ import annotations

import re

UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")  # in a message (a precondition's)
TOO_OLD = re.compile(r"(too old resource version: \d+ )\(\d+\)")  # the oldest it holds, the server's own
PAYLOAD = ("data", "stringData", "spec", "rules", "type", "status")


ROOT_CA = "kube-root-ca.crt"


def summary(code: int, body: dict | None) -> dict:
    """The code, and: for a Status its reason and message; for a list its kind, item names and whether a continue
    token says there is more; for a watch its events (bookmarks left out); for an object its kind, name,
    namespace, labels, annotations and payload (spec, data, rules)."""
    body = body or {}
    if body.get("kind") == "Status":
        message = TOO_OLD.sub(r"\1(N)", UID.sub("<uid>", body.get("message") or ""))
        return {"code": code, "reason": body.get("reason"), "message": message}
    if "events" in body:  # a watch: its events but the bookmarks, which come when the server's timer says
        return {"code": code, "events": [(e["type"], summary(e["object"].get("code", 200), e["object"]))
                                         for e in body["events"] if e["type"] != "BOOKMARK"]}
    if "items" in body:
        # Not the namespace's kube-root-ca.crt: the real server's publisher writes it a moment after the namespace
        # is made (localcluster at once), so whether a list in a new namespace has it yet is a race.
        names = (i.get("metadata", {}).get("name", "") for i in body["items"] or ())
        return {"code": code, "kind": body.get("kind"), "more": bool((body.get("metadata") or {}).get("continue")),
                "items": sorted(name for name in names if name != ROOT_CA)}
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
