"""The REST surface: URL routing, the verbs on objects and subresources, admin endpoints; lists and watches
(list_watch.py), request bodies and options (request_bodies.py) and the answers (responses.py) in rooms of their own."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from aiohttp import web

from .. import errors
from ..api import APPLY_PATCH, SERVER_MANAGER
from ..auth.authentication import MASTERS, request_attributes
from ..auth.rbac import request_forbidden
from ..discovery import documents
from ..errors import ApiError
from ..kubelet import pod_exec, pod_logs
from ..kubelet.pod_connect import container_of, require_node
from . import issuer_discovery, request_options, reviews, scale
from .continue_tokens import ContinueTokens
from .list_watch import ListWatch, deleted_answer, negotiated
from .request_bodies import (
    check_write_options,
    field_manager,
    is_dry_run,
    read_apply,
    read_body,
    read_json,
    truthy,
    write_options,
)
from .request_targets import DEPRECATION, POD_CONNECT, USER, Target
from .responses import deprecation_warning, error_response, json_response, warning_header
from .tokens import TokenIssuer

if TYPE_CHECKING:
    from ..cluster import LocalCluster


log = logging.getLogger("localcluster")

MAX_REQUEST_BYTES = 3 * 1024 * 1024
class HttpApi(ListWatch):
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
        # No aiohttp middlewares: aiohttp keeps each (handler, application) pair's middleware chain in a
        # process-wide cache of 1,024, which kept every stopped cluster of a process (a test suite runs
        # hundreds), its store and objects, alive to the end. The two layers are composed in `serve` instead.
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_route("*", "/{tail:.*}", self.serve)
        app.on_response_prepare.append(deprecation_warning)
        return app

    async def serve(self, request: web.Request) -> web.StreamResponse:
        """Every request: errors answered as Statuses, around the injected faults (tests' only), around dispatch."""
        return await self._errors(request, self._faulted)

    async def _faulted(self, request: web.Request) -> web.StreamResponse:
        return await self.cluster.faults.intercept(request, self.dispatch)

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
                return json_response(await reviews.serve(self.cluster.access, attrs, request, read_body), 201)
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
                if truthy(request.query.get("watch")):
                    return await self.watch(request, target)
                return negotiated(request, target.rt, self.list(request, target), is_list=True)
            if method == "POST":
                body = await read_body(request, target.rt.group_version, target.rt.kind)
                check_write_options(request, "CreateOptions")
                return await self._write(request, 201, "CreateOptions", self.api.create_steps, target.rt,
                                         target.namespace, body, is_dry_run(request))
            if method == "DELETE":
                options = await request_options.read_delete_options(request, truthy)
                return json_response(await self.delete_collection(request, target, options))
            raise errors.method_not_allowed()
        if target.subresource == "scale":
            return await self._scale(request, target)
        if method == "GET":
            return negotiated(request, target.rt, self.api.get(target.rt, target.namespace, target.name),
                               is_list=False)
        if method == "PUT":
            body = await read_body(request, target.rt.group_version, target.rt.kind)
            check_write_options(request, "UpdateOptions")
            return await self._write(request, None, "UpdateOptions", self.api.put_steps, target.rt,
                                     target.namespace, target.name, body, target.subresource, is_dry_run(request))
        if method == "PATCH":
            return await self._patch(request, target)
        if method == "DELETE" and target.subresource is None:
            options = await request_options.read_delete_options(request, truthy)
            obj, gone_now, warnings = await self._delete(request, target.rt, target.namespace, target.name, options)
            response = json_response(*deleted_answer(target.rt, obj, gone_now, options))
            for text in warnings:
                response.headers.add("Warning", warning_header(text))
            return response
        raise errors.method_not_allowed()

    async def _token_request(self, request: web.Request, namespace: str, name: str) -> web.Response:
        """serviceaccounts/NAME/token: create-only, answered with a TokenRequest (tokens.py)."""
        if request.method != "POST":
            raise errors.method_not_allowed()
        body = await read_body(request, "authentication.k8s.io/v1", "TokenRequest")
        check_write_options(request, "CreateOptions")
        return json_response(self.tokens.request(namespace, name, body), 201)

    async def _scale(self, request: web.Request, target: Target) -> web.Response:
        """The scale subresource (scale.py): GET, PUT and PATCH of an autoscaling/v1 Scale."""
        at = (self.api, target.rt, target.namespace, target.name or "")  # the route always names the object
        if request.method == "GET":
            return json_response(scale.get(*at))
        if request.method == "PUT":
            return await self._write(request, 200, "UpdateOptions", scale.update, *at, await read_json(request),
                                     is_dry_run(request))
        if request.method == "PATCH":
            return await self._write(request, 200, "PatchOptions", scale.patch, *at, request.content_type,
                                     await read_json(request), is_dry_run(request))
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
        body = await (read_apply(request) if apply else read_json(request))
        check_write_options(request, "PatchOptions", apply)
        args = (target.rt, target.namespace, target.name)
        if apply:
            return await self._write(request, None, "PatchOptions", self.api.apply_steps, *args, body,
                                     target.subresource, is_dry_run(request), truthy(request.query.get("force")))
        return await self._write(request, 200, "PatchOptions", self.api.patch_steps, *args, request.content_type,
                                 body, target.subresource, is_dry_run(request))

    async def _write(self, request: web.Request, status: int | None, options: str, steps, *args) -> web.Response:
        """Run a create/update/patch (its generator of steps, awaiting the admission webhooks it meets) under the
        request's fieldValidation and field manager, passing warnings on as headers. With `status` None, the
        verb answers (object, created). `options`: the kind of the options admission webhooks are shown."""
        self.api.field_validation = request.query.get("fieldValidation", "Warn")  # the default since 1.23 (KEP-2885)
        self.api.warnings = []
        self.api.user = request.get(USER)
        self.api.manager = field_manager(request)
        self.api.options = write_options(request, options)
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

