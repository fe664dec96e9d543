"""The listening socket, bounded: how many connections may be open, how long a TLS handshake and a request's head
may take.

aiohttp's own site hands every accepted socket to asyncio's TLS layer, which gives each a 256 KiB read buffer
and waits up to a minute for a handshake; the issue's 3,000 connections that never started TLS took the server
from 156 MB to 1 GB. kube-apiserver's net/http closes a connection that has not finished its handshake, or sent
a request's head, within ReadHeaderTimeout (32 s), and one idle between requests after IdleTimeout (90 s).

Here every accepted connection is counted from the moment it is accepted; past MAX_CONNECTIONS it is closed at
once, costing nothing. TLS starts on it with a handshake deadline; then aiohttp's request handler takes it, with
its keep-alive timer (the RequestHandler closes a connection waiting for a request, partly sent or not, when it
runs out) set to the header timeout. A request being served is never timed out: a watch lasts as long as it is
watched.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass

from aiohttp import web

log = logging.getLogger("localcluster")


@dataclass
class ConnectionLimits:
    # Until its handshake ends a connection holds asyncio's 256 KiB TLS read buffer: 512 of them, ~130 MB at worst
    # (measured: 1,000 uncapped, 300 MB). kube-apiserver has no such cap; its clients here are a few dozen.
    max_connections: int = 512
    handshake_timeout: float = 32.0  # kube-apiserver's ReadHeaderTimeout bounds the handshake too
    header_timeout: float = 32.0  # from accepting (or the last answer) to a complete request head


class _Gate(asyncio.Protocol):
    """The first protocol of an accepted connection: counted, then upgraded to TLS, then handed to aiohttp."""

    def __init__(self, site: BoundedSite) -> None:
        self.site = site
        self.early: list[bytes] = []  # what the TLS layer decrypted before the connection was handed over

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        site = self.site
        if not site.admit(transport):
            transport.abort()
            return
        if site.ssl_context is None:
            site.hand_over(transport)
            return
        transport.pause_reading()  # no byte of the handshake read before the TLS layer is in place
        task = asyncio.get_running_loop().create_task(site.start_tls(transport, self))
        site.handshakes.add(task)
        task.add_done_callback(site.handshakes.discard)

    def data_received(self, data: bytes) -> None:
        """Bytes that came with the end of the handshake, before start_tls returned: kept for aiohttp."""
        self.early.append(data)


class BoundedSite(web.BaseSite):
    """A TCP site (as aiohttp's TCPSite) whose connections are bounded by ConnectionLimits."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, ssl_context: ssl.SSLContext | None,
                 limits: ConnectionLimits) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self._host, self._port, self.limits = host, port, limits
        self.open: set[asyncio.BaseTransport] = set()
        self.handshakes: set[asyncio.Task] = set()
        self.refused = 0

    @property
    def name(self) -> str:
        return f"{'https' if self._ssl_context else 'http'}://{self._host}:{self._port}"

    @property
    def ssl_context(self) -> ssl.SSLContext | None:
        return self._ssl_context

    async def start(self) -> None:
        await super().start()
        self._server = await asyncio.get_running_loop().create_server(
            lambda: _Gate(self), self._host, self._port, reuse_address=True, backlog=self._backlog)

    async def stop(self) -> None:
        for task in list(self.handshakes):
            task.cancel()
        await super().stop()

    def admit(self, transport: asyncio.BaseTransport) -> bool:
        """Count the connection in, unless MAX connections are open (those closed since are forgotten first)."""
        self.open = {t for t in self.open if not t.is_closing()}
        if len(self.open) >= self.limits.max_connections:
            self.refused += 1
            if self.refused == 1 or self.refused % 1000 == 0:
                log.warning("refused a connection: %d are open (the limit); %d refused so far", len(self.open),
                            self.refused)
            return False
        self.open.add(transport)
        return True

    async def start_tls(self, transport: asyncio.Transport, gate: _Gate) -> None:
        """The handshake within its deadline (else the connection is closed), then the connection to aiohttp."""
        try:
            tls = await asyncio.get_running_loop().start_tls(transport, gate, self._ssl_context, server_side=True,
                                                             ssl_handshake_timeout=self.limits.handshake_timeout)
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError, asyncio.CancelledError):
            transport.abort()  # start_tls closed it already on most failures
            return
        if tls is None or tls.is_closing():
            return
        self.hand_over(tls, gate.early)

    def hand_over(self, transport: asyncio.Transport, early: list[bytes] = ()) -> None:
        server = self._runner.server
        assert server is not None
        protocol = server()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        for data in early:
            protocol.data_received(data)


def runner_options(limits: ConnectionLimits) -> dict:
    """AppRunner's options: its handlers' keep-alive timer is what closes a connection whose request head does
    not come (RequestHandler closes one that waits for a request when the timer runs out)."""
    return {"keepalive_timeout": limits.header_timeout}
