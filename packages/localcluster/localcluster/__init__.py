"""localcluster: an in-memory Kubernetes API server for tests and local runs.

`LocalCluster` serves the Kubernetes REST API over real HTTP with the semantics a controller can
notice: resourceVersions, watches with history and 410 Gone, conflicts, the status subresource,
CRD validation, graceful deletion and garbage collection, plus fault injection and pod runners.

`LocalCluster` is imported when first asked for, so that the light parts (the pod runners' script
annotation, say) can be imported without loading a whole API server. Nothing on the controller's
production path imports this package (tests/program/test_layers.py); it imports only apimachinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .auth.credentials import Credentials
    from .cluster import LocalCluster

__all__ = ["Credentials", "LocalCluster"]


def __getattr__(name: str):
    if name == "LocalCluster":
        from .cluster import LocalCluster

        return LocalCluster
    if name == "Credentials":
        from .auth.credentials import Credentials

        return Credentials
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
