"""Fault injection and request accounting, one layer around every request (`Faults.intercept`, called by http.py).

Faults apply only to resource requests (not discovery, OpenAPI or the admin endpoints), so a
test can make the API flaky without making kubectl's discovery fail first.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter, deque
from dataclasses import asdict, dataclass, field

from aiohttp import web

from .. import errors

ADMIN_PREFIX = "/_localcluster"


@dataclass
class FaultConfig:
    error_rate: float = 0.0  # share of matching requests that fail
    # 500, 429, 410 (Expired: "too old resource version", as after a restart), or 403: the answer of a
    # full ResourceQuota ("exceeded quota"), as admission gives it
    error_code: int = 500
    retry_after: int = 1  # seconds, sent with 429
    latency: float = 0.0  # seconds added to every matching request
    verbs: list[str] = field(default_factory=list)  # empty: all of get/list/watch/create/update/patch/delete
    resources: list[str] = field(default_factory=list)  # plural names; empty: all
    # New watches are accepted and then never send anything, not even bookmarks: a dead connection.
    hang_watches: bool = False


def request_verb(request: web.Request, segs: list[str]) -> str:
    method = request.method
    if method == "GET":
        if request.query.get("watch") in ("true", "1"):
            return "watch"
        return "get" if _names_object(segs) else "list"
    if method == "DELETE" and not _names_object(segs):
        return "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())


def _resource_segments(segs: list[str]) -> list[str] | None:
    """The part after /api/v1 or /apis/group/version, or None for other paths."""
    if segs[:1] == ["api"] and len(segs) > 2:
        rest = segs[2:]
    elif segs[:1] == ["apis"] and len(segs) > 3:
        rest = segs[3:]
    else:
        return None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        rest = rest[2:]
    return rest


def _names_object(segs: list[str]) -> bool:
    rest = _resource_segments(segs)
    return rest is not None and len(rest) >= 2


def resource_of(segs: list[str]) -> str | None:
    rest = _resource_segments(segs)
    if rest is None:
        return None
    return rest[0] + ("/" + rest[2] if len(rest) > 2 else "")


@dataclass(frozen=True, slots=True)
class ListRecord:
    resource: str
    query: dict[str, str]
    code: int


class Faults:
    def __init__(self) -> None:
        self.config = FaultConfig()
        self.injected: Counter[str] = Counter()
        # (verb, resource, code) -> count: what clients asked of the API, for benchmarks and RBAC checks.
        self.requests: Counter[tuple[str, str, int]] = Counter()
        # The latest LIST requests with their query, for tests of what a client asked for.
        self.lists: deque[ListRecord] = deque(maxlen=1000)

    def configure(self, **settings) -> FaultConfig:
        self.config = FaultConfig(**settings)
        return self.config

    def clear(self) -> None:
        self.config = FaultConfig()

    def describe(self) -> dict:
        return {"config": asdict(self.config), "injected": dict(self.injected)}

    def _applies(self, verb: str, resource: str) -> bool:
        cfg = self.config
        if cfg.verbs and verb not in cfg.verbs:
            return False
        return not cfg.resources or resource.split("/")[0] in cfg.resources

    async def _injected_error(self, request: web.Request, segs: list[str], verb: str, resource: str) -> errors.ApiError:
        code = self.config.error_code
        if code == 429:
            return errors.too_many_requests(self.config.retry_after)
        if code == 403:
            name = segs[-1] if _names_object(segs) else ""
            if verb == "create":
                try:  # aiohttp keeps the body read here for the handler
                    name = ((await request.json()).get("metadata") or {}).get("name") or ""
                except (ValueError, AttributeError):
                    name = ""
            plural = resource.split("/")[0]
            # The message of the ResourceQuota admission plugin (quota "injected" allows no more pods).
            return errors.forbidden(f'{plural} "{name}" is forbidden: exceeded quota: injected, requested: '
                                    f"{plural}=1, used: {plural}=0, limited: {plural}=0")
        if code == 410:
            return errors.gone("too old resource version: injected fault")
        return errors.internal_error("injected fault")

    async def intercept(self, request: web.Request, handler):
        """The fault injected for this request, if one matches; else the handler's answer."""
        if request.path.startswith(ADMIN_PREFIX):
            return await handler(request)
        segs = [s for s in request.path.split("/") if s]
        resource = resource_of(segs)
        if resource is None:
            return await handler(request)
        verb = request_verb(request, segs)
        if verb == "list":
            return await self._recorded(request, handler, segs, verb, resource)
        return await self._handle(request, handler, segs, verb, resource)

    async def _recorded(self, request: web.Request, handler, segs: list[str], verb: str, resource: str):
        code = 200
        try:
            response = await self._handle(request, handler, segs, verb, resource)
            code = response.status
            return response
        except errors.ApiError as err:
            code = err.code
            raise
        finally:
            self.lists.append(ListRecord(resource, dict(request.query), code))

    async def _handle(self, request: web.Request, handler, segs: list[str], verb: str, resource: str):
        cfg = self.config
        if self._applies(verb, resource):
            if cfg.latency:
                await asyncio.sleep(cfg.latency)
            if cfg.error_rate and random.random() < cfg.error_rate:
                self.injected[str(cfg.error_code)] += 1
                err = await self._injected_error(request, segs, verb, resource)
                self.requests[(verb, resource, err.code)] += 1
                raise err
        # A watch is counted when it starts, not when its stream ends (which may be never).
        streaming = verb == "watch"
        if streaming:
            self.requests[(verb, resource, 200)] += 1
        try:
            response = await handler(request)
        except errors.ApiError as err:
            if streaming:
                self.requests[(verb, resource, 200)] -= 1
            self.requests[(verb, resource, err.code)] += 1
            raise
        if not streaming:
            self.requests[(verb, resource, response.status)] += 1
        return response
