"""The REST surface: URL routing, lists with pagination, watch streams, discovery, admin endpoints."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson
from aiohttp import web

from apimachinery.selectors import SelectorError, parse_label_selector
from localcluster.validation.selectors import parse_field_selector

from .. import errors
from ..api import APPLY_PATCH, SERVER_MANAGER
from ..auth.authentication import MASTERS, request_attributes
from ..auth.rbac import request_forbidden
from ..discovery import documents
from ..errors import ApiError
from ..kubelet import pod_exec, pod_logs
from ..kubelet.pod_connect import container_of, require_node
from ..storage import event_apis
from ..storage.resources import ResourceType
from ..storage.watch import Watcher
from . import issuer_discovery, protobuf, request_options, reviews, scale, table, yaml_bodies
from .continue_tokens import ContinueTokens, ListScope
from .tokens import TokenIssuer

if TYPE_CHECKING:
    from ..cluster import LocalCluster

log = logging.getLogger("localcluster")

JSON = "application/json"
POD_FIELDS = {"status.phase", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
              "spec.serviceAccountName", "status.podIP", "status.nominatedNodeName"}
# Pod subresources that connect to a container: the runner's method serving each, and its HTTP methods.
POD_CONNECT = {"log": ("pod_log", ("GET",)), "exec": ("pod_exec", ("GET", "POST")),
               "portforward": ("pod_portforward", ("GET", "POST"))}
MAX_FIELD_MANAGER = 128  # bytes (FieldManagerMaxLength)
USER = web.RequestKey("user", object)  # the authenticated auth.User of a request
DEPRECATION = web.RequestKey("deprecation", str)  # the warning a deprecated resource's requests get


@dataclass(slots=True)
class Target:
    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


HEADER_CONTROLS = {c: " " for c in [*range(0x09), *range(0x0A, 0x20), 0x7F]}  # what aiohttp refuses in a header


def warning_header(text: str) -> str:
    """A Warning header as the apiserver writes one: code 299, no agent, the text quoted (`"` and `\\` escaped),
    control characters written as spaces as Go's net/http writes line breaks (never a header injection, or a 500)."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"').translate(HEADER_CONTROLS) + '"'


async def _deprecation_warning(request: web.Request, response: web.StreamResponse) -> None:
    """The apiserver warns of a deprecated API version on every request to it, whatever the verb or
    outcome (its installer wraps each handler); a watch's header goes out before the first event."""
    text = request.get(DEPRECATION)
    if text:
        response.headers.add("Warning", warning_header(text))


def json_response(body, status: int = 200, headers: dict | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type=JSON, headers=headers)


def error_response(err: ApiError) -> web.Response:
    response = json_response(err.status(), err.code, err.headers)
    for text in getattr(err, "warnings", ()):  # what admission webhooks warned of before one refused
        response.headers.add("Warning", warning_header(text))
    return response


# The apiserver's limit on a request body (apiserver's MaxRequestBodyBytes): larger ones get 413.
MAX_REQUEST_BYTES = 3 * 1024 * 1024
Warnings = list[str]  # an alias: HttpApi's `list` method hides the builtin in its annotations


class HttpApi:
    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.api = cluster.api
        self.store = cluster.store
        self.registry = cluster.registry
        self.hub = cluster.hub
        # Every page is read at the first page's revision, as etcd's MVCC serves it (continue_tokens.py).
        self.continue_tokens = ContinueTokens()
        self.tokens = TokenIssuer(self.api, cluster.access.authenticator)

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._errors, self.cluster.faults.middleware],
                              client_max_size=MAX_REQUEST_BYTES)
        app.router.add_route("*", "/{tail:.*}", self.dispatch)
        app.on_response_prepare.append(_deprecation_warning)
        return app

    @web.middleware
    async def _errors(self, request: web.Request, handler):
        try:
            return await handler(request)
        except ApiError as err:
            return error_response(err)
        except web.HTTPRequestEntityTooLarge:
            # As the apiserver's request body limit answers (3 MiB), a Status kubectl can print.
            return error_response(ApiError(413, "RequestEntityTooLarge",
                                           f"Request entity too large: limit is {MAX_REQUEST_BYTES}"))
        except (web.HTTPException, asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception as exc:  # a bug in localcluster must still answer like an apiserver
            log.exception("internal error serving %s %s", request.method, request.path)
            return error_response(errors.internal_error(repr(exc)))

    # --- routing --------------------------------------------------------------------------

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        segs = [s for s in request.path.split("/") if s]
        if segs[:1] == ["_localcluster"]:
            request[USER] = self.cluster.access.check_admin(request)  # system:masters only, before the body is read
        else:
            attrs = self.cluster.access.check(request)  # 401/403 before anything else is looked at
            request[USER] = attrs.user
            if attrs.resource_request and (attrs.api_group, attrs.resource) in reviews.KINDS:
                if attrs.verb != "create" or attrs.name:
                    raise errors.method_not_allowed()
                return json_response(await reviews.serve(self.cluster.access, attrs, request, _read_body), 201)
        if not segs:
            return json_response({"paths": ["/api", "/api/v1", "/apis", "/version", "/healthz", "/openapi/v2"]})
        head = segs[0]
        if head == "version":
            return json_response(documents.version())
        if head in ("healthz", "livez", "readyz"):
            return web.Response(text="ok")
        if head == "openapi":
            return await documents.openapi(self.registry, request, segs[1:])
        if issuer_discovery.serves(request.path):
            return issuer_discovery.serve(request, self.cluster.access.authenticator.jwt, self.cluster.url)
        if head == "_localcluster":
            return await self.cluster.admin(request, segs[1:])
        if head == "api":
            if len(segs) == 1:
                return json_response(documents.api_versions(request.host))
            return await self._resource_request(request, "", segs[1], segs[2:])
        if head == "apis":
            if len(segs) == 1:
                return json_response(documents.group_list(self.registry))
            if len(segs) == 2:
                return json_response(documents.group(self.registry, segs[1]))
            return await self._resource_request(request, segs[1], segs[2], segs[3:])
        raise errors.unknown_path()

    async def _resource_request(self, request: web.Request, group: str, version: str,
                                rest: list[str]) -> web.StreamResponse:
        if not rest:
            found = documents.resource_list(self.registry, group, version)
            if found is None:
                raise errors.unknown_path()
            return json_response(found)
        if (group, version) == ("", "v1") and len(rest) == 5 and (rest[0], rest[2]) == ("namespaces", "pods") \
                and rest[4] in POD_CONNECT:
            return await self._pod_connect(request, rest[4], rest[1], rest[3])
        if (group, version) == ("", "v1") and len(rest) == 5 and (rest[0], rest[2], rest[4]) == \
                ("namespaces", "serviceaccounts", "token"):
            return await self._token_request(request, rest[1], rest[3])
        target = self._target(group, version, rest)
        if target.rt.deprecation:
            request[DEPRECATION] = target.rt.deprecation
        method = request.method
        if target.name is None:
            if method == "GET":
                if _truthy(request.query.get("watch")):
                    return await self.watch(request, target)
                return _negotiated(request, target.rt, self.list(request, target), is_list=True)
            if method == "POST":
                body = await _read_body(request, target.rt.group_version, target.rt.kind)
                _check_write_options(request, "CreateOptions")
                return await self._write(request, 201, "CreateOptions", self.api.create_steps, target.rt,
                                         target.namespace, body, _dry_run(request))
            if method == "DELETE":
                options = await request_options.read_delete_options(request, _truthy)
                return json_response(await self.delete_collection(request, target, options))
            raise errors.method_not_allowed()
        if target.subresource == "scale":
            return await self._scale(request, target)
        if method == "GET":
            return _negotiated(request, target.rt, self.api.get(target.rt, target.namespace, target.name),
                               is_list=False)
        if method == "PUT":
            body = await _read_body(request, target.rt.group_version, target.rt.kind)
            _check_write_options(request, "UpdateOptions")
            return await self._write(request, 200, "UpdateOptions", self.api.update_steps, target.rt,
                                     target.namespace, target.name, body, target.subresource, _dry_run(request))
        if method == "PATCH":
            return await self._patch(request, target)
        if method == "DELETE" and target.subresource is None:
            options = await request_options.read_delete_options(request, _truthy)
            obj, gone_now, warnings = await self._delete(request, target.rt, target.namespace, target.name, options)
            response = json_response(*_deleted(target.rt, obj, gone_now, options))
            for text in warnings:
                response.headers.add("Warning", warning_header(text))
            return response
        raise errors.method_not_allowed()

    async def _token_request(self, request: web.Request, namespace: str, name: str) -> web.Response:
        """serviceaccounts/NAME/token: create-only, answered with a TokenRequest (tokens.py)."""
        if request.method != "POST":
            raise errors.method_not_allowed()
        body = await _read_body(request, "authentication.k8s.io/v1", "TokenRequest")
        _check_write_options(request, "CreateOptions")
        return json_response(self.tokens.request(namespace, name, body), 201)

    async def _scale(self, request: web.Request, target: Target) -> web.Response:
        """The scale subresource (scale.py): GET, PUT and PATCH of an autoscaling/v1 Scale."""
        at = (self.api, target.rt, target.namespace, target.name or "")  # the route always names the object
        if request.method == "GET":
            return json_response(scale.get(*at))
        if request.method == "PUT":
            return await self._write(request, 200, "UpdateOptions", scale.update, *at, await _read_json(request),
                                     _dry_run(request))
        if request.method == "PATCH":
            return await self._write(request, 200, "PatchOptions", scale.patch, *at, request.content_type,
                                     await _read_json(request), _dry_run(request))
        raise errors.method_not_allowed()

    async def _pod_connect(self, request: web.Request, subresource: str, namespace: str,
                           name: str) -> web.StreamResponse:
        """pods/log, pods/exec, pods/portforward: served by a runner whose pods are processes (the process runner)."""
        serves, methods = POD_CONNECT[subresource]
        if request.method not in methods:
            raise errors.method_not_allowed()
        if subresource != "log" and request.method == "GET":
            self._authorize_upgrade(request)
        pod = self.api.get(self.registry.builtin("", "v1", "pods"), namespace, name)
        serve = getattr(self.cluster.runner, serves, None)
        if subresource == "log":
            return await pod_logs.serve(self.api, self.cluster.runner, request, pod)
        # The API server's checks (pkg/registry/core/pod/strategy.go), then the kubelet's business.
        options = pod_exec.ExecOptions.from_query(request.query) if subresource == "exec" else None
        container = container_of(pod, options.container) if options is not None else ""
        require_node(pod)
        if serve is None:
            raise errors.bad_request(f"pods/{subresource} is served only by the process pod runner (this cluster "
                                     f"runs {self.cluster.runner.name!r})")
        return await (serve(request, pod, options, container) if options is not None else serve(request, pod))

    def _authorize_upgrade(self, request: web.Request) -> None:
        """A WebSocket upgrade of pods/exec or pods/portforward is a GET, authorized as `get`; since 1.35
        (AuthorizePodWebsocketUpgradeCreatePermission, on by default) the user must be allowed `create` too."""
        user = request.get(USER)
        if user is None or MASTERS in user.groups:
            return
        attrs = request_attributes(user, "POST", request.path, request.query)
        allowed, reason = self.cluster.access.authorize(attrs)
        if not allowed:
            raise request_forbidden(attrs, reason)

    async def _patch(self, request: web.Request, target: Target) -> web.Response:
        """PATCH: the body type first (415 lists those the resource takes), then the options, then the patch;
        server-side apply answers 201 when it created the object."""
        accepted = target.rt.patch_types
        if request.content_type not in accepted:
            raise errors.unsupported_media_type(accepted)
        apply = request.content_type == APPLY_PATCH
        body = await (_read_apply(request) if apply else _read_json(request))
        _check_write_options(request, "PatchOptions", apply)
        args = (target.rt, target.namespace, target.name)
        if apply:
            return await self._write(request, None, "PatchOptions", self.api.apply_steps, *args, body,
                                     target.subresource, _dry_run(request), _truthy(request.query.get("force")))
        return await self._write(request, 200, "PatchOptions", self.api.patch_steps, *args, request.content_type,
                                 body, target.subresource, _dry_run(request))

    async def _write(self, request: web.Request, status: int | None, options: str, steps, *args) -> web.Response:
        """Run a create/update/patch (its generator of steps, awaiting the admission webhooks it meets) under the
        request's fieldValidation and field manager, passing warnings on as headers. With `status` None, the
        verb answers (object, created). `options`: the kind of the options admission webhooks are shown."""
        self.api.field_validation = request.query.get("fieldValidation", "Warn")  # the default since 1.23 (KEP-2885)
        self.api.warnings = []
        self.api.user = request.get(USER)
        self.api.manager = field_manager(request)
        self.api.options = _write_options(request, options)
        try:
            obj = await self.api.run(lambda: steps(*args))
            warnings = self.api.warnings
        finally:
            self.api.field_validation, self.api.warnings, self.api.user = "Ignore", [], None
            self.api.manager, self.api.options = SERVER_MANAGER, None
        if status is None:
            obj, created = obj
            status = 201 if created else 200
        response = json_response(obj, status)
        for text in warnings:
            response.headers.add("Warning", warning_header(text))
        return response

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise errors.unknown_path()
        rt = self.registry.get(group, version, rest[0])
        if rt is None or (namespace is not None and not rt.namespaced):
            raise errors.unknown_path()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if name is not None and rt.namespaced and namespace is None:
            raise errors.unknown_path()
        served = (sub == "status" and rt.status_subresource) or (sub == "scale" and rt.scale is not None)
        if sub is not None and not served and sub != "finalize":
            if rt.crd_name is not None:  # apiextensions-apiserver's answer to a subresource the CRD does not declare
                raise errors.not_found(rt.qualified_resource, name or "", rt.group, rt.plural)
            raise errors.unknown_path()
        return Target(rt, namespace, name, "status" if sub == "finalize" else sub)

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
                    raise errors.bad_request(f'field label not supported: {field}')
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
            raise errors.bad_request(f"invalid resource version: {rv}")
        asked = int(rv)
        if asked == 0:
            if match == "Exact":
                raise _invalid_list_options('resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is '
                                            'forbidden for resourceVersion "0"')
            return None, 0
        if asked > self.store.rv:
            raise errors.too_large_resource_version(asked, self.store.rv)
        if match == "Exact" or (limit and not match):
            if asked < self.store.compacted_rv:
                raise errors.gone("The resourceVersion for the provided list is too old.")
            return asked, limit
        return None, limit

    async def _delete(self, request: web.Request, rt: ResourceType, namespace: str | None, name: str,
                      options: dict) -> tuple[dict, bool, Warnings]:
        """A delete, as the request's user: admission webhooks see it (with its DeleteOptions); their warnings."""
        self.api.user = request.get(USER)
        self.api.options = {**options, "kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                            **({"dryRun": ["All"]} if _dry_run(request) else {})}
        self.api.warnings = []
        try:
            obj, gone_now = await self.api.run(lambda: self.api.delete_steps(rt, namespace, name, options,
                                                                            _dry_run(request)))
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
        bookmarks = _truthy(query.get("allowWatchBookmarks"))
        rv_param = query.get("resourceVersion", "")
        initial = rv_param in ("", "0") or _truthy(query.get("sendInitialEvents"))
        deadline = time.monotonic() + request_options.watch_timeout(query)
        request_options.list_limit(query)  # a watch ignores it, but ListOptions must still decode

        response = web.StreamResponse(headers={"Content-Type": JSON, "Cache-Control": "no-cache, private"})
        response.enable_chunked_encoding()
        start_rv = self.store.rv if rv_param in ("", "0") else int(rv_param) if rv_param.isdigit() else -1
        if start_rv < 0:
            raise errors.bad_request(f"invalid resource version: {rv_param}")
        watcher = Watcher(rt.storage_key, target.namespace, labels, fields, start_rv,
                          self.cluster.watch_buffer)
        # Replay and registration happen with no await between them: nothing can be missed.
        if initial:
            for obj in sorted(self.store.objects(rt.storage_key, target.namespace), key=_sort_key):
                if watcher.matches(obj):
                    watcher.buffer.append(("ADDED", obj))
            watcher.start_rv = start_rv = self.store.rv
        else:
            # The watch cache holds the events since the server started, the store those since compaction.
            oldest = max(self.cluster.watch_cache_rv, self.store.compacted_rv)
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
                               initial_end=bookmarks and _truthy(query.get("sendInitialEvents")),
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
        await response.write(b"\n".join(chunks))

    def _bookmark(self, rt: ResourceType, view: table.EventRenderer, annotations: dict | None = None) -> bytes:
        meta: dict = {"resourceVersion": str(self.store.rv)}
        if annotations:
            meta["annotations"] = annotations
        obj = {"kind": rt.kind, "apiVersion": rt.group_version, "metadata": meta}
        return orjson.dumps({"type": "BOOKMARK", "object": view.bookmark(obj)}) + b"\n"


def _invalid_list_options(text: str) -> ApiError:
    return errors.invalid("ListOptions.meta.k8s.io", "", "meta.k8s.io", "ListOptions",
                          [("FieldValueInvalid", text.split(":", 1)[0], text)])


def _deleted(rt: ResourceType, obj: dict, gone_now: bool, options: dict) -> tuple[dict, int]:
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


def _negotiated(request: web.Request, rt: ResourceType, body: dict, is_list: bool) -> web.Response:
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


def _truthy(value: str | None) -> bool:
    """A boolean query parameter as the apiserver converts it (runtime.Convert_Slice_string_To_bool): absent,
    "0" or "false" in any case is false; anything else, "yes" and "" included, is true."""
    return value is not None and value != "0" and value.lower() != "false"


def _dry_run(request: web.Request) -> bool:
    return "dryRun" in request.query


JSON_TYPES = (JSON, "application/yaml")


async def _read_body(request: web.Request, api_version: str, kind: str):
    """An object sent to create or replace one of `kind`: JSON, YAML, or (built-in kinds) protobuf."""
    ctype = request.headers.get("Content-Type") and request.content_type
    accepted = (*JSON_TYPES, protobuf.MEDIA_TYPE) if protobuf.accepts(api_version, kind) else JSON_TYPES
    if ctype and ctype not in accepted:
        raise errors.unsupported_media_type(accepted)
    if ctype == protobuf.MEDIA_TYPE:
        return protobuf.decode(await request.read(), api_version, kind)
    return await _read_json(request, kind)


def field_manager(request: web.Request) -> str:
    """The writer's name in managedFields: `fieldManager`, else the User-Agent up to its first "/"
    (printable characters, at most 128 bytes), else "unknown" (managerOrUserAgent)."""
    name = request.query.get("fieldManager")
    if not name:
        name = request.headers.get("User-Agent", "").split("/", 1)[0]
        if not name.isprintable() or len(name.encode()) > MAX_FIELD_MANAGER:
            name = "".join(char for char in name if char.isprintable())
            name = name.encode()[:MAX_FIELD_MANAGER].decode(errors="ignore")
    return name or "unknown"


def _write_options(request: web.Request, kind: str) -> dict:
    """The write's options as admission webhooks get them (CreateOptions, UpdateOptions, PatchOptions)."""
    options: dict = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if _dry_run(request):
        options["dryRun"] = ["All"]
    if kind == "PatchOptions" and _truthy(request.query.get("force")):
        options["force"] = True
    for key in ("fieldManager", "fieldValidation"):
        if request.query.get(key):
            options[key] = request.query[key]
    return options


def _check_write_options(request: web.Request, kind: str, apply: bool = False) -> None:
    """CreateOptions, UpdateOptions and PatchOptions as the server validates them (422 Invalid)."""
    query = request.query
    causes = []
    if kind == "PatchOptions":
        if apply and not query.get("fieldManager"):
            causes.append(("FieldValueRequired", "fieldManager",
                           "fieldManager: Required value: is required for apply patch"))
        elif not apply and "force" in query:
            causes.append(("FieldValueForbidden", "force",
                           "force: Forbidden: may not be specified for non-apply patch"))
    manager = query.get("fieldManager", "")
    if len(manager.encode()) > MAX_FIELD_MANAGER:
        causes.append(("FieldValueTooLong", "fieldManager",
                       f"fieldManager: Too long: may not be more than {MAX_FIELD_MANAGER} bytes"))
    causes += [("FieldValueInvalid", "fieldManager", f"fieldManager: Invalid value: {orjson.dumps(manager).decode()}: "
                f"invalid character {_go_rune(char)} (at position {len(manager[:i].encode())})")
               for i, char in enumerate(manager) if not char.isprintable()]
    dry_run = query.getall("dryRun", [])
    if any(value != "All" for value in dry_run):
        listed = ", ".join(orjson.dumps(value).decode() for value in dry_run)
        causes.append(("FieldValueNotSupported", "dryRun",
                       f'dryRun: Unsupported value: []string{{{listed}}}: supported values: "All"'))
    if causes:
        raise errors.invalid(f"{kind}.meta.k8s.io", "", "meta.k8s.io", kind, causes)


def _go_rune(char: str) -> str:
    """Go's %#U of a character that is not printable: U+0007."""
    return f"U+{ord(char):04X}"


async def _read_json(request: web.Request, kind: str = "Object"):
    """A JSON or YAML body (Content-Type checked by the caller); YAML refused as the apiserver refuses it."""
    raw = await request.read()
    if not raw:
        raise errors.bad_request("the request body is empty")
    if "yaml" in request.content_type:
        try:
            return yaml_bodies.load(raw)
        except yaml_bodies.YamlError as exc:
            raise errors.bad_request(yaml_bodies.unrecognized(kind, exc, raw)) from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        # the serializer's first step, finding the kind (k8s.io/apimachinery's json serializer, meta.Interpret)
        raise errors.bad_request("couldn't get version/kind; json parse error: "
                                 f"{request_options.go_json_error(raw, exc)}") from None


async def _read_apply(request: web.Request):
    """An apply configuration: YAML (JSON being YAML too); an empty body is an empty object."""
    raw = await request.read()
    try:
        config = yaml_bodies.load(raw) if raw.strip() else {}
    except yaml_bodies.YamlError as exc:
        raise errors.bad_request(f"error decoding YAML: error converting YAML to JSON: {exc}") from None
    return {} if config is None else config
