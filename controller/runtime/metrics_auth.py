"""Who may read /metrics: the API server decides, by TokenReview and SubjectAccessReview.

controller-runtime's filters.WithAuthenticationAndAuthorization, for an aiohttp app:

    auth = DelegatingAuth(rest_client)
    app = web.Application(middlewares=[auth.middleware])

Routing comes first, as controller-runtime's metrics server mounts its filter on the /metrics
handler only: a path or method the server does not serve is its 404 or 405 without any review, so
made-up paths cost the API server nothing. A request for a route that exists has its bearer token
reviewed (TokenReview), and the user it names is checked for `get` on the non-resource path asked
for (SubjectAccessReview; the `genericjob-metrics-reader` ClusterRole grants it for /metrics). No
or an unauthenticated token: 401. Not allowed: 403. A review that cannot be made (API server down,
timeout, the controller's own account lacking `create` on tokenreviews or subjectaccessreviews):
500, logged, and not cached, so that the next scrape asks again. controller-runtime answers a token
the server rejects with 500 too (the TokenReview's status.error becomes an error); here that is a
401, as kube-rbac-proxy answers it.

Answers are cached with controller-runtime's TTLs (pkg/metrics/filters: a token's answer, known or
not, one minute; an allow five minutes, a deny 30 s; kube-rbac-proxy keeps tokens two minutes, the
same 5 min / 30 s for decisions), keyed by a hash of the token, never the token. Concurrent requests
with the same token share one review: a Prometheus scraping every 15 s costs the API server nothing
after the first. Each cache is bounded, and tokens the API server rejected are bounded apart from
those it knew, so a flood of made-up tokens cannot evict the scrapers' answers.

TokenReviews are limited per second too (`max_in_flight` bounds concurrency, not rate: issue 47's random tokens
made 1,350 a second): a token the API server authenticated before (its hash remembered, bounded) draws on one
token bucket, any other token on another, so a flood of made-up tokens is refused 429 once its bucket is empty
while the scrapers' known tokens are still reviewed. The reviews go out on a client of their own (the same
credentials, connections of its own, `close()` closes them), so that a flood never holds the connections that
leader election renews its lease on.

At most `max_in_flight` reviews run at once. A request whose answer is not cached when all are
taken is answered 429 with `Retry-After: 1` at once, as the API server's max-in-flight filter
answers beyond --max-requests-inflight (it does not queue; controller-runtime and kube-rbac-proxy
set no limit). Waiting would hold the flood's connections open; Prometheus marks the scrape failed
and tries again at the next interval, by when its answer is usually cached.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import structlog
from aiohttp import web

from informers import ApiStatusError
from kubeclient.ratelimit import TokenBucket
from kubeclient.rest import TRANSIENT_ERRORS, RestClient

log = structlog.get_logger("controller.runtime.metrics_auth")

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
REVIEW_TIMEOUT = 10.0  # controller-runtime's TokenAccessReviewTimeout: all attempts of one review
RETRY_DELAYS = (0.5, 0.75, 1.125, 1.7)  # its WebhookRetryBackoff: 500 ms x 1.5, five attempts
AUTHN_TTL, ALLOW_TTL, DENY_TTL = 60.0, 300.0, 30.0
MAX_ENTRIES = 4096  # per kind of answer: a flood of made-up tokens evicts old answers instead of growing
# Reviews at once: a scrape costs two (TokenReview, SubjectAccessReview) once a minute per scraper and
# pod; eight lets a few Prometheus replicas and a person with curl through together.
MAX_REVIEWS_IN_FLIGHT = 8
# TokenReviews a second (and their burst): of tokens the API server knew before, and of any other. A scraper's
# token is reviewed once a minute; 10 a second of made-up tokens is 1/135 of the flood.
KNOWN_TOKEN_REVIEWS = (20.0, 40)
UNKNOWN_TOKEN_REVIEWS = (10.0, 20)


class ReviewFailed(Exception):
    """The API server did not answer a review (as opposed to answering no)."""


class TooManyReviews(Exception):
    """`max_in_flight` reviews are running: this one is not started."""


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


V = TypeVar("V")  # a cached answer


class TtlCache(Generic[V]):
    """Answers by key for a time that depends on the answer; one computation in flight per key.

    `kind(answer)` names the bound an answer counts against (each kind keeps at most `max_entries`,
    the oldest evicted first), so answers of one kind never evict those of another."""

    def __init__(self, ttl: Callable[[V], float], max_entries: int = MAX_ENTRIES,
                 clock: Callable[[], float] = time.monotonic, kind: Callable[[V], object] = lambda _: None
                 ) -> None:
        self._ttl = ttl
        self._max = max_entries
        self._clock = clock
        self._kind = kind
        self._kinds: dict[object, OrderedDict[object, tuple[float, V]]] = {}
        self._inflight: dict[object, asyncio.Future[V]] = {}

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._kinds.values())

    def _cached(self, key: object) -> tuple[float, V] | None:
        """The entry (expiry, answer) of `key` while it lasts, else None."""
        for entries in self._kinds.values():
            entry = entries.get(key)
            if entry is not None:
                if entry[0] > self._clock():
                    return entry
                del entries[key]
        return None

    async def get(self, key: object, compute: Callable[[], Awaitable[V]]) -> V:
        cached = self._cached(key)
        if cached is not None:
            return cached[1]
        pending = self._inflight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        pending = self._inflight[key] = asyncio.get_running_loop().create_future()
        try:
            value = await compute()
        except BaseException as exc:  # not cached: the next request asks again
            if not isinstance(exc, asyncio.CancelledError):
                pending.set_exception(exc)
                pending.exception()  # retrieved: nobody else may be waiting
            else:
                pending.cancel()
            raise
        finally:
            del self._inflight[key]
        pending.set_result(value)
        entries = self._kinds.setdefault(self._kind(value), OrderedDict())
        entries[key] = (self._clock() + self._ttl(value), value)
        while len(entries) > self._max:
            entries.popitem(last=False)
        return value


class ReviewSlots:
    """At most `limit` reviews at once; beyond that TooManyReviews at once, never a queue."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0

    @contextlib.contextmanager
    def taken(self) -> Iterator[None]:
        if self.in_flight >= self.limit:
            raise TooManyReviews(f"{self.limit} reviews in flight")
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1


def bearer_token(request: web.Request) -> str | None:
    """The token of `Authorization: Bearer T` (the scheme in any case), as the apiserver reads it."""
    parts = request.headers.get("Authorization", "").split(" ")
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


class DelegatingAuth:
    def __init__(self, rest: RestClient, *, timeout: float = REVIEW_TIMEOUT,
                 retry_delays: tuple[float, ...] = RETRY_DELAYS, clock: Callable[[], float] = time.monotonic,
                 max_in_flight: int = MAX_REVIEWS_IN_FLIGHT, max_entries: int = MAX_ENTRIES,
                 known_rate: tuple[float, int] = KNOWN_TOKEN_REVIEWS,
                 unknown_rate: tuple[float, int] = UNKNOWN_TOKEN_REVIEWS) -> None:
        # Its own connections, as many as reviews may be in flight; the rate is limited by the buckets below.
        self.rest = rest.with_own_connections(max_in_flight, qps=0.0, burst=0)
        self.timeout = timeout
        self.retry_delays = retry_delays
        # A token the API server knew and one it did not are bounded apart (kind): made-up tokens evict
        # only each other.
        self.users: TtlCache[UserInfo | None] = TtlCache(lambda _user: AUTHN_TTL, max_entries, clock,
                                                         kind=lambda user: user is None)
        self.decisions: TtlCache[tuple[bool, str]] = TtlCache(lambda allowed: ALLOW_TTL if allowed[0] else DENY_TTL,
                                                              max_entries, clock, kind=lambda allowed: allowed[0])
        self.slots = ReviewSlots(max_in_flight)
        self.rates = {True: TokenBucket(*known_rate), False: TokenBucket(*unknown_rate)}  # by: was the token known?
        self.known: OrderedDict[bytes, None] = OrderedDict()  # hashes of tokens the API server authenticated
        self._max_known = max_entries

    async def close(self) -> None:
        """Close the reviews' connections (the credentials stay the given client's)."""
        await self.rest.close()

    @web.middleware
    async def middleware(self, request: web.Request, handler) -> web.StreamResponse:
        # Routing first: what no route serves is the router's 404 or 405, and no review is made for it.
        unrouted = request.match_info.http_exception
        if unrouted is not None:
            raise unrouted
        refused = await self.check(request)
        return refused if refused is not None else await handler(request)

    async def check(self, request: web.Request) -> web.Response | None:
        """None if the request may go on, else the answer that refuses it."""
        token = bearer_token(request)
        if token is None:
            return web.Response(status=401, text="Unauthorized\n")
        try:
            user = await self.authenticate(token)
        except TooManyReviews:
            return too_many_reviews()
        except ReviewFailed as err:
            log.error("metrics authentication failed", error=str(err))
            return web.Response(status=500, text="Authentication failed\n")
        if user is None:
            return web.Response(status=401, text="Unauthorized\n")
        verb, path = request.method.lower(), request.path
        try:
            allowed, reason = await self.authorize(user, verb, path)
        except TooManyReviews:
            return too_many_reviews()
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
            if not self.rates[key in self.known].try_take():
                raise TooManyReviews("TokenReviews a second")
            with self.slots.taken():
                answer = await self._create(TOKEN_REVIEWS, {
                    "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})
            status = answer.get("status") or {}
            if not status.get("authenticated"):
                return None
            self.known[key] = None
            self.known.move_to_end(key)
            while len(self.known) > self._max_known:
                self.known.popitem(last=False)
            return UserInfo.from_review(status.get("user") or {})

        return await self.users.get(key, review)

    async def authorize(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        async def review() -> tuple[bool, str]:
            spec: dict = {"user": user.username, "groups": list(user.groups),
                          "nonResourceAttributes": {"path": path, "verb": verb}}
            if user.uid:
                spec["uid"] = user.uid
            if user.extra:
                spec["extra"] = {k: list(v) for k, v in user.extra}
            with self.slots.taken():
                answer = await self._create(ACCESS_REVIEWS, {
                    "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
            status = answer.get("status") or {}
            return bool(status.get("allowed")) and not status.get("denied"), status.get("reason") or ""

        return await self.decisions.get((user, verb, path), review)

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
        """One POST of a review to the API server: the only place that knows which client makes it."""
        return await self.rest.call("POST", path, body, timeout=self.timeout + 1.0) or {}


def too_many_reviews() -> web.Response:
    """The API server's max-in-flight answer: 429, try again in a second."""
    return web.Response(status=429, text="Too many requests, please try again later.\n",
                        headers={"Retry-After": "1"})


__all__ = ["DelegatingAuth", "ReviewFailed", "ReviewSlots", "TooManyReviews", "TtlCache", "UserInfo",
           "bearer_token"]
