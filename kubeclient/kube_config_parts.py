"""The pieces of kubernetes_asyncio's kubeconfig loader that loading.py uses (parsing and merging files, its
exception), imported without its ~1,300 generated modules: through the lean import, which must come first
(a plain `import kubernetes_asyncio.config` runs the package `__init__`s that load every generated class,
~33 MB more for the controller)."""

from __future__ import annotations

from kubeclient.lean_kubernetes_asyncio import kube_config  # noqa: F401 (first: see above)

# isort: split
from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.kube_config import ConfigNode, KubeConfigMerger

__all__ = ["ConfigException", "ConfigNode", "KubeConfigMerger"]
