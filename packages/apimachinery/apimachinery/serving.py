"""The listening socket, bounded: how many connections may be open, how long a TLS handshake and a request's head
may take, how long a connection may stay idle. One implementation for every listener of the project: localcluster's
API server and the controller's admission webhook and metrics endpoints.

aiohttp's own site hands every accepted socket to asyncio's TLS layer, which gives each a 256 KiB read buffer
(for the connection's whole life) and waits up to a minute for a handshake; aiohttp then keeps an idle connection
3,630 s. Issue 35's 3,000 connections that never started TLS took localcluster from 156 MB to 1 GB; issue 47's 800
connections trickling a header line every 5 s held 195 MiB of the controller for as long as they liked.
kube-apiserver's net/http closes a connection that has not finished its handshake, or sent a request's head,
within ReadHeaderTimeout (32 s), and one idle between requests after IdleTimeout (90 s).

Here every accepted connection is counted from the moment it is accepted. TLS starts on it with a handshake
deadline; then aiohttp's request handler takes it, with its keep-alive timer (the RequestHandler closes a
connection waiting for a request, partly sent or not, when it runs out; a byte received does not restart it) set
to the header timeout: the same deadline bounds a request's head and the idle time between requests. A request
being served is never timed out here: a watch lasts as long as it is watched.

At `max_connections`, a new connection is not refused while an open one is doing nothing: the oldest connection
that is not serving a request (in its handshake, sending a head, or idle) is closed to make room, so a flood of
slow clients cannot keep out the clients that finish a request in milliseconds (the API server calling the
webhook, a scrape): they get in, are answered, and only the flood's connections are cut. A new connection is
refused only when every open one is serving a request.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from aiohttp import web

log = logging.getLogger("apimachinery.serving")


@dataclass(frozen=True)
class ConnectionLimits:
    # Until it closes a TLS connection holds asyncio's 256 KiB read buffer: 512 of them, ~130 MB at worst
    # (measured: 1,000 uncapped, 300 MB). kube-apiserver has no such cap; localcluster's clients are a few dozen.
    max_connections: int = 512
    handshake_timeout: float = 32.0  # kube-apiserver's ReadHeaderTimeout bounds the handshake too
    header_timeout: float = 32.0  # from the handshake (or the last answer) to a complete request head


class _Connection:
    """One accepted connection: its socket's transport, and how many of its requests are being served."""

    __slots__ = ("handed", "raw", "serving")

    def __init__(self, raw: asyncio.Transport) -> None:
        self.raw = raw
        self.handed: asyncio.Transport | None = None  # the transport aiohttp reads (TLS's, or the raw one)
        self.serving = 0


class _Gate(asyncio.Protocol):
    """The first protocol of an accepted connection: counted, then upgraded to TLS, then handed to aiohttp."""

    def __init__(self, site: BoundedSite) -> None:
        self.site = site
        self.early: list[bytes] = []  # what the TLS layer decrypted before the connection was handed over

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # a TCP server's (uvloop's is not asyncio's class)
        site = self.site
        connection = site.admit(transport)
        if connection is None:
            transport.abort()
            return
        if site.ssl_context is None:
            site.hand_over(connection, transport)
            return
        transport.pause_reading()  # no byte read before the TLS layer is in place
        task = asyncio.get_running_loop().create_task(site.start_tls(connection, self))
        site.handshakes.add(task)
        task.add_done_callback(site.handshakes.discard)

    def data_received(self, data: bytes) -> None:
        """Bytes that came with the end of the handshake, before start_tls returned: kept for aiohttp."""
        self.early.append(data)


class BoundedSite(web.BaseSite):
    """A TCP site (as aiohttp's TCPSite) whose connections are bounded by ConnectionLimits. Give its runner
    `runner_options(limits)`, which set aiohttp's keep-alive timer to the header timeout."""

    def __init__(self, runner: web.BaseRunner, host: str | None, port: int, ssl_context: ssl.SSLContext | None,
                 limits: ConnectionLimits) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self._host, self._port, self.limits = host, port, limits
        self.open: dict[asyncio.Transport, _Connection] = {}  # by socket transport, oldest first
        self._handed: dict[asyncio.Transport, _Connection] = {}  # by the transport aiohttp reads
        self.handshakes: set[asyncio.Task[None]] = set()
        self.refused = 0  # new connections closed at once: every open one was serving a request
        self.evicted = 0  # open connections closed to make room: they were doing nothing

    @property
    def name(self) -> str:
        return f"{'https' if self._ssl_context else 'http'}://{self._host}:{self._port}"

    @property
    def ssl_context(self) -> ssl.SSLContext | None:
        return self._ssl_context

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None, "the runner is set up before its site starts"
        server.request_handler = self._counted(server.request_handler)
        self._server = await asyncio.get_running_loop().create_server(
            lambda: _Gate(self), self._host, self._port, reuse_address=True, backlog=self._backlog)

    async def stop(self) -> None:
        for task in list(self.handshakes):
            task.cancel()
        await super().stop()

    def _counted(self, handler: Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
                 ) -> Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]:
        """The runner's request handler, counting the requests being served on each connection."""
        handed = self._handed

        async def counted(request: web.BaseRequest) -> web.StreamResponse:
            connection = handed.get(request.transport)  # type: ignore[arg-type]
            if connection is None:
                return await handler(request)
            connection.serving += 1
            try:
                return await handler(request)
            finally:
                connection.serving -= 1

        return counted

    def admit(self, transport: asyncio.Transport) -> _Connection | None:
        """Count the connection in, making room if the cap is met; None: refused (every open one is serving)."""
        self._forget_closed()  # at most max_connections to look at, on each accept
        if len(self.open) >= self.limits.max_connections:
            idle = next((c for c in self.open.values() if not c.serving), None)
            if idle is None:
                self.refused += 1
                self._warn("refused a connection: all %d open ones are serving requests; %d refused so far",
                           self.refused, len(self.open), self.refused)
                return None
            self.evicted += 1
            self._warn("closed an idle connection to make room for a new one: %d are open (the limit); %d closed "
                       "so far", self.evicted, len(self.open), self.evicted)
            self._drop(idle)
            idle.raw.abort()
        connection = self.open[transport] = _Connection(transport)
        return connection

    @staticmethod
    def _warn(message: str, count: int, *args: object) -> None:
        if count == 1 or count % 1000 == 0:
            log.warning(message, *args)

    def _forget_closed(self) -> None:
        for connection in [c for c in self.open.values() if c.raw.is_closing()]:
            self._drop(connection)

    def _drop(self, connection: _Connection) -> None:
        self.open.pop(connection.raw, None)
        if connection.handed is not None:
            self._handed.pop(connection.handed, None)

    async def start_tls(self, connection: _Connection, gate: _Gate) -> None:
        """The handshake within its deadline (else the connection is closed), then the connection to aiohttp."""
        transport, context = connection.raw, self._ssl_context
        assert context is not None  # TLS is started only on a site with a context
        try:
            tls = await asyncio.get_running_loop().start_tls(
                transport, gate, context, server_side=True,
                ssl_handshake_timeout=self.limits.handshake_timeout)
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError, asyncio.CancelledError):
            transport.abort()  # start_tls closed it already on most failures
            return
        if tls is None or tls.is_closing():
            return
        self.hand_over(connection, tls, gate.early)

    def hand_over(self, connection: _Connection, transport: asyncio.Transport, early: Sequence[bytes] = ()) -> None:
        server = self._runner.server
        assert server is not None
        connection.handed = transport
        self._handed[transport] = connection
        protocol = server()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        for data in early:
            protocol.data_received(data)


def runner_options(limits: ConnectionLimits) -> dict[str, Any]:
    """AppRunner's options: its handlers' keep-alive timer is what closes a connection whose request head does
    not come (RequestHandler closes one that waits for a request when the timer runs out)."""
    return {"keepalive_timeout": limits.header_timeout}


def bound_address(runner: web.BaseRunner) -> str:
    """The "host:port" a runner's first site listens on ("[::1]:port" for IPv6)."""
    host, port = runner.addresses[0][:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


__all__ = ["BoundedSite", "ConnectionLimits", "bound_address", "runner_options"]
