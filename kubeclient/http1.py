"""Keep-alive HTTP/1.1 connections to the API server, for the controller's writes.

aiohttp's ClientSession (which the informers' lists and watches keep using) spends 100-120 us of CPU
per request in Python: a ClientRequest and a ClientResponse, header multidicts, a cookie jar, a writer
task, timers. The controller makes ~18 small writes a job (pods, Services, Events, status), and in a
burst they were a third of its CPU. Here one exchange costs ~35 us: the request line, headers and body
go out in one TLS write, and the answer is parsed by httptools (llhttp, Node.js's parser), which knows
Content-Length and chunked bodies.

The scope is deliberately small: one server; bodies held in memory; answers read whole (at most
MAX_ANSWER bytes); no proxy (KubeClient uses aiohttp when one is configured), no compression (no
Accept-Encoding is sent), no redirects, no HEAD (its answer's Content-Length describes no body), no
HTTP/2 (no ALPN is offered, so the server speaks HTTP/1.1).

What the server sends is checked, never trusted:
- Bytes that no request asked for (on an idle connection, or after a complete answer) drop the
  connection: they are never read as the next request's answer (Go: "Unsolicited response received on
  idle HTTP channel"). The answer already complete is kept.
- Interim answers (100 Continue, 103 Early Hints) are skipped: the final one is returned. 101 Switching
  Protocols is an error: no request asks to switch.
- A status or header line is at most MAX_LINE bytes (aiohttp's 8190), and an exchange's headers, interim
  answers' included, at most MAX_HEAD bytes (64 KiB, where Go's transport allows 10 MiB, a general
  client's limit: the API server's answers carry a few hundred bytes of headers, and it cuts its Warning
  headers at 4096 characters). Past either, the exchange fails with the read that crosses it, before that
  read is parsed: a server sending endless headers costs at most MAX_HEAD bytes and one read. Until an
  answer passes MAX_LINE bytes with its headers unfinished neither cap can be crossed, so an ordinary
  answer pays nothing for them.
- An answer with neither Content-Length nor chunked coding ends where the connection does (HTTP/1.0, or
  a server that closes instead): it is read to the end and returned, and the connection is done. An
  answer that Content-Length or chunking says is longer than what came is an error, never a short body.

At most `limit` connections are open at once; a request beyond waits for one. An idle connection is
reused last-in-first-out, unless it has been idle IDLE_TIMEOUT seconds (then a new one is made: the API
server closes a connection idle for 90 s, and a request written as that close crosses it could not be
resent). A connection is dropped when the server says `Connection: close` or closes it, and after an
exchange that failed, timed out or was cancelled (its state is then unknown).

A request is sent again, once, on a new connection, only when that cannot repeat it on the server, as Go's
transport decides: when none of it was written (the reused connection was found closed first), or when the
caller says the request is safe to repeat (`idempotent=True`) and the reused connection was closed before a
byte of the answer came. Anything else, a written POST above all, is the caller's ConnectionError: the
server may have acted on it. (Go repeats only GET, HEAD, OPTIONS and TRACE unasked; KubeClient declares
which of its writes may be repeated: its GETs, its status PUT with a resourceVersion, a delete with a uid
precondition.)
"""

from __future__ import annotations

import asyncio
import ssl
from typing import NamedTuple, cast
from urllib.parse import urlsplit

import httptools

MAX_ANSWER = 64 * 1024 * 1024  # bytes: far above any object etcd stores (1.5 MiB) or a Status
MAX_LINE = 8190  # bytes of a status line or a header line (name, ": ", value): aiohttp's limit; <= MAX_ANSWER
MAX_HEAD = 64 * 1024  # bytes of an exchange's headers, its interim answers' included
IDLE_TIMEOUT = 50.0  # seconds an idle connection is reused for: within the API server's 90 s


class Answer(NamedTuple):
    status: int
    reason: str
    body: bytes
    retry_after: str | None  # the Retry-After header, as sent


class Unsent(ConnectionResetError):
    """The connection was found closed before any of the request was written: always safe to send again."""


class _Connection(asyncio.Protocol):
    """One TCP (TLS) connection: one exchange at a time, answers parsed as they arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[Answer] | None = None
        self.closed = False
        self.idle_since = 0.0  # the loop's clock when its last exchange began
        self.received = 0  # bytes of the answer received since the request went out
        self._heading = False  # the final answer's headers have not all come: all received is headers
        self._head = b""  # then, all received (the headers so far, the caps' to check)
        self._framed = False  # the answer has a Content-Length or is chunked
        self._until_eof = False  # the answer's body ends where the connection does
        self._reason = b""
        self._retry_after: str | None = None
        self._body: list[bytes] = []

    async def exchange(self, request: bytes, deadline: float) -> Answer:
        """Sends `request` and waits for its answer until the loop's clock reads `deadline` (then TimeoutError)."""
        assert self.transport is not None and self.waiter is None
        if self.closed or self.transport.is_closing():  # closed since it was handed out: no answer would ever come
            raise Unsent("the API server closed the connection")
        self.received = 0
        self._heading, self._head = True, b""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Answer] = loop.create_future()
        self.waiter = waiter
        # A timer on the answer itself: cheaper than asyncio.timeout's, which would cancel the whole task.
        timer = loop.call_at(deadline, self._expire, waiter)
        self.transport.write(request)
        try:
            return await waiter
        finally:
            timer.cancel()

    def _expire(self, waiter: asyncio.Future[Answer]) -> None:
        if waiter is self.waiter:
            self._fail(TimeoutError())

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    # --- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream connection's transport (asyncio's or uvloop's): asyncio.Protocol's signature names only the base.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # the server spoke out of turn: nothing it says now can be trusted
            self._fail(ConnectionError("the API server sent data no request asked for"))
            return
        self.received += len(data)
        try:
            # Up to MAX_LINE bytes no cap can be passed; beyond, headers and size are checked before they are parsed.
            if self.received > MAX_LINE and (self._heading or self.received > MAX_ANSWER):
                rest = self._within_caps(data)
                if not rest:
                    return
                data = rest
            self.parser.feed_data(data)
        except httptools.HttpParserError as err:
            refused = err.__context__  # what a callback below raised, or None: llhttp's own verdict
            self._fail(refused if isinstance(refused, ConnectionError)
                       else ConnectionError(f"malformed HTTP answer from the API server: {err}"))
            return
        if self._heading:  # the headers go on in the next read: kept, for the caps to see whole
            self._head += data

    def _within_caps(self, data: bytes) -> bytes | None:
        """Parses what of `data` the caps allow, the headers first; what is left to parse (None: the exchange failed,
        or the headers go on)."""
        if self.received > MAX_ANSWER:
            self._fail(ConnectionError(f"an answer over {MAX_ANSWER} bytes from the API server"))
            return None
        fits = len(data) - max(0, self.received - MAX_HEAD)  # the part that headers, if all of it is, may take
        head = self._head + data[:fits] if self._head or fits < len(data) else data
        if not _lines_within_cap(head):
            self._fail(ConnectionError(f"a header line over {MAX_LINE} bytes from the API server"))
            return None
        self.parser.feed_data(data[:fits] if fits < len(data) else data)
        if not self._heading:  # they ended within the cap: the rest is body (or answers nobody asked for)
            return data[fits:]
        if self.received > MAX_HEAD:
            self._fail(ConnectionError(f"an answer with over {MAX_HEAD} bytes of headers from the API server"))
        else:
            self._head = head
        return None

    def eof_received(self) -> bool:
        if self._until_eof and self.waiter is not None:
            self._complete(self.parser.get_status_code())  # the body ends where the connection does
        self.closed = True  # never handed out again, even before connection_lost
        return False  # a half-closed HTTP/1.1 connection is done: close it (connection_lost follows)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc if isinstance(exc, OSError) else ConnectionResetError("the API server closed the connection"))

    # --- httptools callbacks (what they raise fails the exchange: data_received) ---------------

    def on_message_begin(self) -> None:
        if self.waiter is None:  # bytes after the answer, in the same read: a second answer nobody asked for
            raise ConnectionError("the API server sent data no request asked for")

    def on_status(self, reason: bytes) -> None:
        self._reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(name) in _WATCHED_SIZES:  # cheaper than lowering every name (few of the API server's have these sizes)
            name = name.lower()
            if name == b"retry-after":
                self._retry_after = value.decode("latin-1")
            elif name == b"content-length" or (name == b"transfer-encoding" and b"chunked" in value.lower()):
                self._framed = True
    def on_headers_complete(self) -> None:
        self._heading = False
        self._until_eof = not self._framed  # cleared at once by a bodiless answer's (1xx, 204, 304) completion

    def on_body(self, chunk: bytes) -> None:
        self._body.append(chunk)

    def on_message_complete(self) -> None:
        status = self.parser.get_status_code()
        if status < 200:
            if status == 101:
                raise ConnectionError("the API server switched protocols, which no request asks for")
            # An interim answer (100 Continue, 103 Early Hints): the final one follows on the same connection.
            self._reason, self._retry_after, self._framed, self._until_eof = b"", None, False, False
            self._heading = True
            return
        if not self.parser.should_keep_alive():
            self.closed = True  # the pool closes it instead of reusing it
        self._complete(status)

    def _complete(self, status: int) -> None:
        answer = Answer(status, self._reason.decode("latin-1"), b"".join(self._body), self._retry_after)
        self._reason, self._retry_after, self._body, self._framed, self._until_eof = b"", None, [], False, False
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


_WATCHED_SIZES = frozenset(map(len, (b"retry-after", b"content-length", b"transfer-encoding")))


def _lines_within_cap(received: bytes) -> bool:
    """Whether every line of the headers at the start of `received` (an exchange's bytes: interim answers' headers,
    then the final answer's, then its body) is at most MAX_LINE bytes; the last may be unfinished."""
    start = 0
    while True:
        end = received.find(b"\r\n\r\n", start)
        head = received[start:] if end < 0 else received[start:end]
        if max(map(len, head.split(b"\r\n"))) > MAX_LINE:
            return False
        if end < 0 or received[start + 9:start + 10] != b"1":  # "HTTP/1.1 1xx": an interim answer's, more follow
            return True
        start = end + 4


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
                      timeout: float, *, idempotent: bool = False) -> Answer:
        """One exchange, waiting for a connection and connecting included, within `timeout` seconds (then
        TimeoutError). `idempotent`: the caller knows the request is safe to repeat (a GET; a write whose
        precondition makes a second copy fail harmlessly), so it is sent again when a reused connection
        closes before a byte of the answer came. Otherwise a request is repeated only when none of it was
        written; any other loss of the connection is a ConnectionError."""
        request = self._encode(method, path, headers, body)
        now = asyncio.get_running_loop().time()
        deadline = now + timeout
        try:
            if self._slots.locked():  # every connection busy: wait for one, within the deadline
                async with asyncio.timeout_at(deadline):
                    await self._slots.acquire()
            else:
                await self._slots.acquire()  # returns at once
            try:
                return await self._exchange(request, now, deadline, idempotent)
            finally:
                self._slots.release()
        except TimeoutError as err:
            raise TimeoutError(f"no answer from {self.server} within {timeout:g} s ({method} {path})") from err

    async def close(self) -> None:
        for connection in list(self._open):
            connection.close()
        self._open.clear()
        self._idle.clear()

    async def _exchange(self, request: bytes, now: float, deadline: float, idempotent: bool) -> Answer:
        for retry in (False, True):
            connection, reused = await self._acquire(now, deadline)
            try:
                answer = await connection.exchange(request, deadline)
            except ConnectionError as err:
                self._drop(connection)
                # Go's rule (Transport.shouldRetryRequest): a fresh connection's failure is the server's answer;
                # on a reused one, a request none of which was written, or a repeatable one nothing answered.
                if reused and not retry and (isinstance(err, Unsent) or (idempotent and not connection.received)):
                    continue
                raise
            except BaseException:  # timed out or cancelled mid-exchange: the connection's state is unknown
                self._drop(connection)
                raise
            self._release(connection, now)
            return answer
        raise AssertionError("unreachable")

    async def _acquire(self, now: float, deadline: float) -> tuple[_Connection, bool]:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and now - connection.idle_since < IDLE_TIMEOUT:
                return connection, True
            self._drop(connection)
        async with asyncio.timeout_at(deadline):
            _, connection = await asyncio.get_running_loop().create_connection(
                _Connection, self._host, self._port, ssl=self._ssl, server_hostname=self._server_hostname)
        self._open.add(connection)
        return connection, False

    def _release(self, connection: _Connection, now: float) -> None:
        if connection.closed:
            self._drop(connection)
        else:
            connection.idle_since = now
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


__all__ = ["IDLE_TIMEOUT", "MAX_ANSWER", "MAX_HEAD", "MAX_LINE", "Answer", "Http1Pool", "Unsent"]
