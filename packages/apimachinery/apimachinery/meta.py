"""Helpers on an object's metadata that every layer needs: its key and its controlling owner."""

from __future__ import annotations

from typing import Any


def object_key(obj: dict[str, Any]) -> str:
    """`namespace/name` (`name` for a cluster-scoped object): the work queue's key and the cache's."""
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else meta["name"]


def controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The ownerReference marked `controller: true`, if any (at most one, as the API server enforces)."""
    refs: list[dict[str, Any]] = obj["metadata"].get("ownerReferences") or []
    for ref in refs:
        if ref.get("controller"):
            return ref
    return None


def controller_uid(obj: dict[str, Any]) -> str | None:
    """The uid of the object's controlling owner, if any."""
    ref = controller_ref(obj)
    return ref.get("uid") if ref is not None else None
