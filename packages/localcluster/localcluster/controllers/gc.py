"""Garbage collection through ownerReferences, and namespace clean-up.

Like kube-controller-manager's collector it runs asynchronously after the write that triggers
it: dependents of a deleted owner are deleted (Background), an owner deleted in Foreground
waits until its dependents are gone, an Orphan deletion strips the owner's references from
its dependents, and an object whose owners never existed is deleted.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from ..api import NAMESPACES, Api
from ..errors import ApiError
from ..storage.deletion import FOREGROUND, ORPHAN
from ..storage.store import ADDED, DELETED, Event, StorageKey, obj_key

log = logging.getLogger("localcluster.gc")
MANAGER = "kube-controller-manager"  # whose name its writes carry in managedFields, as a real collector's


class GarbageCollector:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.store = api.store
        self.registry = api.registry
        self._work: deque[tuple] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def on_event(self, ev: Event) -> None:
        meta = ev.obj["metadata"]
        if ev.type == DELETED:
            self._push(("dependents", meta["uid"]))
            for ref in meta.get("ownerReferences") or ():
                self._push(("owner", ev.key, meta.get("namespace", ""), ref))
            return
        if ev.type == ADDED and meta.get("ownerReferences"):
            self._push(("dangling", ev.key, obj_key(ev.obj)))
        if meta.get("deletionTimestamp"):
            if ev.key == NAMESPACES:
                self._push(("namespace", meta["name"]))
            elif FOREGROUND in (meta.get("finalizers") or ()) or ORPHAN in (meta.get("finalizers") or ()):
                self._push(("finalize", ev.key, obj_key(ev.obj)))

    def _push(self, item: tuple) -> None:
        self._work.append(item)
        self._wake.set()

    def idle(self) -> bool:
        return not self._work

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._work:
                item = self._work.popleft()
                try:
                    getattr(self, "_" + item[0])(*item[1:])
                except ApiError as err:
                    if err.code not in (404, 409):
                        log.warning("gc %s: %s", item[0], err.message)
                except Exception:
                    log.exception("gc %s failed", item[0])
                await asyncio.sleep(0)

    # --- helpers ---------------------------------------------------------------------------

    def _owner_exists(self, namespace: str, ref: dict) -> dict | None:
        rt = self.registry.by_kind(ref.get("apiVersion", ""), ref.get("kind", ""))
        if rt is None:
            return None
        owner = self.store.get(rt.storage_key, (namespace if rt.namespaced else "", ref.get("name", "")))
        return owner if owner is not None and owner["metadata"]["uid"] == ref.get("uid") else None

    def _dependents_of(self, uid: str) -> list[tuple[StorageKey, dict]]:
        out = []
        for key, okey in list(self.store.dependents.get(uid, ())):
            obj = self.store.get(key, okey)
            if obj is not None:
                out.append((key, obj))
        return out

    def _delete(self, key: StorageKey, obj: dict, policy: str) -> None:
        rt = self.registry.for_storage(key)
        if rt is None or (obj["metadata"].get("deletionTimestamp") and policy != "Foreground"):
            return
        meta = obj["metadata"]
        self.api.delete(rt, meta.get("namespace"), meta["name"],
                        {"propagationPolicy": policy, "preconditions": {"uid": meta["uid"]}})

    def _strip_refs(self, key: StorageKey, obj: dict, uids: set[str]) -> None:
        rt = self.registry.for_storage(key)
        if rt is None:  # its kind is no longer served (its CRD deleted meanwhile)
            return
        refs = [r for r in obj["metadata"].get("ownerReferences") or () if r.get("uid") not in uids]
        meta = {**obj["metadata"], "ownerReferences": refs}
        if not refs:
            del meta["ownerReferences"]
        self.api.system_write(rt, {**obj, "metadata": meta}, MANAGER)

    # --- work items -----------------------------------------------------------------------

    def _dependents(self, owner_uid: str) -> None:
        """An owner is gone: delete each dependent none of whose other owners remain."""
        for key, dep in self._dependents_of(owner_uid):
            namespace = dep["metadata"].get("namespace", "")
            refs = dep["metadata"].get("ownerReferences") or ()
            alive = [r for r in refs if r.get("uid") != owner_uid and self._owner_exists(namespace, r)]
            if alive:
                self._strip_refs(key, dep, {r["uid"] for r in refs if r not in alive})
            else:
                self._delete(key, dep, "Background")

    def _dangling(self, key: StorageKey, okey: tuple[str, str]) -> None:
        obj = self.store.get(key, okey)
        if obj is None:
            return
        refs = obj["metadata"].get("ownerReferences") or ()
        if refs and not any(self._owner_exists(okey[0], r) for r in refs):
            self._delete(key, obj, "Background")

    def _owner(self, key: StorageKey, namespace: str, ref: dict) -> None:
        """A dependent went away: its owner may be waiting for it (Foreground)."""
        owner = self._owner_exists(namespace, ref)
        if owner is not None and owner["metadata"].get("deletionTimestamp"):
            rt = self.registry.by_kind(ref["apiVersion"], ref["kind"])
            if rt is not None:
                self._finalize(rt.storage_key, obj_key(owner))

    def _finalize(self, key: StorageKey, okey: tuple[str, str]) -> None:
        obj = self.store.get(key, okey)
        if obj is None:
            return
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or ())
        dependents = self._dependents_of(meta["uid"])
        if ORPHAN in finalizers:
            for dep_key, dep in dependents:
                self._strip_refs(dep_key, dep, {meta["uid"]})
            finalizers.remove(ORPHAN)
        elif FOREGROUND in finalizers:
            if dependents:
                for dep_key, dep in dependents:
                    self._delete(dep_key, dep, "Foreground")
                return
            finalizers.remove(FOREGROUND)
        else:
            return
        self._set_finalizers(key, obj, finalizers)

    def _set_finalizers(self, key: StorageKey, obj: dict, finalizers: list[str]) -> None:
        rt = self.registry.for_storage(key)
        if rt is None:  # its kind is no longer served (its CRD deleted meanwhile)
            return
        meta = {**obj["metadata"], "finalizers": finalizers}
        if not finalizers:
            del meta["finalizers"]
            if meta.get("deletionGracePeriodSeconds", 0) == 0:
                self.api.remove_now(rt, obj)
                return
        self.api.system_write(rt, {**obj, "metadata": meta}, MANAGER)

    def _namespace(self, name: str) -> None:
        """Delete everything in a terminating namespace, then the namespace itself."""
        remaining = 0
        for key, bucket in list(self.store.buckets.items()):
            rt = self.registry.for_storage(key)
            if rt is None or not rt.namespaced:
                continue
            for (ns, _), obj in list(bucket.items()):
                if ns == name:
                    remaining += 1
                    self._delete(key, obj, "Background")
        if remaining == 0:
            ns_obj = self.store.get(NAMESPACES, ("", name))
            if ns_obj is not None:
                self.api.remove_now(self.registry.builtin_storage(NAMESPACES), ns_obj)
        else:
            asyncio.get_running_loop().call_later(0.05, self._push, ("namespace", name))
