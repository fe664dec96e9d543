"""The endpoints and EndpointSlice controllers: every Service with a selector gets an Endpoints named as it
and EndpointSlices named `<service>-<random>`, listing the pods it selects (endpoint_objects.py), as
kube-controller-manager's two controllers keep them.

A Service without a selector, or of type ExternalName, is left alone: its endpoints are the user's. The
Endpoints carries the Service's labels and `endpoints.kubernetes.io/managed-by`, no owner (the controller
deletes it with the Service, as the real one does); the slices are owned by the Service (the garbage
collector takes them with it) and labelled with its name and their manager. Each is written only when
what it lists or its labels changed (the real controllers compare too), so a pod's status change that
moves no address writes nothing. Syncs are queued by Service, on changes of Services, of the pods a
selector matched before or after, and of the controllers' own objects deleted or edited by others.
"""

from __future__ import annotations

import logging

from ..errors import ApiError
from ..storage.resources import ResourceType
from ..storage.store import DELETED, Event
from . import endpoint_objects as shapes
from .endpoint_index import PODS, SERVICES, SLICES, EndpointIndexes
from .service_endpoints import backends, endpoint_view, selects
from .workloads import Key, WorkloadController, as_controller, controller_ref

log = logging.getLogger("localcluster.endpoints")
ENDPOINTS = ("", "endpoints")
RETRY = 1.0  # seconds before a sync whose write was refused (a conflict, a terminating namespace) runs again


def _managed_by_us(slice_: dict) -> tuple[str, str] | None:
    """The (namespace, Service name) of a slice this controller manages, else None."""
    labels = slice_["metadata"].get("labels") or {}
    if labels.get(shapes.SLICE_MANAGED_BY) != shapes.SLICE_CONTROLLER or not labels.get(shapes.SERVICE_NAME):
        return None
    return (slice_["metadata"].get("namespace") or "", labels[shapes.SERVICE_NAME])


class EndpointsController(WorkloadController):
    COMPONENT = "endpoint-controller"

    def __init__(self, api) -> None:
        super().__init__(api)
        # While a sync writes: the store reports each write synchronously, and the controller's own writes
        # must not queue the Service again.
        self._writing = False
        self.indexes = EndpointIndexes(_managed_by_us)

    def on_event(self, ev: Event) -> None:
        self.indexes.update(ev)  # kept while stopped too: the store's events are the only way to learn of objects
        if not self.queue.running:
            return
        meta = ev.obj["metadata"]
        namespace = meta.get("namespace", "")
        if ev.key == SERVICES:
            self.queue.add((namespace, meta["name"]))
        elif ev.key == PODS:
            if ev.type != DELETED and endpoint_view(ev.obj) == endpoint_view(ev.old):
                return
            for key in self.indexes.services_for(ev.obj, ev.old):
                service = self.store.get(SERVICES, key)
                if service is not None and any(pod is not None and selects(service, pod) for pod in (ev.obj, ev.old)):
                    self.queue.add(key)
        elif ev.key in (ENDPOINTS, SLICES) and not self._writing:
            if ev.key == ENDPOINTS and ev.type == DELETED:
                self.queue.add((namespace, meta["name"]))
            elif ev.key == SLICES and (meta.get("labels") or {}).get(shapes.SLICE_MANAGED_BY) == \
                    shapes.SLICE_CONTROLLER:
                self.queue.add((namespace, (meta.get("labels") or {}).get(shapes.SERVICE_NAME, "")))

    def _sync(self, key: Key) -> None:
        service = self.store.get(SERVICES, key)
        self._writing = True
        try:
            with as_controller(self.api):
                if service is None:
                    self._delete(ENDPOINTS, self.store.get(ENDPOINTS, key))
                    return
                spec = service.get("spec") or {}
                if spec.get("type") == "ExternalName" or not spec.get("selector"):
                    return
                pods = [p for k in self.indexes.pods_for(service) if (p := self.store.get(PODS, k)) is not None]
                self._sync_endpoints(service, backends(service, pods))
                self._sync_slices(service, backends(service, pods, with_terminating=True))
        except ApiError as err:
            log.debug("endpoints of %s/%s: %s; retrying", *key, err.message)
            self.queue.later(key, RETRY)
        finally:
            self._writing = False

    def _rt(self, key: tuple[str, str]) -> ResourceType:
        return self.api.registry.builtin(key[0], "v1", key[1])

    def _delete(self, key: tuple[str, str], obj: dict | None) -> None:
        if obj is None:
            return
        meta = obj["metadata"]
        try:
            self.api.delete(self._rt(key), meta["namespace"], meta["name"], {"preconditions": {"uid": meta["uid"]}})
        except ApiError as err:
            if err.code != 404:  # gone already: what was wanted
                raise

    def _sync_endpoints(self, service: dict, found: list) -> None:
        meta = service["metadata"]
        current = self.store.get(ENDPOINTS, (meta["namespace"], meta["name"]))
        subsets = shapes.subsets(service, found)
        labels = shapes.endpoints_labels(service)
        if current is not None and (current.get("subsets") or []) == subsets and \
                (current["metadata"].get("labels") or {}) == labels:
            return
        new_meta = {**(current or {}).get("metadata", {}), "name": meta["name"], "namespace": meta["namespace"],
                    "labels": labels}
        desired = {"apiVersion": "v1", "kind": "Endpoints", "metadata": new_meta}
        if subsets:
            desired["subsets"] = subsets
        rt = self._rt(ENDPOINTS)
        if current is None:
            self.api.create(rt, meta["namespace"], desired)
        else:
            self.api.update(rt, meta["namespace"], meta["name"], desired)

    def _sync_slices(self, service: dict, found: list) -> None:
        """Reuse the slices whose ports match, rewrite those that differ, create the missing, delete the rest
        (and any not owned by this Service: one of an earlier Service of the same name)."""
        meta = service["metadata"]
        labels = shapes.slice_labels(service)
        owner = controller_ref(service)
        existing = [s for k in sorted(self.indexes.slices.get((meta["namespace"], meta["name"])))
                    if (s := self.store.get(SLICES, k)) is not None and not s["metadata"].get("deletionTimestamp")]
        stale = [s for s in existing if not any(r.get("uid") == meta["uid"] and r.get("controller")
                                                for r in s["metadata"].get("ownerReferences") or ())]
        spare = [s for s in existing if s not in stale]
        rt = self._rt(SLICES)
        for ports, endpoints in shapes.slice_contents(service, found):
            reused = next((s for s in spare if s.get("ports") == ports), None)
            if reused is None:
                desired = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                           "metadata": {"generateName": f"{meta['name']}-", "namespace": meta["namespace"],
                                        "labels": labels, "ownerReferences": [owner]},
                           "addressType": "IPv4", "endpoints": endpoints, "ports": ports}
                self.api.create(rt, meta["namespace"], desired)
                continue
            spare.remove(reused)
            if reused.get("endpoints") == endpoints and reused["metadata"].get("labels") == labels:
                continue
            updated = {**reused, "metadata": {**reused["metadata"], "labels": labels}, "endpoints": endpoints}
            self.api.update(rt, meta["namespace"], reused["metadata"]["name"], updated)
        for leftover in stale + spare:
            self._delete(SLICES, leftover)
