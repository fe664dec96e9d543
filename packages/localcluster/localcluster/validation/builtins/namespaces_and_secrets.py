"""Namespaces' and Secrets' defaults."""

from __future__ import annotations

# --- secrets ------------------------------------------------------------------------------------

def default_secret(secret: dict) -> None:
    """stringData is write-only: the apiserver folds it into base64 `data`."""
    import base64

    string_data = secret.pop("stringData", None) or {}
    if string_data:
        data = dict(secret.get("data") or {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        secret["data"] = data
    secret.setdefault("type", "Opaque")


# --- namespaces and CRDs ------------------------------------------------------------------------

def default_namespace(ns: dict) -> None:
    ns.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    ns["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = ns["metadata"]["name"]


