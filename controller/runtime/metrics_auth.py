"""Who may read /metrics: the API server decides, by TokenReview and SubjectAccessReview.

controller-runtime's filters.WithAuthenticationAndAuthorization, for an aiohttp app:

    auth = DelegatingAuth(rest_client)
    app = web.Application(middlewares=[auth.middleware])

Every request's bearer token is reviewed (TokenReview), and the user it names is checked for
`get` on the non-resource path asked for (SubjectAccessReview; the `genericjob-metrics-reader`
ClusterRole grants it for /metrics). No or an unauthenticated token: 401. Not allowed: 403. A
review that cannot be made (API server down, timeout, the controller's own account lacking
`create` on tokenreviews or subjectaccessreviews): 500, logged, and not cached, so that the next
scrape asks again. controller-runtime answers a token the server rejects with 500 too (the
TokenReview's status.error becomes an error); here that is a 401, as kube-rbac-proxy answers it.

Answers are cached as controller-runtime caches them (authentication one minute, an allow five
minutes, a deny 30 s), keyed by a hash of the token, and concurrent requests with the same token
share one review: a Prometheus scraping every 15 s costs the API server nothing after the first.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog
from aiohttp import web

from informers import ApiStatusError
from kubeclient.rest import TRANSIENT_ERRORS, RestClient

log = structlog.get_logger("controller.runtime.metrics_auth")

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
REVIEW_TIMEOUT = 10.0  # controller-runtime's TokenAccessReviewTimeout: all attempts of one review
RETRY_DELAYS = (0.5, 0.75, 1.125, 1.7)  # its WebhookRetryBackoff: 500 ms x 1.5, five attempts
AUTHN_TTL, ALLOW_TTL, DENY_TTL = 60.0, 300.0, 30.0
MAX_ENTRIES = 4096  # a flood of made-up tokens evicts old answers instead of growing without bound


class ReviewFailed(Exception):
    """The API server did not answer a review (as opposed to answering no)."""


@dataclass(frozen=True)
class UserInfo:
    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())

    @classmethod
    def from_review(cls, user: dict) -> UserInfo:
        extra = tuple(sorted((k, tuple(v or ())) for k, v in (user.get("extra") or {}).items()))
        return cls(user.get("username") or "", user.get("uid") or "", tuple(user.get("groups") or ()), extra)


class TtlCache:
    """Answers by key for a time that depends on the answer; one computation in flight per key."""

    def __init__(self, ttl: Callable[[object], float], max_entries: int = MAX_ENTRIES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[object, tuple[float, object]] = OrderedDict()
        self._inflight: dict[object, asyncio.Future] = {}

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key: object, compute: Callable[[], Awaitable[object]]) -> object:
        entry = self._entries.get(key)
        if entry is not None:
            if entry[0] > self._clock():
                return entry[1]
            del self._entries[key]
        pending = self._inflight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        pending = self._inflight[key] = asyncio.get_running_loop().create_future()
        try:
            value = await compute()
        except BaseException as exc:
            if not isinstance(exc, asyncio.CancelledError):
                pending.set_exception(exc)
                pending.exception()  # retrieved: nobody else may be waiting
            else:
                pending.cancel()
            raise
        finally:
            del self._inflight[key]
        pending.set_result(value)
        self._entries[key] = (self._clock() + self._ttl(value), value)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return value


def bearer_token(request: web.Request) -> str | None:
    """The token of `Authorization: Bearer T` (the scheme in any case), as the apiserver reads it."""
    parts = request.headers.get("Authorization", "").split(" ")
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


class DelegatingAuth:
    def __init__(self, rest: RestClient, *, timeout: float = REVIEW_TIMEOUT,
                 retry_delays: tuple[float, ...] = RETRY_DELAYS, clock: Callable[[], float] = time.monotonic) -> None:
        self.rest = rest
        self.timeout = timeout
        self.retry_delays = retry_delays
        self.users = TtlCache(lambda _user: AUTHN_TTL, clock=clock)
        self.decisions = TtlCache(lambda allowed: ALLOW_TTL if allowed[0] else DENY_TTL, clock=clock)

    @web.middleware
    async def middleware(self, request: web.Request, handler) -> web.StreamResponse:
        refused = await self.check(request)
        return refused if refused is not None else await handler(request)

    async def check(self, request: web.Request) -> web.Response | None:
        """None if the request may go on, else the answer that refuses it."""
        token = bearer_token(request)
        if token is None:
            return web.Response(status=401, text="Unauthorized\n")
        try:
            user = await self.authenticate(token)
        except ReviewFailed as err:
            log.error("metrics authentication failed", error=str(err))
            return web.Response(status=500, text="Authentication failed\n")
        if user is None:
            return web.Response(status=401, text="Unauthorized\n")
        verb, path = request.method.lower(), request.path
        try:
            allowed, reason = await self.authorize(user, verb, path)
        except ReviewFailed as err:
            log.error("metrics authorization failed", user=user.username, error=str(err))
            return web.Response(status=500, text=f"Authorization for user {user.username} failed\n")
        if not allowed:
            log.debug("metrics access denied", user=user.username, verb=verb, path=path, reason=reason)
            return web.Response(status=403, text=f"Authorization denied for user {user.username}\n")
        return None

    async def authenticate(self, token: str) -> UserInfo | None:
        """The token's user, or None if the API server does not know the token."""
        key = hashlib.sha256(token.encode()).digest()  # never keep the tokens themselves

        async def review() -> UserInfo | None:
            answer = await self._create(TOKEN_REVIEWS, {
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})
            status = answer.get("status") or {}
            return UserInfo.from_review(status.get("user") or {}) if status.get("authenticated") else None

        return await self.users.get(key, review)  # type: ignore[return-value]

    async def authorize(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        async def review() -> tuple[bool, str]:
            spec: dict = {"user": user.username, "groups": list(user.groups),
                          "nonResourceAttributes": {"path": path, "verb": verb}}
            if user.uid:
                spec["uid"] = user.uid
            if user.extra:
                spec["extra"] = {k: list(v) for k, v in user.extra}
            answer = await self._create(ACCESS_REVIEWS, {
                "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
            status = answer.get("status") or {}
            return bool(status.get("allowed")) and not status.get("denied"), status.get("reason") or ""

        return await self.decisions.get((user, verb, path), review)  # type: ignore[return-value]

    async def _create(self, path: str, body: dict) -> dict:
        """POST a review: transient failures retried with backoff, all of it within `timeout`."""
        last: Exception | None = None
        try:
            async with asyncio.timeout(self.timeout):
                for delay in (*self.retry_delays, None):
                    try:
                        return await self._post(path, body)
                    except ApiStatusError as err:
                        last = err
                        if err.code != 429 and err.code < 500:
                            break  # 403: the controller's account may not create reviews; retrying will not help
                    except TRANSIENT_ERRORS as err:
                        last = err
                    if delay is None:
                        break
                    await asyncio.sleep(delay)
        except TimeoutError:
            raise ReviewFailed(f"{path}: no answer within {self.timeout:g} s (last error: {last})") from last
        raise ReviewFailed(f"{path}: {last}") from last

    async def _post(self, path: str, body: dict) -> dict:
        return await self.rest.call("POST", path, body, timeout=self.timeout + 1.0) or {}


__all__ = ["DelegatingAuth", "ReviewFailed", "TtlCache", "UserInfo", "bearer_token"]
