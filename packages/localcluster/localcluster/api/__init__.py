"""The API's verbs on objects, independent of HTTP: what kube-apiserver's generic registry does.

Used by the HTTP layer (endpoints/http.py) and in-process by the garbage collector and pod runners.
Every method is synchronous and raises `ApiError` on failure. The rooms: objects (the names and helpers every
verb uses), base (what the verbs share: keys, storage, admission per kind), verbs (the Api itself).
"""

from __future__ import annotations

from .objects import (
           APPLY_PATCH,
           CRD_KEY,
           DEPLOYMENTS,
           NAME_CHARS,
           NAMESPACES,
           PODS,
           REPLICA_SETS,
           SERVER_MANAGER,
           SYSTEM_NAMESPACES,
           now_rfc3339,
           patched,
)
from .verbs import Api

__all__ = ["APPLY_PATCH", "CRD_KEY", "DEPLOYMENTS", "NAMESPACES", "NAME_CHARS", "PODS", "REPLICA_SETS",
           "SERVER_MANAGER",
           "SYSTEM_NAMESPACES", "Api", "now_rfc3339", "patched"]
