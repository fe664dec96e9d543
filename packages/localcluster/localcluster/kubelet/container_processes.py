"""A container's life under the process runner: each instance started as a process group of its own, its
output pumped into its log, SIGTERM then SIGKILL when its pod stops, and restarts by the pod's policy after a
back-off (CrashLoopBackOff). Mixed into ProcessRunner, which holds the pods and publishes their status."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import TYPE_CHECKING, BinaryIO

from ..api import Api, now_rfc3339
from . import container_env
from .container_env import ConfigError, Objects, container_command, start_error
from .log_file import LogFile
from .network.pod_network import PodNetwork
from .pod_events import PodEvents
from .pod_exec import signal_group
from .pod_runs import Box, PodRun, kill_execs, terminated_state
from .pod_volumes import PodVolumes
from .process_guard import drop_pod_privileges
from .remote_shell import RemoteShell, is_sshd

log = logging.getLogger("localcluster.process")

CONFIG_ERROR = "CreateContainerConfigError"
NEVER_STARTED = "1970-01-01T00:00:00Z"  # a StartError's startedAt: containerd's zero time, as the kubelet shows it
PUMP_DRAIN = 2.0  # seconds to drain a container's output once its process group is gone
READ_CHUNK = 64 * 1024


class ContainerProcesses:
    """Mixed into ProcessRunner: its containers' processes."""

    api: Api
    api_address: tuple[str, int] | None
    network: PodNetwork
    shell: RemoteShell
    volumes: PodVolumes
    events: PodEvents
    log_limit: int

    if TYPE_CHECKING:  # the runner's own, which a container's life reports to
        def _current(self, run: PodRun) -> dict | None: ...

        def _publish(self, run: PodRun, terminal: bool = False) -> None: ...

        def _objects(self, run: PodRun) -> Objects: ...

        def _delay(self, attempt: int) -> float: ...

        async def _backed_off(self, run: PodRun, delay: float) -> bool: ...

    async def _supervise(self, run: PodRun, box: Box) -> int | None:
        """Run a container until the restart policy says it is done: its last exit code, or None if it never ran."""
        code = None
        not_created = 0  # configuration errors in a row, each retried after a longer back-off
        while not run.stop.is_set():
            code = await self._run_once(run, box)
            if run.stop.is_set() or self._current(run) is None:
                return code
            if code is None:
                if not await self._backed_off(run, self._delay(not_created)):
                    return None
                not_created += 1
                continue
            not_created = 0
            policy = run.restart_policy
            if policy == "Never" or (code == 0 and (box.init or policy == "OnFailure")):
                return code
            delay = self._delay(box.restarts)
            pod_name = f"{run.key[1]}_{run.key[0]}({run.uid})"
            box.last_state, box.state = box.state, {"waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off {delay:g}s restarting failed container={box.name} pod={pod_name}"}}
            self._publish(run)
            self._record(run, box, "Warning", "BackOff", f"Back-off restarting failed container {box.name} in pod "
                                                           f"{pod_name}")
            await self._backed_off(run, delay)
        return code

    def _record(self, run: PodRun, box: Box, kind: str, reason: str, message: str) -> None:
        self.events.record(run.last_seen, kind, reason, message, box.path)

    async def _run_once(self, run: PodRun, box: Box) -> int | None:
        """Start one instance of the container and wait for it: its exit code, or None if it could not be
        created (a configuration error, or the pod is gone)."""
        pod = self._current(run)
        if pod is None or run.stop.is_set():
            return None
        image = box.spec.get("image", "")
        self._record(run, box, "Normal", "Pulled",
                     f'Container image "{image}" already present on machine and can be accessed by the pod')
        try:
            argv, env = self.volumes.rewrite(pod, box.spec, *container_command(pod, box.spec, self._objects(run)))
        except ConfigError as exc:
            box.state = {"waiting": {"reason": CONFIG_ERROR, "message": str(exc)}}
            self._publish(run)
            self._record(run, box, "Warning", "Failed", f"Error: {exc}")
            return None
        if box.instances:
            box.restarts += 1
        box.instances += 1
        box.log = self._open_log(run, box)
        # A minimal environment, never the server's own (its keys and tokens): container_env.base_environment.
        # Then what puts the process on the pod's network; a preload the spec asks for runs after ours.
        network = self.network.environment(pod)
        if network and env.get("LD_PRELOAD"):
            env = {**env, "LD_PRELOAD": f"{network['LD_PRELOAD']} {env['LD_PRELOAD']}"}
        base = container_env.base_environment()
        box.env = {**base, **network, **self.shell.environment(base["PATH"], bool(network)),
                   **container_env.api_server_variables(self.api_address), "HOSTNAME": run.key[1], **env}
        box.sshd = is_sshd(argv)
        argv = self.shell.command(argv)  # sshd's stand-in: a local run runs no sshd
        box.cwd = box.spec.get("workingDir") or None
        self._record(run, box, "Normal", "Created", "Container created")
        started = now_rfc3339()
        read_fd, write_fd = os.pipe()
        pipe = os.fdopen(read_fd, "rb", buffering=0)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=write_fd, stderr=write_fd, env=box.env, cwd=box.cwd,
                start_new_session=True, preexec_fn=drop_pod_privileges)
        except BaseException as exc:
            pipe.close()
            box.log.close()
            if not isinstance(exc, OSError):
                raise
            box.container_id = None
            message = start_error(argv[0], box.cwd, exc)
            box.state = terminated_state(128, NEVER_STARTED, now_rfc3339(), "StartError", message)
            self._publish(run)
            self._record(run, box, "Warning", "Failed", f"Error: {message}")
            return 128
        finally:
            os.close(write_fd)
        box.proc = proc
        pump = asyncio.get_running_loop().create_task(self._pump(pipe, box.log))
        try:
            box.container_id = f"process://{proc.pid}"
            box.state = {"running": {"startedAt": started}}
            self._publish(run)
            self._record(run, box, "Normal", "Started", "Container started")
            code = await self._wait(run, proc)
        finally:
            signal_group(proc, signal.SIGKILL)  # whatever the container's main process left behind
            kill_execs(box)  # the container's processes die with it, `kubectl exec`'s too
            await _settle(pump, PUMP_DRAIN)
            pipe.close()  # already closed unless the pump never ran
            box.log.close()
            box.proc = None
        box.state = terminated_state(code, started, now_rfc3339())
        self._publish(run)
        return code

    async def _wait(self, run: PodRun, proc: asyncio.subprocess.Process) -> int:
        """The process's exit code; SIGTERM to its group when the pod stops, SIGKILL when the grace period ends."""
        waiter = asyncio.get_running_loop().create_task(proc.wait())
        try:
            if not await _first(waiter, run.stop):
                signal_group(proc, signal.SIGTERM)
                if not await _first(waiter, run.kill):
                    signal_group(proc, signal.SIGKILL)
            rc = await waiter
        finally:
            if not waiter.done():
                waiter.cancel()
        return rc if rc >= 0 else 128 - rc

    def _open_log(self, run: PodRun, box: Box) -> LogFile:
        run.log_dir.mkdir(parents=True, exist_ok=True)
        path = run.log_dir / f"{box.name}.log"
        if box.instances > 1 and path.exists():
            os.replace(path, run.log_dir / f"{box.name}.previous.log")
        return LogFile(path, self.log_limit)

    async def _pump(self, pipe: BinaryIO, sink: LogFile) -> None:
        """Copy a container's output pipe into its log until every process holding the pipe is gone."""
        reader = asyncio.StreamReader(limit=READ_CHUNK)
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe)
        try:
            while chunk := await reader.read(READ_CHUNK):
                sink.write(chunk)
        finally:
            transport.close()



async def _first(task: asyncio.Task, event: asyncio.Event) -> bool:
    """Wait until the task is done or the event is set; True if the task is done."""
    if not event.is_set() and not task.done():
        setter = asyncio.get_running_loop().create_task(event.wait())
        try:
            await asyncio.wait({task, setter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            setter.cancel()
    return task.done()


async def _settle(task: asyncio.Task, timeout: float) -> None:
    """Give a task `timeout` seconds to finish, then cancel it; either way it is over on return."""
    await asyncio.wait({task}, timeout=timeout)
    if not task.done():
        task.cancel()
        await asyncio.wait({task})
    if not task.cancelled() and task.exception() is not None:
        log.warning("draining a container's output failed", exc_info=task.exception())


