"""Which Services may select a pod, which pods a Service may select, and which slices are a Service's, without
scanning a namespace: the endpoints controller's indexes, kept from the store's events.

A scan per event made a burst quadratic (every pod event looked at every Service of its namespace, every sync
at every pod: 2,000 pods and 2,000 Services took the server from 10 to 90 s of CPU). Instead pods are indexed
by each label (namespace, key, value), Services by one pair of their selector (the smallest), and managed
slices by the Service named in their label. A candidate found this way is then checked in full (`selects`):
the indexes only narrow the search, so they never decide what a selector matches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..storage.store import DELETED, Event, ObjKey, obj_key

Pair = tuple[str, str, str]  # (namespace, label key, label value)
PODS = ("", "pods")
SERVICES = ("", "services")
SLICES = ("discovery.k8s.io", "endpointslices")


def _labels(obj: dict | None) -> set[Pair]:
    if obj is None:
        return set()
    meta = obj["metadata"]
    namespace = meta.get("namespace") or ""
    return {(namespace, key, value) for key, value in (meta.get("labels") or {}).items()}


def selector_pair(service: dict | None) -> set[Pair]:
    """The pair a Service is indexed by: the smallest of its selector (none without a selector)."""
    if service is None:
        return set()
    selector = (service.get("spec") or {}).get("selector") or {}
    if not selector:
        return set()
    return {(service["metadata"].get("namespace") or "", *min(selector.items()))}


class Index:
    def __init__(self) -> None:
        self._entries: dict[object, set[ObjKey]] = {}

    def move(self, okey: ObjKey, before: set, after: set) -> None:
        for entry in before - after:
            keys = self._entries.get(entry)
            if keys is not None:
                keys.discard(okey)
                if not keys:
                    del self._entries[entry]
        for entry in after - before:
            self._entries.setdefault(entry, set()).add(okey)

    def get(self, entry: object) -> set[ObjKey]:
        return self._entries.get(entry, set())

    def union(self, entries: Iterable[object]) -> set[ObjKey]:
        found: set[ObjKey] = set()
        for entry in entries:
            found |= self.get(entry)
        return found


def before_after(ev: Event) -> tuple[dict | None, dict | None]:
    """The object before and after the event (None where it did not exist)."""
    if ev.type == DELETED:
        return ev.obj, None
    return ev.old, ev.obj


class EndpointIndexes:
    """Pods by label, Services by selector pair, managed slices by Service name."""

    def __init__(self, slice_service: Callable[[dict], tuple[str, str] | None]) -> None:
        self.pods = Index()
        self.services = Index()
        self.slices = Index()
        self._slice_service = slice_service  # a slice -> (namespace, its Service's name), or None if not managed

    def update(self, ev: Event) -> None:
        if ev.key not in (PODS, SERVICES, SLICES):
            return
        before, after = before_after(ev)
        okey = obj_key(ev.obj)
        if ev.key == PODS:
            self.pods.move(okey, _labels(before), _labels(after))
        elif ev.key == SERVICES:
            self.services.move(okey, selector_pair(before), selector_pair(after))
        else:
            self.slices.move(okey, self._managed(before), self._managed(after))

    def _managed(self, slice_: dict | None) -> set:
        found = self._slice_service(slice_) if slice_ is not None else None
        return {found} if found is not None else set()

    def services_for(self, *pods: dict | None) -> set[ObjKey]:
        """The Services that may select any of `pods` (candidates: check each with `selects`)."""
        return self.services.union(pair for pod in pods for pair in _labels(pod))

    def pods_for(self, service: dict) -> set[ObjKey]:
        """The pods the Service may select (candidates: check each with `selects`)."""
        return self.pods.union(selector_pair(service))
