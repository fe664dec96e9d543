"""The in-memory etcd: objects, one global resourceVersion counter, a bounded event history.

Stored objects are immutable snapshots: every write stores a new dict and never touches the old
one, so watchers and continue-token snapshots can share them without copying.
The history keeps past events serialised: hundreds of thousands of superseded versions held as
dicts are millions of objects for Python's cyclic GC to walk, and each full collection paused the
server for 100-300 ms every few seconds under load (a Go API server has no such pause). Only a
watch that starts in the past reads it back.
All methods are synchronous; the asyncio server calls them between awaits, so no locks.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from .compaction import Compactor

StorageKey = tuple[str, str]  # (group, plural)
ObjKey = tuple[str, str]  # (namespace or "", name)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


@dataclass(slots=True)
class Event:
    rv: int
    key: StorageKey
    type: str
    obj: dict
    old: dict | None  # the previous state, for MODIFIED and DELETED


@dataclass(slots=True)
class _Past:
    """An event in the history: its objects as one JSON blob, invisible to the cyclic GC."""

    rv: int
    key: StorageKey
    type: str
    blob: bytes  # [obj, old]

    @classmethod
    def of(cls, ev: Event) -> _Past:
        return cls(ev.rv, ev.key, ev.type, orjson.dumps((ev.obj, ev.old)))

    def event(self) -> Event:
        obj, old = orjson.loads(self.blob)
        return Event(self.rv, self.key, self.type, obj, old)


def obj_key(obj: dict) -> ObjKey:
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


def owner_uids(obj: dict) -> list[str]:
    return [ref["uid"] for ref in obj["metadata"].get("ownerReferences") or () if "uid" in ref]


class Store:
    def __init__(self, history_size: int = 10_000) -> None:
        self.rv = 0
        self.buckets: dict[StorageKey, dict[ObjKey, dict]] = defaultdict(dict)
        self.history: deque[_Past] = deque()
        self.history_size = history_size
        # Every event with rv <= compacted_rv has left the history (the count bound, or expire_history).
        self.compacted_rv = 0
        # etcd's periodic compaction, by time: a read at an older exact revision is refused (compaction.py).
        self.compactor = Compactor()
        # owner uid -> dependents, for the garbage collector.
        self.dependents: dict[str, set[tuple[StorageKey, ObjKey]]] = defaultdict(set)
        self._listeners: list[Callable[[Event], None]] = []

    def subscribe(self, listener: Callable[[Event], None]) -> None:
        """Call `listener(event)` synchronously after every write (watch fan-out, GC, runner)."""
        self._listeners.append(listener)

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def get(self, key: StorageKey, okey: ObjKey) -> dict | None:
        return self.buckets[key].get(okey)

    def objects(self, key: StorageKey, namespace: str | None = None) -> list[dict]:
        bucket = self.buckets[key]
        if namespace is None:
            return list(bucket.values())
        return [o for (ns, _), o in bucket.items() if ns == namespace]

    def put(self, key: StorageKey, obj: dict, rv: int) -> Event:
        """Store `obj` (whose metadata.resourceVersion is already str(rv)) and record the event."""
        okey = obj_key(obj)
        bucket = self.buckets[key]
        old = bucket.get(okey)
        bucket[okey] = obj
        self._reindex(key, okey, old, obj)
        return self._record(Event(rv, key, MODIFIED if old is not None else ADDED, obj, old))

    def remove(self, key: StorageKey, okey: ObjKey, final: dict, rv: int) -> Event:
        """Delete an object; `final` is its last state carrying the deletion's resourceVersion."""
        old = self.buckets[key].pop(okey)
        self._reindex(key, okey, old, None)
        return self._record(Event(rv, key, DELETED, final, old))

    def drop_bucket(self, key: StorageKey) -> None:
        self.buckets.pop(key, None)

    def expire_history(self) -> None:
        """Forget every past event: a watch from any earlier version now gets 410 Gone."""
        self.history.clear()
        self.compacted_rv = self.rv

    def objects_at(self, key: StorageKey, rv: int, namespace: str | None = None) -> list[dict] | None:
        """The objects of `key` as they were at revision `rv` (etcd's read at a revision); None once compacted.

        Rebuilt from the current state by undoing, newest first, every event after `rv`.
        """
        if rv < self.compacted_rv:
            return None
        state = dict(self.buckets[key])
        for past in reversed(self.history):
            if past.rv <= rv:
                break
            if past.key != key:
                continue
            ev = past.event()
            okey = obj_key(ev.obj)
            if ev.type == ADDED:
                state.pop(okey, None)
            else:
                state[okey] = ev.old
        if namespace is None:
            return list(state.values())
        return [o for (ns, _), o in state.items() if ns == namespace]

    def events_since(self, rv: int, key: StorageKey) -> list[Event] | None:
        """Events of `key` after `rv`, oldest first; None when `rv` is older than the history."""
        if rv < self.compacted_rv:
            return None
        out = []
        for past in reversed(self.history):
            if past.rv <= rv:
                break
            if past.key == key:
                out.append(past)
        return [past.event() for past in reversed(out)]

    def etcd_compacted(self) -> int:
        """The oldest revision a read at an exact revision may still ask for."""
        return self.compactor.tick(self.rv)

    def _record(self, ev: Event) -> Event:
        self.compactor.tick(ev.rv - 1)  # a tick due before this write saw the revision before it
        if len(self.history) >= self.history_size:
            self.compacted_rv = self.history.popleft().rv
        self.history.append(_Past.of(ev))
        for listener in self._listeners:
            listener(ev)
        return ev

    def _reindex(self, key: StorageKey, okey: ObjKey, old: dict | None, new: dict | None) -> None:
        before = owner_uids(old) if old is not None else []
        after = owner_uids(new) if new is not None else []
        if before == after:
            return
        ref = (key, okey)
        for uid in before:
            deps = self.dependents.get(uid)
            if deps is not None:
                deps.discard(ref)
                if not deps:
                    del self.dependents[uid]
        for uid in after:
            self.dependents[uid].add(ref)
