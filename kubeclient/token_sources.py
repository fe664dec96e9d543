"""Where the Authorization header comes from: nothing, a fixed token or basic auth, a token file re-read as
client-go re-reads it, an OIDC id-token refreshed with its refresh token. The exec plugin is exec_plugin.py.

Every source renews when a request asks for the header, nothing on a timer: the exec plugin and the OIDC
refresh start ahead of the expiry in the background (a request still goes with the current credential),
and requests wait for them only when it is about to lapse. A renewal is single-flight (`SingleFlight`):
concurrent requests wait on the one read or refresh in progress. Each
credential a source gives has a `generation`; after a 401, `reload(sent)` renews at once unless the request
was sent with an older generation than the current one (another request renewed it meanwhile: the request
is retried with the new one without renewing again). The time they renew by is a `Clock` (clock.py): the
system's, or a test's that it advances.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar
from urllib.parse import quote_plus

import aiohttp

from .clock import SYSTEM_CLOCK, Clock
from .kube_config_parts import ConfigException

log = logging.getLogger(__name__)

T = TypeVar("T")

TOKEN_FILE_PERIOD = 60.0  # client-go's cachingTokenSource period for token files (and in-cluster tokens)


class SingleFlight(Generic[T]):
    """One run of a coroutine at a time: callers that come while it runs wait for its result (or its error).
    The run is shielded: a caller cancelled while waiting does not cancel it for the others."""

    def __init__(self) -> None:
        self._task: asyncio.Task[T] | None = None
        self._background: set[asyncio.Task] = set()

    @property
    def running(self) -> bool:
        return self._task is not None

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        if self._task is None:
            async def once() -> T:
                try:
                    return await work()
                finally:
                    self._task = None

            self._task = asyncio.get_running_loop().create_task(once())
        return await asyncio.shield(self._task)

    def start(self, work: Callable[[], Awaitable[T]], what: str) -> None:
        """Run `work` in the background unless a run is in progress; its error is logged (the caller still
        has a credential that serves, and runs it again in the foreground if that one runs out)."""
        if self._task is not None:
            return
        task = asyncio.get_running_loop().create_task(self.run(work))
        self._background.add(task)

        def logged(done: asyncio.Task) -> None:
            self._background.discard(done)
            if not done.cancelled() and done.exception() is not None:
                log.warning("renewing %s ahead of its expiry failed (it is still used): %s", what, done.exception())

        task.add_done_callback(logged)

    async def settled(self) -> None:
        """Wait until no run is in progress, a background one included (its outcome is its callers')."""
        while tasks := [t for t in (self._task, *self._background) if t is not None and not t.done()]:
            await asyncio.wait(tasks)

    async def cancel(self) -> None:
        """Stop a run in progress (the client is closing)."""
        tasks = [t for t in (self._task, *self._background) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class TokenSource:
    """No credential of its own (client certificates only, or anonymous)."""

    generation = 0  # counts the changes of the credential

    async def header(self) -> str | None:
        return None

    async def reload(self, sent: int | None = None) -> bool:
        """After a 401 to a request sent with generation `sent` (None: not known): True if the credential is
        (now) another than that one."""
        if sent is not None and sent != self.generation:
            return True
        return await self._renew()

    async def _renew(self) -> bool:
        """Renew now (joining a renewal in progress); True if the credential changed."""
        return False

    def client_chain(self) -> tuple[bytes, bytes] | None:
        """A client certificate and key that come with the token (an exec plugin's), else None."""
        return None

    async def settled(self) -> None:
        """Wait until no renewal is in progress (one started ahead of the expiry included): what a test that
        drives the clock waits for before it moves the time on."""
        for flight in self._flights():
            await flight.settled()

    async def close(self) -> None:
        """Stop a renewal in progress."""
        for flight in self._flights():
            await flight.cancel()

    def _flights(self) -> list[SingleFlight[bool]]:
        return [v for v in vars(self).values() if isinstance(v, SingleFlight)]

    def describe(self) -> str:
        return "no token"


class StaticHeader(TokenSource):
    """A kubeconfig `token`, or `username`/`password` (basic auth, as kubernetes_asyncio sends it)."""

    def __init__(self, value: str, kind: str) -> None:
        self.value, self.kind = value, kind

    async def header(self) -> str | None:
        return self.value

    def describe(self) -> str:
        return self.kind


def bearer(token: str) -> str:
    return f"Bearer {token}"


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


class TokenFile(TokenSource):
    """A token read from a file (kubeconfig `tokenFile`, the in-cluster projected token): kept for a minute,
    as client-go's cached file token source, then read again; read at once after a 401. A file that cannot
    be read keeps the last token (client-go logs and keeps it too), but a first read must succeed."""

    def __init__(self, path: str, period: float = TOKEN_FILE_PERIOD, clock: Clock = SYSTEM_CLOCK) -> None:
        self.path, self.period, self.clock = path, period, clock
        self._token: str | None = None
        self._read_at = float("-inf")
        self._flight: SingleFlight[bool] = SingleFlight()

    def describe(self) -> str:
        return f"token file {self.path}"

    async def header(self) -> str | None:
        if self._token is None or self.clock.monotonic() - self._read_at >= self.period:
            await self._flight.run(self._read)
        return bearer(self._token) if self._token else None

    async def _renew(self) -> bool:
        return await self._flight.run(self._read)

    def _read_file(self) -> str:
        with open(self.path) as f:  # a few hundred bytes on a local or tmpfs file: not worth a thread
            return f.read().strip()

    async def _read(self) -> bool:
        try:
            token = self._read_file()
        except OSError as err:
            if self._token is None:
                raise ConfigException(f"token file {self.path}: {err.strerror or err}") from err
            log.warning("could not read the token file %s (kept the last token): %s", self.path, err)
            return False
        finally:
            self._read_at = self.clock.monotonic()
        if token == self._token:
            return False
        if not token and self._token is not None:
            log.warning("the token file %s is empty (kept the last token)", self.path)
            return False
        self._token = token
        self.generation += 1
        return True


OIDC_MARGIN = 10.0  # seconds before an id-token's exp when requests wait for a refresh (a tenth of its life if shorter)
EARLY = 300.0  # at most this many seconds before then a refresh starts in the background (a tenth of the life)


def renewal_times(expires: float, life: float | None, margin: float) -> tuple[float, float]:
    """(when to start renewing in the background, when requests must wait for the renewal), wall-clock times: a
    credential whose renewal takes a while (a plugin's process, an issuer's round trips) is renewed before the
    requests that need one are held up."""
    must = expires - (min(margin, life / 10) if life else margin)
    return must - (min(EARLY, life / 10) if life else 0.0), must


def jwt_times(token: str) -> tuple[float | None, float | None]:
    """(exp, iat) of a JWT, unverified (it is ours to send, not to trust); None where absent."""
    parts = token.split(".")
    if len(parts) != 3:
        return None, None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None, None
    if not isinstance(claims, dict):
        return None, None
    exp, iat = claims.get("exp"), claims.get("iat")
    number = (int, float)
    return (float(exp) if isinstance(exp, number) and not isinstance(exp, bool) else None,
            float(iat) if isinstance(iat, number) and not isinstance(iat, bool) else None)


class OidcToken(TokenSource):
    """The `oidc` auth-provider: its id-token, refreshed with its refresh token at the issuer's token endpoint
    (client-go's oidc plugin, removed from kubectl in 1.26 but still in kubeconfigs that kubelogin writes).

    kubernetes_asyncio refreshes OIDC tokens too (OpenIDRequestor), but without an IdP CA it turns certificate
    verification off and with one it hands aiohttp a file name as an SSLContext; this does the same two
    requests (discovery, then the refresh_token grant with the client's basic auth) verifying TLS. The refreshed
    tokens are kept in memory: the kubeconfig is not rewritten (kubectl persists them)."""

    def __init__(self, config: dict, idp_ca: bytes | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        for key in ("idp-issuer-url", "client-id"):
            if not config.get(key):
                raise ConfigException(f"oidc auth-provider: {key} is missing")
        self.issuer = str(config["idp-issuer-url"]).rstrip("/")
        self.client_id, self.client_secret = str(config["client-id"]), str(config.get("client-secret") or "")
        self.id_token: str | None = config.get("id-token") or None
        self.refresh_token: str | None = config.get("refresh-token") or None
        self.idp_ca, self.clock = idp_ca, clock
        if self.id_token is None and self.refresh_token is None:
            raise ConfigException("oidc auth-provider: neither an id-token nor a refresh-token to get one")
        self._flight: SingleFlight[bool] = SingleFlight()

    def describe(self) -> str:
        return f"oidc auth-provider (issuer {self.issuer})"

    async def header(self) -> str | None:
        if self.refresh_token is not None:
            exp, iat = jwt_times(self.id_token) if self.id_token else (None, None)
            start, must = renewal_times(exp, exp - iat if iat is not None and iat < exp else None, OIDC_MARGIN) \
                if exp is not None else (float("inf"), float("inf"))
            now = self.clock.time()
            if self.id_token is None or now >= must:
                await self._flight.run(self._refresh)
            elif now >= start:
                self._flight.start(self._refresh, self.describe())
        return bearer(self.id_token) if self.id_token else None

    async def _renew(self) -> bool:
        return await self._flight.run(self._refresh) if self.refresh_token is not None else False

    async def _refresh(self) -> bool:
        context = ssl.create_default_context(cadata=self.idp_ca.decode() if self.idp_ca else None)
        # client_secret_basic as Go's oauth2 sends it: id and secret form-encoded, then basic auth.
        auth = {"Authorization": basic(quote_plus(self.client_id), quote_plus(self.client_secret))}
        timeout = aiohttp.ClientTimeout(total=30)
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context), timeout=timeout,
                                             trust_env=True) as session:  # the issuer may be behind the proxy
                async with session.get(f"{self.issuer}/.well-known/openid-configuration") as answer:
                    answer.raise_for_status()
                    endpoint = (await answer.json(content_type=None))["token_endpoint"]
                async with session.post(endpoint, headers=auth, data={"grant_type": "refresh_token",
                                                                   "refresh_token": self.refresh_token}) as answer:
                    body = await answer.json(content_type=None) if answer.content_type.endswith("json") else {}
                    body = body if isinstance(body, dict) else {}
                    if answer.status != 200:
                        why = body.get("error_description") or body.get("error")
                        raise ConfigException(f"oidc: the issuer {self.issuer} refused to refresh the token "
                                              f"({answer.status}: {why})")
        except (aiohttp.ClientError, TimeoutError, KeyError, ValueError) as err:
            raise ConfigException(f"oidc: could not refresh the token at {self.issuer}: {err!r}") from err
        if not body.get("id_token"):
            raise ConfigException(f"oidc: the issuer {self.issuer} answered the refresh without an id_token")
        changed = body["id_token"] != self.id_token
        self.id_token = body["id_token"]
        self.refresh_token = body.get("refresh_token") or self.refresh_token  # some issuers rotate it
        if changed:
            self.generation += 1
        return changed
