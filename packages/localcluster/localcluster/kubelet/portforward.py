"""`kubectl port-forward`: connections to a pod's ports, over SPDY tunnelled through a WebSocket.

kubectl 1.30+ upgrades to a WebSocket with the subprotocol `SPDY/3.1+portforward.k8s.io` and
speaks the kubelet's `portforward.k8s.io` protocol over SPDY inside it (spdy.py): for each local
connection it opens an error stream and a data stream, both with the headers `streamType`, `port`
and `requestID`. The kubelet replies to each, dials the port inside the pod's network namespace
and copies bytes both ways until one side is done (then gives the other a second), then closes
both streams; a failure is written on the error stream first, which makes kubectl drop the
whole connection. A stream without a valid `port` or `streamType` is reset.

A pod with an address of its own (network/: the process runner's pod network) has its ports there, and
any of them is dialled, as a kubelet dials any port in the pod's network namespace: the podnet shim moved
the pod's wildcard and loopback listeners to that address. A pod on the host's network (no shim on this
machine, or `hostNetwork: true`) has its ports at 127.0.0.1:PORT (or [::1]:PORT), which makes every port
of the host a "port of the pod": so only the TCP ports its containers declare (`ports[].containerPort`)
are dialled there; any other is refused as a failed forward is, on the error stream, in the kubelet's
words. kubectl prints it and drops the connection.

Client data is bounded: a WebSocket message is at most MAX_MESSAGE_BYTES (a larger one closes the
connection with 1009, message too big) and so is a SPDY frame; a session holds at most MAX_STREAMS
streams; and a stream holds at most about MAX_BUFFERED bytes the pod's port has not taken yet: past
that the session reads no more until it has (back-pressure, as a TCP window gives), and a stream
with no connection yet to take them is reset.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field

from aiohttp import WSMsgType, web

from . import spdy
from .pod_connect import MAX_MESSAGE_BYTES, websocket_protocol

PROTOCOL = "SPDY/3.1+portforward.k8s.io"
READ_CHUNK = 32 * 1024
LINGER = 1.0  # seconds the second direction gets once the first is done (as containerd's PortForward)
MAX_STREAMS = 128  # streams open at once in a session (two per forwarded connection); more are reset
MAX_BUFFERED = 1024 * 1024  # bytes from the client waiting for a stream's port before the session stops reading


@dataclass(eq=False)
class _Stream:
    stream_id: int
    kind: str
    inbound: asyncio.Queue = field(default_factory=asyncio.Queue)  # data from the client; None: its end
    queued: int = 0  # bytes in `inbound`
    forwarding: bool = False  # whether a connection to the port is taking `inbound`
    room: asyncio.Event = field(default_factory=asyncio.Event)  # set while `queued` is under MAX_BUFFERED

    def __post_init__(self) -> None:
        self.room.set()

    def take(self, chunk: bytes) -> None:
        """Account for a chunk the port has taken."""
        self.queued -= len(chunk)
        if self.queued < MAX_BUFFERED:
            self.room.set()


@dataclass(eq=False)
class _Pair:
    port: int
    error: _Stream | None = None
    data: _Stream | None = None


async def serve(request: web.Request, pod: dict, address: str | None = None) -> web.WebSocketResponse:
    """Upgrade the request and forward every connection kubectl opens to the pod's ports: at `address`, the
    pod's own, or (None) on the host's loopback, declared ports only."""
    protocol = websocket_protocol(request, (PROTOCOL,), "port-forward")
    ws = web.WebSocketResponse(protocols=(protocol,), max_msg_size=MAX_MESSAGE_BYTES)
    await ws.prepare(request)
    session = _Session(ws, pod, address)
    try:
        await session.run()
    finally:
        await session.close()
    return ws


class _Session:
    def __init__(self, ws: web.WebSocketResponse, pod: dict, address: str | None) -> None:
        self.ws = ws
        self.address = address
        meta = pod["metadata"]
        self.pod = f"{meta.get('namespace')}/{meta['name']}"
        self.uid = meta.get("uid", "")
        self.ports = declared_ports(pod)
        self.framer = spdy.Framer(max_length=MAX_MESSAGE_BYTES)
        self.streams: dict[int, _Stream] = {}
        self.pairs: dict[str, _Pair] = {}
        self.tasks: set[asyncio.Task] = set()
        self._lock = asyncio.Lock()

    async def send(self, raw: bytes) -> None:
        async with self._lock:  # frames must not interleave: the compression context is one stream
            if not self.ws.closed:
                await self.ws.send_bytes(raw)

    async def run(self) -> None:
        async for msg in self.ws:
            if msg.type != WSMsgType.BINARY:
                continue
            try:
                frames = self.framer.feed(msg.data)
            except spdy.ProtocolError:
                return
            for frame in frames:
                if not await self._on(frame):
                    return

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.ws.close()

    async def _on(self, frame: spdy.Frame) -> bool:
        """Act on a frame from kubectl; False when the session is over (GOAWAY)."""
        if frame.kind == spdy.SYN_STREAM:
            await self._open(frame)
        elif frame.kind == 0:
            stream = self.streams.get(frame.stream_id)
            if stream is not None and frame.data:
                await self._queue(stream, frame.data)
            if stream is not None and frame.fin:
                stream.inbound.put_nowait(None)
        elif frame.kind == spdy.RST_STREAM:
            stream = self.streams.pop(frame.stream_id, None)
            if stream is not None:
                stream.inbound.put_nowait(None)
        elif frame.kind == spdy.PING:
            await self.send(self.framer.ping(frame.status))  # kubectl's keep-alive: echoed
        elif frame.kind == spdy.GOAWAY:
            return False
        return True

    async def _queue(self, stream: _Stream, data: bytes) -> None:
        """Hold data for the stream's port; wait while the port is behind (back-pressure on the session)."""
        if stream.queued >= MAX_BUFFERED:
            if not stream.forwarding:  # nothing will take it: the stream goes, rather than the session's memory
                self.streams.pop(stream.stream_id, None)
                await self.send(self.framer.rst_stream(stream.stream_id))
                return
            stream.room.clear()
            await stream.room.wait()
            if self.streams.get(stream.stream_id) is not stream:  # the connection ended meanwhile
                return
        stream.inbound.put_nowait(data)
        stream.queued += len(data)

    async def _open(self, frame: spdy.Frame) -> None:
        headers = {name: values[0] for name, values in (frame.headers or {}).items() if values}
        port_text, kind = headers.get("port", ""), headers.get("streamtype", "")
        valid = port_text.isdigit() and 0 < int(port_text) < 65536 and kind in ("error", "data")
        # Pairs still waiting for their other stream count too: a stream reset before its pair completed leaves one.
        full = max(len(self.streams), len(self.pairs)) >= MAX_STREAMS
        if not valid or full:  # the kubelet rejects the stream, and spdystream resets a rejected one
            await self.send(self.framer.rst_stream(frame.stream_id))
            return
        stream = self.streams[frame.stream_id] = _Stream(frame.stream_id, kind)
        await self.send(self.framer.syn_reply(frame.stream_id))
        request_id = headers.get("requestid", "")
        pair = self.pairs.setdefault(request_id, _Pair(int(port_text)))
        setattr(pair, kind, stream)
        if pair.error is not None and pair.data is not None:
            del self.pairs[request_id]
            task = asyncio.get_running_loop().create_task(self._forward(pair))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _forward(self, pair: _Pair) -> None:
        assert pair.error is not None and pair.data is not None
        pair.data.forwarding = True
        try:
            try:
                if self.address is None and pair.port not in self.ports:
                    raise UndeclaredPort(f"port {pair.port} is not a declared container port of the pod (pods "
                                         f"share the host's network here: only spec.containers[*].ports are "
                                         f"forwarded)")
                reader, writer = await (_dial(pair.port) if self.address is None else
                                        _dial_address(self.address, pair.port))
            except OSError as exc:
                message = f"error forwarding port {pair.port} to pod {self.pod}, uid {self.uid}: {exc}"
                await self.send(self.framer.data(pair.error.stream_id, message.encode()))
                return
            try:
                await self._copy(pair.data, reader, writer)
            finally:
                writer.close()
        finally:  # the kubelet closes the error stream, then the data stream
            for stream in (pair.error, pair.data):
                self.streams.pop(stream.stream_id, None)
                stream.forwarding = False
                stream.room.set()  # a session waiting to queue more for it reads on
                await self.send(self.framer.data(stream.stream_id, b"", fin=True))

    async def _copy(self, stream: _Stream, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()

        async def down() -> None:  # the pod's port to kubectl
            while chunk := await reader.read(READ_CHUNK):
                await self.send(self.framer.data(stream.stream_id, chunk))

        async def up() -> None:  # kubectl to the pod's port
            while (chunk := await stream.inbound.get()) is not None:
                stream.take(chunk)
                writer.write(chunk)
                await writer.drain()

        directions = {loop.create_task(down()), loop.create_task(up())}
        try:
            _, pending = await asyncio.wait(directions, return_when=asyncio.FIRST_COMPLETED)
            if pending:
                await asyncio.wait(pending, timeout=LINGER)
        finally:
            for task in directions:
                task.cancel()
            await asyncio.gather(*directions, return_exceptions=True)


class DialError(OSError):
    pass


class UndeclaredPort(OSError):
    """A port no container of the pod declares: not forwarded, since the pod's network is the host's."""


def declared_ports(pod: dict) -> frozenset[int]:
    """The TCP ports the pod's containers (and init containers: sidecars serve too) declare."""
    spec = pod.get("spec") or {}
    return frozenset(int(port["containerPort"])
                     for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
                     for port in container.get("ports") or ()
                     if (port.get("protocol") or "TCP") == "TCP" and port.get("containerPort"))


async def _dial_address(address: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to the pod's own address, in the words of a kubelet's failed dial."""
    try:
        return await asyncio.open_connection(address, port)
    except OSError as exc:
        reason = f"connect: {os.strerror(exc.errno).lower()}" if exc.errno else str(exc)
        raise OSError(f"failed to connect to localhost:{port} inside namespace of the pod: dial tcp4 "
                      f"{address}:{port}: {reason}") from exc


async def _dial(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to localhost:PORT, IPv4 first (as containerd does in the pod's network namespace)."""
    failures = []
    for family, host, shown in (("IPv4", "127.0.0.1", f"127.0.0.1:{port}"), ("IPv6", "::1", f"[::1]:{port}")):
        try:
            return await asyncio.open_connection(host, port)
        except OSError as exc:
            reason = f"connect: {os.strerror(exc.errno).lower()}" if exc.errno else str(exc)
            network = "tcp4" if family == "IPv4" else "tcp6"
            failures.append(f"{family}: dial {network} {shown}: {reason}")
    raise DialError(f"failed to connect to localhost:{port}, {' '.join(failures)}")
