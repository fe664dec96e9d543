"""The one way the controller talks to the API server: `RestClient`, made from a `ClientSettings`.

Two connection pools to one server, one set of credentials, one proxy decision, one metrics hook:

- lists, watches and log streams go over an aiohttp session (large and streamed bodies), made with
  trust_env off: the proxy is decided once (proxy.py), never looked up in a thread per request;
- writes and the small JSON exchanges (leader election, reviews, the rare live GET) go over http1.py's
  keep-alive connections, a third of aiohttp's CPU per request; through the aiohttp session instead
  when a proxy is in the way (http1.py speaks to the server directly).

Every request carries `await credentials.authorization()` (a cached value unless it is due for renewal),
and a 401 is retried once when `credentials.unauthorized()` says it loaded something new (an exec plugin
re-run, a rotated token file): client-go's behaviour for an exec plugin. TLS comes from
`credentials.ssl_context()` per request: when it returns a new object (a rotated client certificate or
CA), new connections are made with it; the write connections made with the old one are closed once
the requests on them have had their time (the request timeout), and aiohttp's idle ones expire.

Each client waits on its own token bucket (ratelimit.py; none unless asked): `with_limit` makes one that
shares everything else. Errors: `ApiStatusError` for an answer >= 400; `TRANSIENT_ERRORS` for what a
broken network or a restarting server looks like, which callers retry with backoff.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import ssl
import time
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit

import aiohttp
import orjson

from apimachinery.errors import ApiStatusError
from kubeclient.clock import SYSTEM_CLOCK, Clock
from kubeclient.http1 import Answer, Http1Pool
from kubeclient.observe import RequestObserver, request_verb
from kubeclient.proxy import proxy_for
from kubeclient.ratelimit import TokenBucket
from kubeclient.settings import ClientSettings

# What a broken network or a restarting server looks like: retried with backoff by the callers.
TRANSIENT_ERRORS = (aiohttp.ClientError, OSError, TimeoutError, orjson.JSONDecodeError)
JSON = "application/json"


class _Shared:
    """What every client made by `with_limit` shares: the connections and the credentials' TLS."""

    def __init__(self, settings: ClientSettings, connections: int, proxy: str | None,
                 owns_credentials: bool = True) -> None:
        self.settings = settings
        self.owns_credentials = owns_credentials
        self.connections = connections
        self.proxy = proxy
        self.tls = urlsplit(settings.server).scheme == "https"
        self.session: aiohttp.ClientSession | None = None
        self.pool: Http1Pool | None = None
        self.pool_context: ssl.SSLContext | None = None
        self.retiring: set[asyncio.TimerHandle] = set()
        self.retired: list[Http1Pool] = []
        self.closing: set[asyncio.Task[None]] = set()

    def session_now(self) -> aiohttp.ClientSession:
        if self.session is None:  # made in the running loop, on first use
            self.session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.connections), trust_env=False)
        return self.session

    def write_pool(self, timeout: float) -> Http1Pool:
        context = self.settings.credentials.ssl_context() if self.tls else None
        pool = self.pool
        if pool is None or context is not self.pool_context:
            if pool is not None:
                self._retire(pool, timeout)
            self.pool = pool = Http1Pool(self.settings.server, context, server_hostname=self.settings.tls_server_name,
                                         limit=self.connections)
            self.pool_context = context
        return pool

    def _retire(self, pool: Http1Pool, timeout: float) -> None:
        """No request goes to `pool` any more; those on it now end within `timeout`, then it is closed."""
        self.retired.append(pool)
        loop = asyncio.get_running_loop()

        def close() -> None:
            self.retiring.discard(handle)
            self.retired.remove(pool)
            task = loop.create_task(pool.close())
            self.closing.add(task)
            task.add_done_callback(self.closing.discard)

        handle = loop.call_later(timeout + 1.0, close)
        self.retiring.add(handle)

    async def close(self) -> None:
        for handle in self.retiring:
            handle.cancel()
        for pool in [*self.retired, *([self.pool] if self.pool else [])]:
            await pool.close()
        self.retiring.clear()
        self.retired.clear()
        self.pool = None
        if self.session is not None:
            await self.session.close()
            self.session = None
        if self.owns_credentials:
            await self.settings.credentials.close()


class RestClient:
    def __init__(self, settings: ClientSettings, *, observer: RequestObserver | None = None,
                 user_agent: str | None = None, timeout: float = 30.0, connections: int = 100,
                 qps: float = 0.0, burst: int = 0, clock: Clock = SYSTEM_CLOCK) -> None:
        """`timeout`: seconds per request unless a call says otherwise; `connections`: at most this many to the
        server in each pool (100: kubernetes_asyncio's and aiohttp's default); `qps`/`burst`: this client's rate
        limit (qps <= 0: none), kept by `clock`. The client owns the settings' credentials: `close()` closes them
        too."""
        self.settings = settings
        self.server = settings.server.rstrip("/")
        self.credentials = settings.credentials
        self.observer = observer
        self.timeout = timeout
        self.limiter = TokenBucket(qps, burst, clock)
        proxy = proxy_for(settings.server, settings.proxy_url)
        self.proxy, self._proxy_headers = _split_credentials(proxy)
        # http1.py connects to the server itself: with a proxy the writes take the aiohttp session too (a
        # benchmark sets this to compare the two paths).
        self.writes_via_session = bool(self.proxy)
        self._shared = _Shared(settings, connections, self.proxy)
        self._headers = {"Accept": JSON}
        if user_agent:
            self._headers["User-Agent"] = user_agent

    @property
    def user_agent(self) -> str | None:
        return self._headers.get("User-Agent")

    @user_agent.setter
    def user_agent(self, value: str) -> None:
        self._headers["User-Agent"] = value

    def with_limit(self, qps: float, burst: int) -> RestClient:
        """A client on the same connections and credentials, waiting on a token bucket of its own. Close the
        original only: closing either closes what they share."""
        sibling = copy.copy(self)
        sibling.limiter = TokenBucket(qps, burst, self.limiter.clock)
        return sibling

    def with_own_connections(self, connections: int, qps: float, burst: int) -> RestClient:
        """A client with the same credentials on connections of its own (at most `connections`) and a token bucket
        of its own: whatever waits on it, or floods it, never holds the original's connections (leader election's
        renewals). Close both: this one closes its connections, the original the credentials too."""
        sibling = copy.copy(self)
        sibling.limiter = TokenBucket(qps, burst, self.limiter.clock)
        sibling._shared = _Shared(self.settings, connections, self.proxy, owns_credentials=False)
        return sibling

    @property
    def write_pool(self) -> Http1Pool | None:
        """The write connections in use now (None: writes go through aiohttp, for the proxy)."""
        return None if self.writes_via_session else self._shared.pool

    async def close(self) -> None:
        await self._shared.close()

    async def __aenter__(self) -> RestClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- the write path -----------------------------------------------------------------------

    async def send(self, method: str, path: str, body: bytes | None = None, content_type: str = JSON, *,
                   verb: str | None = None, resource: str | None = None, timeout: float | None = None,
                   idempotent: bool = False) -> Answer:
        """One request over the write connections, its answer read whole, whatever its status. `verb` and
        `resource` name it in the metrics (worked out from the path when not given); `idempotent`: the caller
        declares a second copy harmless, so a reused connection lost unanswered is retried (http1.py)."""
        await self.limiter.take()
        timeout = timeout or self.timeout
        if verb is None or resource is None:
            verb, resource = request_verb(method, path)
        started = time.perf_counter()
        code = "<error>"
        try:
            for retried in (False, True):
                headers = {**self._headers, "Content-Type": content_type}
                authorization = await self.credentials.authorization()
                if authorization:
                    headers["Authorization"] = authorization
                if self.writes_via_session:
                    answer = await self._send_via_session(method, path, headers, body, timeout)
                else:
                    answer = await self._shared.write_pool(timeout).request(method, path, headers, body, timeout,
                                                                            idempotent=idempotent)
                if answer.status != 401 or retried or not await self.credentials.unauthorized():
                    break
            code = str(answer.status)
            return answer
        finally:
            if self.observer is not None:
                self.observer.observe(verb, resource, code, time.perf_counter() - started)

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None, *,
                   params: dict[str, str] | None = None, content_type: str = JSON, timeout: float | None = None
                   ) -> dict[str, Any] | None:
        """`send` with a JSON body and a JSON answer: the decoded answer (None if empty); ApiStatusError for
        an answer >= 400."""
        if params:
            path = f"{path}?{urlencode(params)}"
        answer = await self.send(method, path, None if body is None else orjson.dumps(body), content_type,
                                 timeout=timeout, idempotent=method == "GET")
        if answer.status >= 400:
            raise ApiStatusError.from_body(answer.status, answer.reason, answer.body, answer.retry_after)
        return orjson.loads(answer.body) if answer.body else None

    async def _send_via_session(self, method: str, path: str, headers: dict[str, str], body: bytes | None,
                                timeout: float) -> Answer:
        response = await self._shared.session_now().request(
            method, self.server + path, data=body, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout),
            **self._connection_options())
        try:
            raw = await response.read()  # to the end, so that the connection is kept for the next request
        finally:
            response.release()
        return Answer(response.status, response.reason or "", raw, response.headers.get("Retry-After"))

    # --- lists and watches --------------------------------------------------------------------

    async def get(self, path: str, params: dict[str, str] | None = None, *, timeout: float | None = None) -> bytes:
        """The body of a successful GET over the aiohttp session, undecoded (the caller decodes it when it
        suits it); ApiStatusError for an answer >= 400."""
        timeout = timeout or self.timeout
        try:
            response = await self._open(path, params, aiohttp.ClientTimeout(total=timeout), accept=JSON)
            try:
                return await response.read()
            finally:
                response.release()
        except TimeoutError as err:  # aiohttp's carries no message: say what timed out
            raise TimeoutError(f"no response from {self.server} within {timeout:g} s") from err

    async def stream(self, path: str, params: dict[str, str] | None = None, *, timeout: float | None = None,
                     accept: str = JSON) -> aiohttp.ClientResponse:
        """A streaming GET (a watch, a log): its headers within `timeout`, the body at the caller's pace.
        The caller bounds the body with its own inactivity watchdog and must close the response."""
        timeout = timeout or self.timeout
        try:
            async with asyncio.timeout(timeout):
                return await self._open(path, params, aiohttp.ClientTimeout(
                    total=None, connect=timeout, sock_connect=timeout), accept=accept)
        except TimeoutError as err:
            raise TimeoutError(f"no response from {self.server} within {timeout:g} s") from err

    async def _open(self, path: str, params: dict[str, str] | None, timeout: aiohttp.ClientTimeout, *,
                    accept: str) -> aiohttp.ClientResponse:
        """A GET whose headers have arrived (401 retried once, as `send`); ApiStatusError for >= 400."""
        await self.limiter.take()
        verb, resource = request_verb("GET", path, params)
        url = self.server + path
        started = time.perf_counter()
        code = "<error>"
        try:
            for retried in (False, True):
                headers = {**self._headers, "Accept": accept}
                authorization = await self.credentials.authorization()
                if authorization:
                    headers["Authorization"] = authorization
                response = await self._shared.session_now().get(
                    url, params=params, headers=headers, timeout=timeout, **self._connection_options())
                if response.status != 401 or retried or not await self.credentials.unauthorized():
                    break
                response.release()
            code = str(response.status)
        finally:
            if self.observer is not None:
                self.observer.observe(verb, resource, code, time.perf_counter() - started)
        if response.status >= 400:
            raise await status_error(response)
        return response

    def _connection_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"proxy": self.proxy, "proxy_headers": self._proxy_headers,
                         "server_hostname": self.settings.tls_server_name}
        if self._shared.tls:
            options["ssl"] = self.credentials.ssl_context()  # a new one: new connections (aiohttp keys them by it)
        return options


async def status_error(response: aiohttp.ClientResponse) -> ApiStatusError:
    """The ApiStatusError of an answer >= 400, its body read and the response released."""
    try:
        body = await response.read()
    finally:
        response.release()
    return ApiStatusError.from_body(response.status, response.reason or "", body, response.headers.get("Retry-After"))


def _split_credentials(proxy: str | None) -> tuple[str | None, dict[str, str] | None]:
    """A proxy URL's user:password become its Proxy-Authorization header (Basic, as Go sends it)."""
    if not proxy:
        return None, None
    parts = urlsplit(proxy)
    if parts.username is None:
        return proxy, None
    secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
    netloc = parts.netloc.rpartition("@")[2]
    return (urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)),
            {"Proxy-Authorization": "Basic " + base64.b64encode(secret).decode()})


__all__ = ["JSON", "TRANSIENT_ERRORS", "Answer", "RestClient", "status_error"]
