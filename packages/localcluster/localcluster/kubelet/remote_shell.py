"""ssh between a local run's pods, without an sshd: what an MPI launcher needs to start its workers' processes.

On a cluster an MPI worker runs `sshd -D`, and the launcher's `mpirun` starts a daemon on each worker through
`ssh WORKER orted ...`. A local run may not run an sshd (root, host keys in /etc/ssh, port 22: the spec's "Local
runs"), so:

- a container whose command is `sshd` (`/usr/sbin/sshd -D`, any arguments) runs the sshd stand-in instead
  (stand_ins/sshd.py), which waits until its pod stops, as sshd does;
- every pod with an address of its own finds the ssh stand-in (stand_ins/ssh.py) first on its PATH (unless its
  spec sets PATH) and as Open MPI's rsh agent (OMPI_MCA_plm_rsh_agent, PRTE_MCA_plm_ssh_agent, unless its spec
  sets them), and LOCALCLUSTER_SSH_SOCKET, where this kubelet listens (a Unix socket in a directory only
  the run's user can enter). `ssh HOST COMMAND` resolves HOST in the calling pod, and when the address is a
  pod's running the sshd stand-in, the kubelet runs `sh -c COMMAND` there as `kubectl exec` would: the
  container's environment (its address, name table, declared env), working directory, and the caller's own
  stdin, stdout and stderr (passed over the socket), so a worker's orted and ranks are that worker's. The
  process dies with its container, and when the caller goes (mpirun ends its ssh sessions). An address in the
  run's range with no sshd running refuses (ssh retries as its ConnectionAttempts say); any other host is the
  real ssh's.

Open MPI needs one more thing on this network: its TCP transport leaves out 127.0.0.0/8, where every pod's address
is, unless told which interfaces to leave out; pods get `OMPI_MCA_btl_tcp_if_exclude=lo` unless their spec
sets it (the podnet shim shows the pod's address on the machine's other interfaces).

No key is used or checked, and nothing of ~/.ssh or /etc/ssh is read or written: any pod of the run may run
commands in any other that runs the stand-in, as with pods/exec (a local run is no isolation: docs/local.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .pod_exec import signal_group
from .process_guard import drop_pod_privileges

log = logging.getLogger("localcluster.process")

SOCKET_ENV = "LOCALCLUSTER_SSH_SOCKET"
SOCKET_NAME = "ssh.sock"
PREFIX = "localcluster-shell-"
MAX_SOCKET_PATH = 100  # a Unix socket's path is at most 107 bytes on Linux
MAX_REQUEST = 64 * 1024
OPEN_MPI_EXCLUDE = "OMPI_MCA_btl_tcp_if_exclude"
# Open MPI 4's and 5's rsh agent: the stand-in even where a spec's PATH leaves its directory out.
OPEN_MPI_AGENTS = ("OMPI_MCA_plm_rsh_agent", "PRTE_MCA_plm_ssh_agent")
VARIABLES = (SOCKET_ENV, OPEN_MPI_EXCLUDE, *OPEN_MPI_AGENTS)  # what `environment` adds, besides PATH
FAILED = 255  # ssh's exit code when the command could not be run


@dataclass(slots=True)
class ShellTarget:
    """A container running the sshd stand-in: its process's environment and directory, and the set its
    processes are kept in (they die with it)."""

    env: dict[str, str]
    cwd: str | None
    processes: set[asyncio.subprocess.Process]


# The pod's address -> the container that runs its sshd stand-in, or None (the pod has none running);
# KeyError: no pod of this run has that address.
Lookup = Callable[[str], ShellTarget | None]


def is_sshd(argv: list[str]) -> bool:
    return bool(argv) and os.path.basename(argv[0]) == "sshd"


class RemoteShell:
    def __init__(self, lookup: Lookup) -> None:
        self.lookup = lookup
        self.network: ipaddress.IPv4Network | None = None  # the run's pod addresses
        self.directory: Path | None = None
        self._server: asyncio.Task | None = None
        self._listener: socket.socket | None = None
        self._sessions: set[asyncio.Task] = set()

    # --- lifecycle -------------------------------------------------------------------------

    def start(self, network: str | None) -> None:
        """Write the stand-ins; with `network` (the pods' own addresses), listen for their ssh."""
        self.directory = Path(tempfile.mkdtemp(prefix=PREFIX))  # 0700: the user's alone
        if len(str(self.directory / SOCKET_NAME)) > MAX_SOCKET_PATH:  # a long TMPDIR: /tmp, still the user's alone
            self.directory.rmdir()
            self.directory = Path(tempfile.mkdtemp(prefix=PREFIX, dir="/tmp"))
        for name in ("ssh", "sshd"):
            folder = self.directory / ("bin" if name == "ssh" else "sbin")  # only ssh goes on the pods' PATH
            folder.mkdir(exist_ok=True)
            source = resources.files(f"{__package__}.stand_ins").joinpath(f"{name}.py").read_text()
            script = folder / name
            script.write_text(f"#!{sys.executable} -I\n{source}")
            script.chmod(0o700)
        if network is None:
            return
        self.network = ipaddress.IPv4Network(network)
        listener = self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.directory / SOCKET_NAME))
        listener.listen(64)
        listener.setblocking(False)
        self._server = asyncio.get_running_loop().create_task(self._serve(listener), name="ssh stand-in")

    async def stop(self) -> None:
        for task in (self._server, *self._sessions):
            if task is not None:
                task.cancel()
        await asyncio.gather(*(t for t in (self._server, *self._sessions) if t is not None), return_exceptions=True)
        self._server = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
        self.network = None

    # --- what a container runs and gets ------------------------------------------------------

    def command(self, argv: list[str]) -> list[str]:
        """The container's argv, `sshd` replaced by its stand-in."""
        if not is_sshd(argv) or self.directory is None:
            return argv
        return [str(self.directory / "sbin" / "sshd"), *argv[1:]]

    def environment(self, path: str, own_address: bool) -> dict[str, str]:
        """What a pod with (`own_address`) or without an address of its own gets for ssh; its spec's env wins."""
        if not own_address or self.network is None or self.directory is None:
            return {}
        ssh = str(self.directory / "bin" / "ssh")
        return {"PATH": f"{self.directory / 'bin'}{os.pathsep}{path}", SOCKET_ENV: str(self.directory / SOCKET_NAME),
                OPEN_MPI_EXCLUDE: "lo", **dict.fromkeys(OPEN_MPI_AGENTS, ssh)}

    # --- the sessions ------------------------------------------------------------------------

    async def _serve(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            conn, _ = await loop.sock_accept(listener)
            task = loop.create_task(self._session(conn))
            self._sessions.add(task)
            task.add_done_callback(self._sessions.discard)

    async def _session(self, conn: socket.socket) -> None:
        fds: list[int] = []
        try:
            request, fds = await _receive(conn)
            answer = await self._run(conn, request, fds)
            with contextlib.suppress(OSError):
                await asyncio.get_running_loop().sock_sendall(conn, json.dumps(answer).encode() + b"\n")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ssh stand-in: a request failed: %s", exc)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            conn.close()

    async def _run(self, conn: socket.socket, request: dict, fds: list[int]) -> dict:
        address = str(request["address"])
        try:
            target = self.lookup(address)
        except KeyError:
            inside = self.network is not None and ipaddress.ip_address(address) in self.network
            return {"refused": "no pod has this address"} if inside else {"elsewhere": True}
        if target is None:
            return {"refused": "the pod runs no sshd"}
        if len(fds) != 3:
            return {"refused": "stdin, stdout and stderr were not passed"}
        command = str(request.get("command") or "")
        argv = ["/bin/sh", "-c", command] if command else ["/bin/sh"]
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=fds[0], stdout=fds[1], stderr=fds[2], env=target.env, cwd=target.cwd,
                start_new_session=True, preexec_fn=drop_pod_privileges)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.write(fds[2], f"sh: {exc}\n".encode())
            return {"exit": FAILED}
        target.processes.add(proc)
        loop = asyncio.get_running_loop()
        waiter = loop.create_task(proc.wait())
        gone = loop.create_task(loop.sock_recv(conn, 1))  # the caller ends (b"") or is killed
        try:
            await asyncio.wait({waiter, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not waiter.done():  # the caller is gone: its session ends (below)
                return {"exit": FAILED}
            code = waiter.result()
            return {"exit": code if code >= 0 else 128 - code}
        finally:
            signal_group(proc, signal.SIGKILL)  # what the command left behind, as its session ends
            target.processes.discard(proc)
            for task in (waiter, gone):
                task.cancel()
            await asyncio.gather(waiter, gone, return_exceptions=True)


async def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """The request line and the descriptors passed with it."""
    loop = asyncio.get_running_loop()
    data, fds = b"", []
    while not data.endswith(b"\n") and len(data) < MAX_REQUEST:
        readable: asyncio.Future[None] = loop.create_future()
        loop.add_reader(conn.fileno(), _settle, readable)
        try:
            await readable
        finally:
            loop.remove_reader(conn.fileno())
        try:
            chunk, more, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
        except BlockingIOError:
            continue
        if not chunk:
            break
        data += chunk
        fds += more
    return json.loads(data), fds


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
