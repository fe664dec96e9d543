"""`kubectl exec`: a command run in a container's environment, streamed over a WebSocket.

The protocol is the API server's (k8s.io/apiserver/pkg/util/proxy, which kubectl 1.30+ talks to):
subprotocol `v5.channel.k8s.io` (or `v4.channel.k8s.io`); every binary message starts with its
channel: 0 stdin, 1 stdout, 2 stderr, 3 the error channel (one metav1.Status at the end), 4
terminal resizes (`{"Width": W, "Height": H}`), and in v5, 255 followed by a channel closes that
channel (kubectl closes stdin that way at its end of input). The server opens with an empty
message on the first output channel, and ends by writing the Status and closing the WebSocket.

What the command gets is what the container's process got (process_runner.Box): its environment
(HOSTNAME, the declared env), its working directory, the host's files; with `tty` it runs under a
pseudo-terminal that leads its session, stderr merged into stdout. An exec dies with its container,
and when its client goes away. A client message larger than MAX_MESSAGE_BYTES closes the WebSocket
(1009); stdin is written with back-pressure, so no more than one message is held.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import signal
import struct
import termios
from dataclasses import dataclass

import orjson
from aiohttp import WSMsgType, web

from .. import errors
from .container_env import runc_error
from .pod_connect import MAX_MESSAGE_BYTES, stream_status, websocket_protocol
from .process_guard import drop_pod_privileges

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
READ_CHUNK = 32 * 1024
DRAIN = 2.0  # seconds to pass on output left once the command has exited
SUCCESS = {"metadata": {}, "status": "Success"}


@dataclass(slots=True)
class ExecOptions:
    """PodExecOptions from the query (kubectl sends `command` repeated, and `1`/`true` flags)."""

    command: list[str]
    container: str | None
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool

    @classmethod
    def from_query(cls, query) -> ExecOptions:
        def flag(name: str) -> bool:
            return query.get(name, "").lower() in ("1", "true")

        options = cls(query.getall("command", []), query.get("container"), flag("stdin"), flag("stdout"),
                      flag("stderr"), flag("tty"))
        if not options.command:
            raise errors.bad_request("you must specify at least 1 command")
        if not (options.stdin or options.stdout or options.stderr):
            raise errors.bad_request("you must specify at least 1 of stdin, stdout, stderr")
        return options


@dataclass(slots=True)
class Target:
    """Where the command runs: the container's environment and working directory, and the set its
    exec processes are kept in (so they die with the container)."""

    container: str
    env: dict[str, str]
    cwd: str | None
    processes: set[asyncio.subprocess.Process]


async def serve(request: web.Request, options: ExecOptions, target: Target | None,
                container: str) -> web.WebSocketResponse:
    """Upgrade the request and run the command; `target` None: the container is not running."""
    protocol = websocket_protocol(request, PROTOCOLS, "exec")
    ws = web.WebSocketResponse(protocols=(protocol,), max_msg_size=MAX_MESSAGE_BYTES)
    await ws.prepare(request)
    channels = _Channels(ws, protocol)
    try:
        await channels.send(STDOUT if options.stdout else STDERR if options.stderr else ERROR, b"")
        if target is None:  # the kubelet finds no running container; the API server wraps its answer
            await channels.fail(f'unable to upgrade connection: container not found ("{container}")')
            return ws
        await _run(channels, options, target)
    except ConnectionResetError:
        pass
    finally:
        await ws.close()
    return ws


async def _run(channels: _Channels, options: ExecOptions, target: Target) -> None:
    terminal = _Terminal() if options.tty else None
    try:
        proc = await _spawn(options, target, terminal)
    except OSError as exc:
        if terminal is not None:
            terminal.close()
        # The kubelet's exec error inside the API server's: both say "Internal error occurred".
        await channels.fail("Internal error occurred: error executing command in container: "
                            + runc_error(options.command[0], target.cwd, exc))
        return
    target.processes.add(proc)
    loop = asyncio.get_running_loop()
    pumps = []
    if terminal is not None:
        pumps.append(loop.create_task(terminal.pump(channels)))
    else:
        pumps += [loop.create_task(_pump(stream, channels, channel))
                  for stream, channel in ((proc.stdout, STDOUT), (proc.stderr, STDERR)) if stream is not None]
    inputs = loop.create_task(_inputs(channels, proc, terminal))
    waiter = loop.create_task(proc.wait())
    try:
        await asyncio.wait({waiter, inputs}, return_when=asyncio.FIRST_COMPLETED)
        if not waiter.done():  # the client went away first
            return
        if pumps:
            await asyncio.wait(pumps, timeout=DRAIN)
        returned = waiter.result()
        code = returned if returned >= 0 else 128 - returned
        await channels.send(ERROR, stream_status(_exit_status(code)))
    finally:
        signal_group(proc, signal.SIGKILL)
        target.processes.discard(proc)
        for task in (inputs, waiter, *pumps):
            task.cancel()
        await asyncio.gather(inputs, waiter, *pumps, return_exceptions=True)
        if terminal is not None:
            terminal.close()


async def _spawn(options: ExecOptions, target: Target, terminal: _Terminal | None) -> asyncio.subprocess.Process:
    pipe = asyncio.subprocess.PIPE
    if terminal is not None:
        tty = terminal.child
        return await asyncio.create_subprocess_exec(
            *options.command, stdin=tty, stdout=tty, stderr=tty, env=target.env, cwd=target.cwd,
            start_new_session=True, preexec_fn=_take_terminal)
    return await asyncio.create_subprocess_exec(
        *options.command, stdin=pipe if options.stdin else asyncio.subprocess.DEVNULL,
        stdout=pipe if options.stdout else asyncio.subprocess.DEVNULL,
        stderr=pipe if options.stderr else asyncio.subprocess.DEVNULL,
        env=target.env, cwd=target.cwd, start_new_session=True, preexec_fn=drop_pod_privileges)


def _take_terminal() -> None:
    """In the child, a session leader already: make its stdin, the terminal, its controlling terminal."""
    drop_pod_privileges()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _exit_status(code: int) -> dict:
    if code == 0:
        return SUCCESS
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: command terminated with exit code {code}",
            "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def signal_group(proc: asyncio.subprocess.Process, sig: int) -> None:
    """Signal a process's group (it leads one: every process here is started with start_new_session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


async def _pump(stream: asyncio.StreamReader, channels: _Channels, channel: int) -> None:
    while chunk := await stream.read(READ_CHUNK):
        await channels.send(channel, chunk)


async def _inputs(channels: _Channels, proc: asyncio.subprocess.Process, terminal: _Terminal | None) -> None:
    """Messages from the client until it closes: stdin, resizes, channel closes."""
    async for msg in channels.ws:
        if msg.type != WSMsgType.BINARY or not msg.data:
            continue
        channel, data = msg.data[0], msg.data[1:]
        if channel == CLOSE and channels.close_signal:
            if data[:1] == bytes([STDIN]):
                if terminal is not None:
                    terminal.end_input()
                elif proc.stdin is not None:
                    proc.stdin.close()
        elif channel == STDIN and data:
            if terminal is not None:
                await terminal.write(data)
            elif proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.write(data)
                with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                    await proc.stdin.drain()
        elif channel == RESIZE and terminal is not None:
            with contextlib.suppress(ValueError, TypeError, KeyError, OSError):
                size = orjson.loads(data)
                terminal.resize(int(size["Width"]), int(size["Height"]))


class _Channels:
    """The WebSocket, written one message per channel write."""

    def __init__(self, ws: web.WebSocketResponse, protocol: str) -> None:
        self.ws = ws
        self.close_signal = protocol == PROTOCOLS[0]  # v5's channel close
        self._lock = asyncio.Lock()

    async def send(self, channel: int, data: bytes) -> None:
        async with self._lock:
            await self.ws.send_bytes(bytes([channel]) + data)

    async def fail(self, message: str) -> None:
        await self.send(ERROR, stream_status(errors.internal_error(message).status()))


class _Terminal:
    """A pseudo-terminal: the command's side (`child`) and ours."""

    def __init__(self) -> None:
        self.parent, self.child = pty.openpty()
        os.set_blocking(self.parent, False)
        self._eof = b"\x04"  # ^D at the start of a line: end of input for the program reading the terminal

    async def pump(self, channels: _Channels) -> None:
        """The terminal's output to stdout, until the command's side is closed by every process (EIO)."""
        os.close(self.child)
        self.child = -1
        loop = asyncio.get_running_loop()
        readable = asyncio.Event()
        loop.add_reader(self.parent, readable.set)
        try:
            while True:
                await readable.wait()
                readable.clear()
                try:
                    chunk = os.read(self.parent, READ_CHUNK)
                except BlockingIOError:
                    continue
                except OSError:  # EIO: the terminal has no process left
                    return
                if not chunk:
                    return
                await channels.send(STDOUT, chunk)
        finally:
            loop.remove_reader(self.parent)

    async def write(self, data: bytes) -> None:
        loop = asyncio.get_running_loop()
        while data:
            try:
                written = os.write(self.parent, data)
            except BlockingIOError:  # the terminal's input buffer is full until the program reads
                writable = asyncio.Event()
                loop.add_writer(self.parent, writable.set)
                try:
                    await writable.wait()
                finally:
                    loop.remove_writer(self.parent)
                continue
            except OSError:
                return
            data = data[written:]

    def end_input(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.parent, self._eof)

    def resize(self, width: int, height: int) -> None:
        fcntl.ioctl(self.parent, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))

    def close(self) -> None:
        for fd in (self.parent, self.child):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.parent = self.child = -1
