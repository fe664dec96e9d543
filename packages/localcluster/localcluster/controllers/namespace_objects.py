"""What kube-controller-manager keeps in every namespace: its `default` ServiceAccount (the
serviceaccount controller) and the `kube-root-ca.crt` ConfigMap (the root-ca-cert-publisher).

Both are made when a namespace is created, made again when deleted, and the ConfigMap's `ca.crt`
and description annotation are put back when changed; nothing is made in a namespace being
deleted. `ca.crt` is the CA of the server's certificate when localcluster serves TLS (the
certificate itself: it is self-signed); over plain HTTP there is no CA and it is empty.

The writes are synchronous, from the store's listener (subscribed after every other one, so the
watchers see the namespace before its objects): a pod created right after its namespace finds its
ServiceAccount, where a real cluster may answer "serviceaccount "default" not found" for a moment.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import ApiError
from ..storage.store import ADDED, DELETED, MODIFIED, Event

if TYPE_CHECKING:
    from ..api import Api

NAMESPACES, CONFIGMAPS, SERVICEACCOUNTS = ("", "namespaces"), ("", "configmaps"), ("", "serviceaccounts")
ROOT_CA = "kube-root-ca.crt"
DEFAULT_ACCOUNT = "default"
DESCRIPTION_KEY = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")
MANAGER = "kube-controller-manager"


class NamespaceObjects:
    def __init__(self, api: Api, ca: Callable[[], bytes | None]) -> None:
        self.api = api
        self.ca = ca

    def on_event(self, ev: Event) -> None:
        if ev.key == NAMESPACES:
            if ev.type in (ADDED, MODIFIED):
                self.ensure(ev.obj["metadata"]["name"])
            return
        name = ev.obj["metadata"]["name"]
        if (ev.key == CONFIGMAPS and name == ROOT_CA and ev.type in (DELETED, MODIFIED)) or \
                (ev.key == SERVICEACCOUNTS and name == DEFAULT_ACCOUNT and ev.type == DELETED):
            self.ensure(ev.obj["metadata"].get("namespace") or "")

    def ensure(self, namespace: str) -> None:
        ns = self.api.store.get(NAMESPACES, ("", namespace))
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return
        with self._as_controller():
            if self.api.store.get(SERVICEACCOUNTS, (namespace, DEFAULT_ACCOUNT)) is None:
                self._create("serviceaccounts", namespace, {"apiVersion": "v1", "kind": "ServiceAccount",
                                                            "metadata": {"name": DEFAULT_ACCOUNT}})
            data = {"ca.crt": (self.ca() or b"").decode()}
            current = self.api.store.get(CONFIGMAPS, (namespace, ROOT_CA))
            if current is None:
                self._create("configmaps", namespace, {
                    "apiVersion": "v1", "kind": "ConfigMap", "data": data,
                    "metadata": {"name": ROOT_CA, "annotations": {DESCRIPTION_KEY: DESCRIPTION}}})
            elif current.get("data") != data or \
                    (current["metadata"].get("annotations") or {}).get(DESCRIPTION_KEY) != DESCRIPTION:
                meta = dict(current["metadata"])
                meta["annotations"] = {**(meta.get("annotations") or {}), DESCRIPTION_KEY: DESCRIPTION}
                with contextlib.suppress(ApiError):  # changed or deleted meanwhile: its own event comes next
                    self.api.update(self.api.registry.builtin("", "v1", "configmaps"), namespace, ROOT_CA,
                                    {**current, "metadata": meta, "data": data})

    def _create(self, plural: str, namespace: str, obj: dict) -> None:
        with contextlib.suppress(ApiError):  # made meanwhile, or the namespace went away
            self.api.create(self.api.registry.builtin("", "v1", plural), namespace, obj)

    @contextlib.contextmanager
    def _as_controller(self):
        """Write as kube-controller-manager, whatever request the store event came from."""
        api = self.api
        saved = (api.user, api.manager, api.field_validation, api.warnings)
        api.user, api.manager, api.field_validation, api.warnings = None, MANAGER, "Ignore", []
        try:
            yield
        finally:
            api.user, api.manager, api.field_validation, api.warnings = saved
