"""What localcluster's deployment and ReplicaSet controllers share: a sync queue, Events, pod readiness.

Both run in the server's event loop, on the store's change events, as kube-controller-manager's run on
their informers: a key is synced once however many events queue it, and again at a time asked for
(a pod's minReadySeconds, a rollout's progress deadline). Their writes carry the field manager
`kube-controller-manager`, and their Events are what client-go's legacy recorder writes for them: a
core/v1 Event named `<object>.<hex nanoseconds>`, `source.component` and `reportingComponent` the
controller's name (`deployment-controller`, `replicaset-controller`), no reportingInstance; a repeat
of the same Event raises its `count`, as the recorder's correlator does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from apimachinery.selectors import SelectorError

from ..api import Api, now_rfc3339
from ..errors import ApiError
from ..storage.resources import ResourceType
from ..validation import label_selector_from_dict

log = logging.getLogger("localcluster.workloads")

MANAGER = "kube-controller-manager"
EVENTS = ("", "events")
PODS = ("", "pods")
Key = tuple[str, str]


class SyncQueue:
    """Keys synced once per loop turn however often queued, and again after a delay when asked."""

    def __init__(self, sync: Callable[[Key], None]) -> None:
        self._sync = sync
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: set[Key] = set()
        self._timers: dict[Key, asyncio.TimerHandle] = {}

    @property
    def running(self) -> bool:
        return self._loop is not None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()

    def stop(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._loop = None

    def add(self, key: Key) -> None:
        if key not in self._pending and self._loop is not None:
            self._pending.add(key)
            self._loop.call_soon(self._run, key)

    def _run(self, key: Key) -> None:
        self._pending.discard(key)
        self._sync(key)

    def later(self, key: Key, delay: float) -> None:
        """Sync again after `delay`; the earliest time asked for wins."""
        if self._loop is None:
            return
        handle = self._timers.get(key)
        when = self._loop.time() + delay
        if handle is not None and not handle.cancelled() and handle.when() <= when:
            return
        if handle is not None:
            handle.cancel()
        self._timers[key] = self._loop.call_at(when, self.add, key)

    def forget(self, key: Key) -> None:
        handle = self._timers.pop(key, None)
        if handle is not None:
            handle.cancel()


@contextlib.contextmanager
def as_controller(api: Api) -> Iterator[None]:
    """The writes made inside are kube-controller-manager's (managedFields), not the request's."""
    before = api.manager
    api.manager = MANAGER
    try:
        yield
    finally:
        api.manager = before


class Recorder:
    """Events about objects, as client-go's legacy recorder writes them for one component."""

    def __init__(self, api: Api, component: str) -> None:
        self.api = api
        self.component = component
        # (involved uid, type, reason, message) -> the Event's (namespace, name), for repeats
        self._sent: dict[tuple[str, str, str, str], tuple[str, str]] = {}

    def event(self, obj: dict, kind: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        rt = self.api.registry.builtin("", "v1", "events")
        key = (meta["uid"], kind, reason, message)
        now = now_rfc3339()
        sent = self._sent.get(key)
        earlier = self.api.store.get(EVENTS, sent) if sent is not None else None
        if earlier is not None:
            self.api.system_write(rt, {**earlier, "count": int(earlier.get("count") or 1) + 1, "lastTimestamp": now})
            return
        involved = {"kind": obj["kind"], "namespace": meta.get("namespace"), "name": meta["name"], "uid": meta["uid"],
                    "apiVersion": obj["apiVersion"], "resourceVersion": meta.get("resourceVersion", "")}
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": namespace},
                 "involvedObject": involved, "reason": reason, "message": message,
                 "source": {"component": self.component}, "firstTimestamp": now, "lastTimestamp": now, "count": 1,
                 "type": kind, "eventTime": None, "reportingComponent": self.component, "reportingInstance": ""}
        try:  # best effort, as the recorder's: a terminating namespace refuses it
            created = self.api.create(rt, namespace, event)
        except ApiError as err:
            log.debug("event %s on %s/%s not recorded: %s", reason, namespace, meta["name"], err.message)
            return
        if len(self._sent) > 10_000:  # the correlator's cache is bounded too
            self._sent.clear()
        self._sent[key] = (namespace, created["metadata"]["name"])


class WorkloadController:
    """What the deployment and ReplicaSet controllers share: a sync queue of object keys, an Event recorder
    under the component's name, and start/stop; a subclass gives COMPONENT, `_sync(key)` and `on_event`."""

    COMPONENT = ""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.store = api.store
        self.queue = SyncQueue(self._sync)
        self.recorder = Recorder(api, self.COMPONENT)

    def start(self) -> None:
        self.queue.start()

    async def stop(self) -> None:
        self.queue.stop()

    def _sync(self, key: Key) -> None:
        raise NotImplementedError


def controller_of(obj: dict, api_version: str, kind: str) -> dict | None:
    """The owner reference with controller: true, if it is of `kind`."""
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return ref if ref.get("kind") == kind and ref.get("apiVersion") == api_version else None
    return None


def controller_ref(owner: dict) -> dict:
    """metav1.NewControllerRef: what a controller puts on what it makes."""
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}


def owned(api: Api, owner: dict, key: tuple[str, str]) -> list[dict]:
    """The objects of bucket `key` whose controller is `owner` (by uid)."""
    uid = owner["metadata"]["uid"]
    out = []
    for store_key, okey in list(api.store.dependents.get(uid, ())):
        obj = api.store.get(store_key, okey) if store_key == key else None
        if obj is not None and any(r.get("uid") == uid and r.get("controller")
                                   for r in obj["metadata"].get("ownerReferences") or ()):
            out.append(obj)
    return out


def has_controller(obj: dict) -> bool:
    return any(ref.get("controller") for ref in obj["metadata"].get("ownerReferences") or ())


def selects(owner: dict, labels: dict) -> bool:
    """Whether the owner's spec.selector matches; an empty or invalid selector matches nothing here."""
    selector = (owner.get("spec") or {}).get("selector")
    if not selector:
        return False
    try:
        return label_selector_from_dict(selector).matches(labels)
    except SelectorError:
        return False


def claim(api: Api, owner: dict, rt: ResourceType) -> list[dict]:
    """ControllerRefManager's claim: the owner's objects of `rt` its selector matches, after adopting the
    orphans it matches and releasing its own it no longer matches (strategic merge patches of their
    ownerReferences). An owner being deleted adopts and releases nothing."""
    meta = owner["metadata"]
    deleting = bool(meta.get("deletionTimestamp"))
    mine = []
    for obj in owned(api, owner, rt.storage_key):
        if deleting or selects(owner, obj["metadata"].get("labels") or {}):
            mine.append(obj)
        else:
            _patch(api, rt, obj, {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": meta["uid"]}],
                                               "uid": obj["metadata"]["uid"]}})
    if deleting:
        return mine
    for obj in api.store.objects(rt.storage_key, meta["namespace"]):
        if has_controller(obj) or obj["metadata"].get("deletionTimestamp") or \
                not selects(owner, obj["metadata"].get("labels") or {}):
            continue
        adopted = _patch(api, rt, obj, {"metadata": {"ownerReferences": [controller_ref(owner)],
                                                     "uid": obj["metadata"]["uid"]}})
        if adopted is not None:
            mine.append(adopted)
    return mine


def _patch(api: Api, rt: ResourceType, obj: dict, patch: dict) -> dict | None:
    meta = obj["metadata"]
    try:
        return api.patch(rt, meta["namespace"], meta["name"], "application/strategic-merge-patch+json", patch)
    except ApiError as err:  # gone or changed meanwhile: its event syncs again
        log.debug("%s %s/%s: %s", rt.kind, meta["namespace"], meta["name"], err.message)
        return None


def ready_since(pod: dict) -> str | None:
    """When the pod's Ready condition turned True ("" if unknown); None if it is not ready."""
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            return cond.get("lastTransitionTime") or ""
    return None


def seconds_since(timestamp: str | None) -> float:
    if not timestamp:
        return 0.0
    then = datetime.strptime(timestamp[:19] + "Z", "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return (datetime.now(UTC) - then).total_seconds()


def active(pod: dict) -> bool:
    """controller.IsPodActive: not being deleted, not finished."""
    return not pod["metadata"].get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in (
        "Succeeded", "Failed")
