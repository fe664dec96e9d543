"""Keep-alive HTTP/1.1 connections to the API server, for the controller's writes.

aiohttp's ClientSession (which the informers' lists and watches keep using) spends 100-120 us of CPU
per request in Python: a ClientRequest and a ClientResponse, header multidicts, a cookie jar, a writer
task, timers. The controller makes ~18 small writes a job (pods, Services, Events, status), and in a
burst they were a third of its CPU. Here one exchange costs ~35 us: the request line, headers and body
go out in one TLS write, and the answer is parsed by httptools (llhttp, Node.js's parser), which knows
Content-Length and chunked bodies.

The scope is deliberately small: one server; bodies held in memory; answers read whole (at most
MAX_ANSWER bytes); no proxy (KubeClient uses aiohttp when one is configured), no compression (no
Accept-Encoding is sent), no redirects, no HTTP/2 (no ALPN is offered, so the server speaks HTTP/1.1).

At most `limit` connections are open at once; a request beyond waits for one. An idle connection is
reused last-in-first-out. A connection is dropped when the server says `Connection: close` or closes
it, and after an exchange that failed, timed out or was cancelled (its state is then unknown). One
failure is retried, once: a request on a reused connection that the server closed before a byte of
the answer arrived (typically an idle connection closed by the server's keep-alive timeout as the
request went out; Go's transport retries it too). Every write the controller sends is safe to repeat:
a create of a name that now exists gets 409, which its caller handles; a PUT carries its
resourceVersion, a delete its uid precondition; a merge patch sets the same fields again.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import NamedTuple
from urllib.parse import urlsplit

import httptools

MAX_ANSWER = 64 * 1024 * 1024  # bytes: far above any object etcd stores (1.5 MiB) or a Status


class Answer(NamedTuple):
    status: int
    reason: str
    body: bytes
    retry_after: str | None  # the Retry-After header, as sent


class _Connection(asyncio.Protocol):
    """One TCP (TLS) connection: one exchange at a time, answers parsed as they arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[Answer] | None = None
        self.closed = False
        self.answered = False  # a byte of an answer has arrived on this connection since the request went out
        self._reason = b""
        self._retry_after: str | None = None
        self._body: list[bytes] = []
        self._size = 0

    async def exchange(self, request: bytes, deadline: float) -> Answer:
        """Sends `request` and waits for its answer until the loop's clock reads `deadline` (then TimeoutError)."""
        assert self.transport is not None and self.waiter is None
        self.answered = False
        if self.closed or self.transport.is_closing():  # closed since it was handed out: no answer would ever come
            raise ConnectionResetError("the API server closed the connection")
        loop = asyncio.get_running_loop()
        self.waiter = waiter = loop.create_future()
        # A timer on the answer itself: cheaper than asyncio.timeout's, which would cancel the whole task.
        timer = loop.call_at(deadline, self._expire, waiter)
        self.transport.write(request)
        try:
            return await waiter
        finally:
            timer.cancel()

    def _expire(self, waiter: asyncio.Future) -> None:
        if waiter is self.waiter:
            self._fail(TimeoutError())

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    # --- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.answered = True
        if self.waiter is None:  # the server spoke out of turn: nothing it says now can be trusted
            self._fail(ConnectionError("the API server sent data no request asked for"))
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as err:
            self._fail(ConnectionError(f"malformed HTTP answer from the API server: {err}"))

    def eof_received(self) -> bool:
        return False  # a half-closed HTTP/1.1 connection is done: close it (connection_lost follows)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc if isinstance(exc, OSError) else ConnectionResetError("the API server closed the connection"))

    # --- httptools callbacks -----------------------------------------------------------------

    def on_status(self, reason: bytes) -> None:
        self._reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"retry-after":
            self._retry_after = value.decode("latin-1")

    def on_body(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._size > MAX_ANSWER:
            raise ValueError(f"an answer over {MAX_ANSWER} bytes")  # feed_data raises it as a parser error
        self._body.append(chunk)

    def on_message_complete(self) -> None:
        answer = Answer(self.parser.get_status_code(), self._reason.decode("latin-1"), b"".join(self._body),
                        self._retry_after)
        if not self.parser.should_keep_alive():
            self.closed = True  # the pool closes it instead of reusing it
        self._reason, self._retry_after, self._body, self._size = b"", None, [], 0
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(answer)

    def _fail(self, exc: Exception) -> None:
        self.closed = True
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        if self.transport is not None:
            self.transport.abort()


class Http1Pool:
    def __init__(self, url: str, ssl_context: ssl.SSLContext | None = None, *, server_hostname: str | None = None,
                 limit: int = 16) -> None:
        """`url`: the server (https://host:port, optionally with a path prefix); `ssl_context` for https."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) server URL: {url!r}")
        tls = parts.scheme == "https"
        self.server = url
        self._host = parts.hostname
        self._port = parts.port or (443 if tls else 80)
        self._ssl = (ssl_context or ssl.create_default_context()) if tls else None
        self._server_hostname = server_hostname if tls else None
        self._prefix = parts.path.rstrip("/")
        self._host_line = f"Host: {parts.netloc.rpartition('@')[2]}\r\n"
        self._slots = asyncio.Semaphore(limit)
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

    @property
    def open_connections(self) -> int:
        return len(self._open)

    async def request(self, method: str, path: str, headers: dict[str, str], body: bytes | None,
                      timeout: float) -> Answer:
        """One exchange, waiting for a connection and connecting included, within `timeout` seconds (then
        TimeoutError)."""
        request = self._encode(method, path, headers, body)
        deadline = asyncio.get_running_loop().time() + timeout
        try:
            if self._slots.locked():  # every connection busy: wait for one, within the deadline
                async with asyncio.timeout_at(deadline):
                    await self._slots.acquire()
            else:
                await self._slots.acquire()  # returns at once
            try:
                return await self._exchange(request, deadline)
            finally:
                self._slots.release()
        except TimeoutError as err:
            raise TimeoutError(f"no answer from {self.server} within {timeout:g} s ({method} {path})") from err

    async def close(self) -> None:
        for connection in list(self._open):
            connection.close()
        self._open.clear()
        self._idle.clear()

    async def _exchange(self, request: bytes, deadline: float) -> Answer:
        for retry in (False, True):
            connection, reused = await self._acquire(deadline)
            try:
                answer = await connection.exchange(request, deadline)
            except ConnectionError:
                self._drop(connection)
                if reused and not retry and not connection.answered:
                    continue  # closed by the server as the request went out: once more on a new connection
                raise
            except BaseException:  # timed out or cancelled mid-exchange: the connection's state is unknown
                self._drop(connection)
                raise
            self._release(connection)
            return answer
        raise AssertionError("unreachable")

    async def _acquire(self, deadline: float) -> tuple[_Connection, bool]:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed:
                return connection, True
            self._open.discard(connection)
        async with asyncio.timeout_at(deadline):
            _, connection = await asyncio.get_running_loop().create_connection(
                _Connection, self._host, self._port, ssl=self._ssl, server_hostname=self._server_hostname)
        self._open.add(connection)
        return connection, False

    def _release(self, connection: _Connection) -> None:
        if connection.closed:
            self._drop(connection)
        else:
            self._idle.append(connection)

    def _drop(self, connection: _Connection) -> None:
        connection.close()
        self._open.discard(connection)

    def _encode(self, method: str, path: str, headers: dict[str, str], body: bytes | None) -> bytes:
        lines = [f"{method} {self._prefix}{path} HTTP/1.1\r\n", self._host_line]
        lines.extend(f"{name}: {value}\r\n" for name, value in headers.items())
        if body is not None:
            lines.append(f"Content-Length: {len(body)}\r\n")
        lines.append("\r\n")
        head = "".join(lines)
        # Each part ends in one CRLF: any other CR or LF came from a path or a value.
        if not head.count("\r") == head.count("\n") == len(lines) or " " in path or not head.isascii():
            raise ValueError(f"a line break, space or non-ASCII character in a request's path or headers: "
                             f"{method} {path!r}")
        return head.encode() + body if body is not None else head.encode()


__all__ = ["MAX_ANSWER", "Answer", "Http1Pool"]
