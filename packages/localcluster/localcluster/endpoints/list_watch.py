"""Lists (pages at one revision, continue tokens, selectors), deletecollection, and watch streams (from a
revision, bookmarks, the initial events), mixed into HttpApi."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

import orjson
from aiohttp import web

from apimachinery.selectors import SelectorError, parse_label_selector

from .. import errors
from ..errors import ApiError
from ..storage import event_apis
from ..storage.resources import ResourceType
from ..storage.watch import Watcher, WatchHub, channel_size
from ..validation import parse_field_selector
from . import request_options, table
from .continue_tokens import ContinueTokens, ListScope
from .request_bodies import is_dry_run, truthy
from .request_targets import JSON, POD_FIELDS, USER, Target
from .responses import json_response

if TYPE_CHECKING:
    from ..api import Api
    from ..cluster import LocalCluster
    from ..storage.store import Store


Warnings = list[str]  # an alias: the `list` method hides the builtin in the class's annotations


class ListWatch:
    """Mixed into HttpApi: the collection verbs."""

    cluster: LocalCluster
    api: Api
    store: Store
    continue_tokens: ContinueTokens
    hub: WatchHub

    # --- list -----------------------------------------------------------------------------

    def _filter(self, request: web.Request, target: Target):
        try:
            labels = parse_label_selector(request.query.get("labelSelector", ""))
            fields = parse_field_selector(request.query.get("fieldSelector", ""))
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from exc
        allowed = {"metadata.name", "metadata.namespace"}
        if target.rt.storage_key == ("", "pods"):
            allowed |= POD_FIELDS
        if target.rt.storage_key == event_apis.STORAGE:
            fields = event_apis.field_selector(fields, target.rt.group)
        else:
            for field in fields.fields:
                if field not in allowed:
                    raise _unknown_field_label(target.rt, field)
        return (labels if request.query.get("labelSelector") else None,
                fields if request.query.get("fieldSelector") else None)

    def list(self, request: web.Request, target: Target) -> dict:
        """A LIST, whole or one page. Every page is a read of the request's own resource, namespace and
        selectors; a continue token only says at which revision and from which key (continue_tokens.py)."""
        rt = target.rt
        query = request.query
        limit = request_options.list_limit(query)
        labels, fields = self._filter(request, target)
        scope = ListScope(rt.storage_key, target.namespace, query.get("labelSelector", ""),
                          query.get("fieldSelector", ""), rt.namespaced and target.namespace is None)
        start = ""
        revision: int | None
        if query.get("continue"):
            revision, start = self.continue_tokens.open(query["continue"], scope)
            if query.get("resourceVersion", "") not in ("", "0"):
                raise errors.bad_request("specifying resource version is not allowed when using continue")
            revision = None if revision < 0 else revision  # -1: go on at the latest revision
        else:
            revision, limit = self._list_read(query, limit)
        if revision is None:
            list_rv = self.store.rv
            items = self.store.objects(rt.storage_key, target.namespace)
        else:
            list_rv = revision
            at = self.store.objects_at(rt.storage_key, revision, target.namespace)
            if start and revision <= self.store.compacted_rv:  # expire_history's promise: open tokens get 410
                at = None
            if revision < self.store.etcd_compacted():  # etcd compacted it since (every 5 minutes)
                at = None
            if at is None:
                if start:
                    raise self.continue_tokens.expired(scope, start)
                raise errors.gone("The resourceVersion for the provided list is too old.")
            items = at
        if start:
            items = [o for o in items if scope.key(o) >= start]
        if labels is not None or fields is not None:
            probe = Watcher(rt.storage_key, None, labels, fields, 0, 0)
            items = [o for o in items if probe.matches(o)]
        items.sort(key=scope.key)
        meta: dict = {"resourceVersion": str(list_rv)}
        if limit > 0 and len(items) > limit:
            page = items[:limit]
            meta["continue"] = self.continue_tokens.issue(scope, list_rv, scope.key(page[-1]) + "\x00")
            if labels is None and fields is None:  # etcd counts keys, not matches: no count under a selector
                meta["remainingItemCount"] = len(items) - limit
        else:
            page = items
        if any(o.get("apiVersion") != rt.group_version for o in page[:1]):
            page = [self.api.present(rt, o) for o in page]
        return {"kind": rt.list_kind, "apiVersion": rt.group_version, "metadata": meta, "items": page}

    def _list_read(self, query, limit: int) -> tuple[int | None, int]:
        """Where the apiserver reads a LIST from: (the revision to read at, None for the latest; the limit kept).

        As kube-apiserver decides it (the cacher's shouldDelegateList, etcd3's GetList):
        - resourceVersion "": etcd, a consistent read of the latest state, paginated.
        - "0": the watch cache, the latest state, whole: the cache ignores `limit`.
        - N with resourceVersionMatch=Exact, or with a `limit` and no match (the legacy meaning): etcd at
          exactly revision N, paginated; 410 Expired once N is compacted. A relist paged at the version
          it last saw therefore gets that same old state back, not the current one.
        - N with NotOlderThan and a `limit`: etcd's latest state, paginated.
        - N without a limit (no match, or NotOlderThan): the watch cache, whose state is at least N: the
          latest. The watch cache starts afresh at every server restart, but this read does not care.
        N beyond the latest revision: 504 "Too large resource version" (the real server waits up to 3 s
        for its watch cache first; here the store is always current, so there is nothing to wait for).
        """
        rv = query.get("resourceVersion", "")
        match = query.get("resourceVersionMatch", "")
        if match not in ("", "Exact", "NotOlderThan"):
            raise _invalid_list_options(f'resourceVersionMatch: Unsupported value: "{match}": supported values: '
                                        f'"Exact", "NotOlderThan", ""')
        if match and not rv:
            raise _invalid_list_options("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
                                        "resourceVersion is provided")
        if rv == "":
            return None, limit
        if not rv.isdigit():
            raise errors.bad_request(f"invalid resource version: {_unparsable_rv(rv)}")
        asked = int(rv)
        if asked == 0:
            if match == "Exact":
                raise _invalid_list_options('resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is '
                                            'forbidden for resourceVersion "0"')
            return None, 0
        if asked > self.store.rv:
            raise errors.too_large_resource_version(asked, self.store.rv)
        if match == "Exact" or (limit and not match):
            if asked < max(self.store.compacted_rv, self.store.etcd_compacted()):
                raise errors.gone("The resourceVersion for the provided list is too old.")
            return asked, limit
        return None, limit

    async def _delete(self, request: web.Request, rt: ResourceType, namespace: str | None, name: str,
                      options: dict) -> tuple[dict, bool, Warnings]:
        """A delete, as the request's user: admission webhooks see it (with its DeleteOptions); their warnings."""
        self.api.user = request.get(USER)
        self.api.options = {**options, "kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                            **({"dryRun": ["All"]} if is_dry_run(request) else {})}
        self.api.warnings = []
        try:
            obj, gone_now = await self.api.run(lambda: self.api.delete_steps(rt, namespace, name, options,
                                                                            is_dry_run(request)))
            return obj, gone_now, self.api.warnings
        finally:
            self.api.user, self.api.options, self.api.warnings = None, None, []

    async def delete_collection(self, request: web.Request, target: Target, options: dict) -> dict:
        """Delete what the list selects; the answer is that list, as it was before (Store.DeleteCollection)."""
        listed = self.list(request, Target(target.rt, target.namespace, None, None))
        for obj in listed["items"]:
            try:
                await self._delete(request, target.rt, target.namespace or obj["metadata"].get("namespace"),
                                   obj["metadata"]["name"], options)
            except ApiError as err:
                if err.code != 404:
                    raise
        return listed

    # --- watch ----------------------------------------------------------------------------

    async def watch(self, request: web.Request, target: Target) -> web.StreamResponse:
        rt = target.rt
        labels, fields = self._filter(request, target)
        query = request.query
        bookmarks = truthy(query.get("allowWatchBookmarks"))
        rv_param = query.get("resourceVersion", "")
        initial = rv_param in ("", "0") or truthy(query.get("sendInitialEvents"))
        deadline = time.monotonic() + request_options.watch_timeout(query)
        request_options.list_limit(query)  # a watch ignores it, but ListOptions must still decode

        response = web.StreamResponse(headers={"Content-Type": JSON, "Cache-Control": "no-cache, private"})
        response.enable_chunked_encoding()
        start_rv = self.store.rv if rv_param in ("", "0") else int(rv_param) if rv_param.isdigit() else -1
        if start_rv < 0:
            # the cacher's ParseResourceVersion error, which the watch handler answers as an internal error
            raise ApiError(500, "", _unparsable_rv(rv_param))
        channel = channel_size(self.cluster.api.watch_cache.capacity(rt.storage_key), rt.storage_key, fields) \
            if self.cluster.close_slow_watchers else None
        watcher = Watcher(rt.storage_key, target.namespace, labels, fields, start_rv, self.cluster.watch_buffer,
                          channel)
        # Replay and registration happen with no await between them: nothing can be missed.
        if initial:
            for obj in sorted(self.store.objects(rt.storage_key, target.namespace), key=_sort_key):
                if watcher.matches(obj):
                    watcher.buffer.append(("ADDED", obj))
            watcher.start_rv = start_rv = self.store.rv
        else:
            # The watch cache's window (storage/watch_cache.py) and the store's history (etcd's, since compaction)
            # must both still hold the version.
            oldest = max(self.cluster.api.watch_cache.oldest_start(rt.storage_key), self.store.compacted_rv)
            past = self.store.events_since(start_rv, rt.storage_key) if start_rv >= oldest else None
            refused = None
            if past is None:
                refused = errors.gone(f"too old resource version: {start_rv} ({oldest})")
            elif start_rv > self.store.rv:  # the cacher waits 3 s for a version it has not reached, then gives up
                refused = errors.too_large_resource_version(start_rv, self.store.rv)
            if refused is not None:
                await response.prepare(request)
                await response.write(orjson.dumps({"type": "ERROR", "object": refused.status()}) + b"\n")
                return response
            for ev in past or ():  # not None: refused above
                item = watcher.translate(ev)
                if item is not None:
                    watcher.buffer.append(item)
            watcher.start_rv = max(start_rv, self.store.rv)
        self.hub.add(watcher)
        try:
            await response.prepare(request)
            if self.cluster.faults.config.hang_watches:
                await _hang(watcher, deadline)
                return response
            await self._stream(response, watcher, rt, deadline, bookmarks,
                               initial_end=bookmarks and truthy(query.get("sendInitialEvents")),
                               view=table.EventRenderer(rt, request.headers.get("Accept", ""),
                                                          request.query.get("includeObject", "Metadata")))
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.hub.discard(watcher)
        return response

    async def _stream(self, response: web.StreamResponse, watcher: Watcher, rt: ResourceType,
                      deadline: float, bookmarks: bool, initial_end: bool, view: table.EventRenderer) -> None:
        interval = self.cluster.bookmark_interval
        next_bookmark = time.monotonic() + interval
        if initial_end:
            await self._flush(response, watcher, rt, view)
            await response.write(self._bookmark(rt, view, {"k8s.io/initial-events-end": "true"}))
        while not watcher.closed:
            await self._flush(response, watcher, rt, view)
            now = time.monotonic()
            if now >= deadline:
                if bookmarks:
                    await response.write(self._bookmark(rt, view))
                return
            if bookmarks and now >= next_bookmark:
                await response.write(self._bookmark(rt, view))
                next_bookmark = now + interval
            wait = min(deadline, next_bookmark if bookmarks else deadline) - now
            watcher.wake.clear()
            if watcher.buffer:
                continue
            try:
                await asyncio.wait_for(watcher.wake.wait(), timeout=max(wait, 0.001))
            except TimeoutError:
                pass

    async def _flush(self, response: web.StreamResponse, watcher: Watcher, rt: ResourceType,
                     view: table.EventRenderer) -> None:
        buffer = watcher.buffer
        if not buffer:
            return
        chunks = []
        while buffer:
            kind, obj = buffer.popleft()
            if obj.get("apiVersion") != rt.group_version:
                obj = self.api.present(rt, obj)
            chunks.append(orjson.dumps({"type": kind, "object": view.render(obj)}))
        chunks.append(b"")
        watcher.write_started()
        try:
            await response.write(b"\n".join(chunks))
        finally:
            watcher.write_done()

    def _bookmark(self, rt: ResourceType, view: table.EventRenderer, annotations: dict | None = None) -> bytes:
        meta: dict = {"resourceVersion": str(self.store.rv)}
        if annotations:
            meta["annotations"] = annotations
        obj = {"kind": rt.kind, "apiVersion": rt.group_version, "metadata": meta}
        return orjson.dumps({"type": "BOOKMARK", "object": view.bookmark(obj)}) + b"\n"


def _invalid_list_options(text: str) -> ApiError:
    return errors.invalid("ListOptions.meta.k8s.io", "", "meta.k8s.io", "ListOptions",
                          [("FieldValueInvalid", text.split(":", 1)[0], text)])


def deleted_answer(rt: ResourceType, obj: dict, gone_now: bool, options: dict) -> tuple[dict, int]:
    """The answer to a DELETE, as the apiserver's DeleteResource handler gives it.

    The object while it waits (finalizers, a grace period); once gone, the object for the kinds whose
    registry returns it (pods, services...), else a Status of kind Success naming it. Always 200, but 202
    for an object not gone at once when the deprecated orphanDependents=false asked for cascading: the
    handler keeps it that narrow so as not to break clients.
    """
    code = 202 if not gone_now and options.get("orphanDependents") is False else 200
    if not gone_now or rt.returns_deleted:
        return obj, code
    meta = obj["metadata"]
    details = {"name": meta["name"], "group": rt.group, "kind": rt.plural, "uid": meta.get("uid", "")}
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {k: v for k, v in details.items() if v}}, code


def negotiated(request: web.Request, rt: ResourceType, body: dict, is_list: bool) -> web.Response:
    """The object or list as the Accept header asks: plain, a Table, or PartialObjectMetadata(List)."""
    view = table.negotiate(request.headers.get("Accept", ""), is_list)
    if view is not None:
        body = table.render(rt, body, view, is_list, request.query.get("includeObject", "Metadata"))
    return json_response(body)


async def _hang(watcher: Watcher, deadline: float) -> None:
    """Hold the stream open and silent until it is dropped or times out."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(_until_closed(watcher), timeout=max(deadline - time.monotonic(), 0))


async def _until_closed(watcher: Watcher) -> None:
    while not watcher.closed:
        watcher.wake.clear()
        await watcher.wake.wait()


def _sort_key(obj: dict) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


# Kinds with a field label conversion of their own (AddFieldLabelConversionFunc), which words an unknown label as
# "field label not supported", as custom resources do; the others have the default conversion's 1.35 wording.
OWN_FIELD_LABELS = {("", "pods"), ("", "nodes"), ("", "replicationcontrollers"), ("", "namespaces"), ("", "secrets"),
                    ("", "services"), ("apps", "replicasets"), ("batch", "jobs"),
                    ("certificates.k8s.io", "certificatesigningrequests")}


def _unknown_field_label(rt: ResourceType, field: str) -> ApiError:
    if rt.crd_name is not None or rt.storage_key in OWN_FIELD_LABELS:
        return errors.bad_request(f"field label not supported: {field}")
    return errors.bad_request(f'"{field}" is not a known field selector: only "metadata.name", "metadata.namespace"')


def _unparsable_rv(rv: str) -> str:
    """A resourceVersion that is not a number, as the apiserver's ParseResourceVersion (Go's strconv) says it."""
    return f'resourceVersion: Invalid value: "{rv}": strconv.ParseUint: parsing "{rv}": invalid syntax'
