"""localcluster: an in-memory Kubernetes API server for tests and local runs.

`LocalCluster` serves the Kubernetes REST API over real HTTP with the semantics a controller can
notice: resourceVersions, watches with history and 410 Gone, conflicts, the status subresource,
CRD validation, graceful deletion and garbage collection, plus fault injection and pod runners.

The embedding API, for a program that runs a cluster in its process (the controller's `local`): `LocalCluster`,
its `Credentials`, `ApiError` (what its in-process API raises), the `ProcessRunner` of pods as local processes,
`private_directory` (a 0700 directory for kubeconfigs and logs), `exposure_warning` and `is_loopback` (what
serving on an address other than loopback means). The other public modules: `localcluster.testing` (the pytest
plugin and the tests' helpers), `localcluster.crd` (the CRD checks), `localcluster.host` (the machine's commands)
and `localcluster.__main__` (the `localcluster` command). Nothing outside localcluster imports another of its
modules, nor a name not in their `__all__` (tests/program/test_layers.py).

Each name is imported when first asked for, so that importing the package does not load a whole API server.
Nothing on the controller's production path imports this package; it imports only apimachinery.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .auth.credentials import Credentials
    from .auth.kubeconfig_file import private_directory
    from .cluster import LocalCluster
    from .endpoints.exposure import exposure_warning, is_loopback
    from .errors import ApiError
    from .kubelet.process_runner import ProcessRunner

_LAZY = {"LocalCluster": ".cluster", "private_directory": ".auth.kubeconfig_file", "Credentials": ".auth.credentials",
         "ApiError": ".errors", "ProcessRunner": ".kubelet.process_runner", "exposure_warning": ".endpoints.exposure",
         "is_loopback": ".endpoints.exposure"}

__all__ = ["ApiError", "Credentials", "LocalCluster", "ProcessRunner", "exposure_warning", "is_loopback",
           "private_directory"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
