"""localcluster's face to tests, its own and the controller's: what a test may use of it besides the embedding API
(`localcluster`) and the CRD tools (`localcluster.crd`).

- the pytest plugin (`plugin`, loaded by its entry point): the `cluster` fixture, `api_client`, `core`, `custom`,
  and the `runner` marker;
- `Kubectl`: the real kubectl against a cluster, with timeouts (`kubectl_binary`, `ENV`, `TIMEOUT`);
- `until`: the one polling helper, for a condition no event reports;
- `starts_processes`: a fixture that starts processes makes its tests slow (`started_by_fixtures`);
- scripted pods (`SCRIPT_ANNOTATION`: the pod runner runs the annotation's script instead of the image), and
  `pod_scripts`, the runner's pieces for a kubelet of another server that follows the same scripts;
- the client CA (`ClientCa`, `trusting`: certificates for a client, a context that trusts a CA);
- the faults a test injects are the cluster's own (`cluster.faults`); the limits it probes (`MAX_REQUEST_BYTES`);
- the stored objects' key (`CRD_KEY`) and the defaults the server applies (`default_service`,
  `default_pod_template`), for tests that compare with what the server stores;
- the clock its authenticator reads (`drive_authentication_clock`: tokens expire by a test's fake clock);
- files as another user sees them (`NOBODY`, `read_as`, `world_traversable_directory`).

Nothing outside localcluster imports a module of it but this one, `localcluster` and `localcluster.crd`
(tests/program/test_layers.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .other_users import NOBODY, read_as, world_traversable_directory
from .processes import started_by_fixtures, starts_processes
from .waiting import until

if TYPE_CHECKING:
    from ..api import CRD_KEY
    from ..auth.client_certificates import ClientCa
    from ..auth.tls import trusting
    from ..endpoints.http import MAX_REQUEST_BYTES
    from ..kubelet.runner import SCRIPT_ANNOTATION
    from ..validation import default_pod_template, default_service
    from .clock import drive_authentication_clock
    from .kubectl import ENV, TIMEOUT, Kubectl, Lines, Result, kubectl_binary
    from .pod_scripts import pod_scripts

# Loaded when first asked for: `until` alone must not load an API server.
_LAZY = {
    "Kubectl": ".kubectl", "Lines": ".kubectl", "Result": ".kubectl", "ENV": ".kubectl", "TIMEOUT": ".kubectl",
    "kubectl_binary": ".kubectl",
    "SCRIPT_ANNOTATION": "..kubelet.runner", "pod_scripts": ".pod_scripts",
    "ClientCa": "..auth.client_certificates", "trusting": "..auth.tls",
    "MAX_REQUEST_BYTES": "..endpoints.http",
    "CRD_KEY": "..api",
    "default_service": "..validation.builtins", "default_pod_template": "..validation.builtins",
    "drive_authentication_clock": ".clock",
}

__all__ = [
    "CRD_KEY",
    "ENV",
    "MAX_REQUEST_BYTES",
    "NOBODY",
    "SCRIPT_ANNOTATION",
    "TIMEOUT",
    "ClientCa",
    "Kubectl",
    "Lines",
    "Result",
    "default_pod_template",
    "default_service",
    "drive_authentication_clock",
    "kubectl_binary",
    "pod_scripts",
    "read_as",
    "started_by_fixtures",
    "starts_processes",
    "trusting",
    "until",
    "world_traversable_directory",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
