"""kubernetes_asyncio's configuration and kubeconfig loading, without its ~1,300 generated API and model modules.

The project loads kubeconfig or in-cluster settings through `kubernetes_asyncio.config` (and sends its
requests through its own client, rest.py); it never uses the generated `CoreV1Api`/`V1Pod` classes. But
`kubernetes_asyncio.config` imports `kubernetes_asyncio.client.api_client`, which runs the package
`__init__`s of `kubernetes_asyncio`, `kubernetes_asyncio.client` and `kubernetes_asyncio.client.models`,
which import every generated class: some 40 MiB of a controller whose whole cache of 10,000 pods costs
less than that.

Importing this module first registers those three packages as module objects whose `__init__` has not
run yet (each with its real `__path__` and spec, so its submodules import as usual), then imports just
`configuration`, `rest`, `api_client` and `config`. Anything else asked of such a package (`client.V1Pod`,
`kubernetes_asyncio.watch`) is served by PEP 562's module `__getattr__`: a submodule of that name is
imported alone; any other name runs the package's real `__init__` once, and from then on the package is
exactly what a plain import makes. Tools and tests that use the generated classes keep working
unchanged; if kubernetes_asyncio was imported before this module, nothing is deferred.

Import `Configuration` and `kube_config` from here rather than from kubernetes_asyncio.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

_DEFERRED = ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.client.models")


def _defer_init(name: str) -> None:
    """Register package `name` with its `__init__` not yet run; see the module docstring."""
    if name in sys.modules:
        return  # imported already (whole, or deferred by an earlier call): nothing to save
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not an importable package")
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader  # (a local, so that its narrowing to not-None holds in the function below)

    def __getattr__(attr: str) -> object:
        if not attr.startswith("__") and importlib.util.find_spec(f"{name}.{attr}") is not None:
            return importlib.import_module(f"{name}.{attr}")  # binds it on the package, as any import does
        del package.__getattr__  # the real __init__ decides what exists from now on
        loader.exec_module(package)
        return getattr(package, attr)

    # A module's __getattr__ (PEP 562) set from outside, the deferral itself; mypy takes it for a method.
    package.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = package
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, package)


def _load() -> tuple[ModuleType, ...]:
    for name in _DEFERRED:
        _defer_init(name)
    # Plain import statements, once the packages are deferred (and so that -X importtime reports them).
    import kubernetes_asyncio.client.api_client
    import kubernetes_asyncio.client.configuration

    client = kubernetes_asyncio.client
    if "__getattr__" in vars(client):
        # What `config` takes from the package (`from kubernetes_asyncio.client import ApiClient`): the
        # very objects its __init__ would bind, bound now so that asking for them defers nothing.
        # (Binding names on a module whose __init__ has not run: mypy, which sees the classes bound, refuses.)
        client.ApiClient = client.api_client.ApiClient  # type: ignore[misc]
        client.Configuration = client.configuration.Configuration  # type: ignore[misc]
    import kubernetes_asyncio.config

    return client.configuration, client.api_client, kubernetes_asyncio.config


_configuration, _api_client, kube_config = _load()
ApiClient = _api_client.ApiClient
Configuration = _configuration.Configuration

__all__ = ["ApiClient", "Configuration", "kube_config"]
