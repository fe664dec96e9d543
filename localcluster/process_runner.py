"""The `process` pod runner: a kubelet whose containers are local processes.

Each pod is bound to the node `localnode`; its init containers run one after the other, then
its containers run together, each container's `command` + `args` as a process of its own
(`asyncio.create_subprocess_exec`, in a new session, so its process group is the container).
Images are ignored: with no `command`, `args` alone is run, as with an image without an
ENTRYPOINT (so `kubectl run NAME --image=any -- CMD ARG...` works). Nothing is isolated: a
process sees the server's environment (standing in for the image's), `HOSTNAME` (the pod's
name) and the container's `env`, and shares the host's network (pod IP 127.0.0.1); networking
between pods is not emulated.

What a kubelet would report comes back through the pod's status: Pending, then Running with
the containers' states, then each container's exit code, reason and times, and Succeeded or
Failed when the restart policy lets the pod finish. With `OnFailure` or `Always` a container
that exits is restarted in place after a back-off (`CrashLoopBackOff`, counted in
`restartCount`).

The environment: plain `value`s, and `valueFrom.fieldRef` to `metadata.name`, `.namespace`,
`.uid`, `.labels['k']`, `.annotations['k']`, `spec.nodeName`, `spec.serviceAccountName`,
`status.hostIP(s)` and `status.podIP(s)`; `$(VAR)` in values, command and args is expanded as
the kubelet does (`$$` escapes, unknown references stay as written). What the runner cannot
provide (secretKeyRef, configMapKeyRef, resourceFieldRef, envFrom, a container with neither
command nor args, sidecar init containers) leaves that container waiting with
`CreateContainerConfigError` and a message, as a kubelet reports a configuration error (the pod
stays Pending); a command that cannot be executed terminates with `StartError` (exit code 128),
as containerd reports it.

Deleting a pod stops it as a kubelet does: SIGTERM to every container's process group, SIGKILL
once the pod's `deletionGracePeriodSeconds` have passed, a final status, then the pod object is
removed. Stopping the runner (the cluster) kills every process at once.

Each container's stdout and stderr go to `<log_dir>/<namespace>_<name>_<uid>/<container>.log`
(the instance before the last restart to `<container>.previous.log`), trimmed to about the last
`log_limit` bytes, and are served as the `pods/log` subresource (`kubectl logs`, with
`container`, `previous`, `follow`, `tailLines` and `limitBytes`). `log_dir` defaults to the
environment variable `LOCALCLUSTER_POD_LOG_DIR`, else to a temporary directory the runner
removes when it stops; a pod's logs are removed with the pod, and every pod's when the runner stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import BinaryIO

from aiohttp import web

from . import errors
from .api import Api, now_rfc3339
from .errors import ApiError
from .runner import KUBELET, NODE, PODS, NoneRunner
from .store import ADDED, DELETED, Event, obj_key

log = logging.getLogger("localcluster.process")

LOG_DIR_ENV = "LOCALCLUSTER_POD_LOG_DIR"
HOST_IP = POD_IP = "127.0.0.1"
CONFIG_ERROR = "CreateContainerConfigError"
STOP_SLACK = 10.0  # seconds a stopping pod may take beyond its grace period before its tasks are cancelled
PUMP_DRAIN = 2.0  # seconds to drain a container's output once its process group is gone
READ_CHUNK = 64 * 1024

class ConfigError(Exception):
    """What a kubelet reports as CreateContainerConfigError."""


# --- $(VAR) expansion, as k8s.io/kubernetes/third_party/forked/golang/expansion ----------------------


def expand(text: str, env: dict[str, str]) -> str:
    """Expand `$(VAR)` from `env`; `$$` is a literal `$`; unknown or unterminated references stay as written."""
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1:]
            if rest[0] == "$":
                out.append("$")
                advance = 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close < 0:
                    out.append("$(")
                    advance = 1
                else:
                    name = rest[1:close]
                    out.append(env[name] if name in env else f"$({name})")
                    advance = close + 1
            else:
                out.append("$" + rest[0])
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)


# --- a container's command and environment -------------------------------------------------------


def _split_subscript(path: str) -> tuple[str, str | None]:
    """`metadata.labels['k']` -> ("metadata.labels", "k"), as fieldpath.SplitMaybeSubscriptedPath."""
    if not path.endswith("']"):
        return path, None
    head, sep, key = path[:-2].partition("['")
    if not sep or not head:
        return path, None
    return head, key


def field_value(pod: dict, path: str) -> str:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    head, key = _split_subscript(path)
    if key is not None and head in ("metadata.labels", "metadata.annotations"):
        return str((meta.get(head.split(".")[1]) or {}).get(key, ""))
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName") or NODE,
        "spec.serviceAccountName": spec.get("serviceAccountName") or spec.get("serviceAccount") or "default",
        "status.hostIP": HOST_IP,
        "status.hostIPs": HOST_IP,
        "status.podIP": POD_IP,
        "status.podIPs": POD_IP,
    }
    if path not in simple:
        raise ConfigError(f'unsupported fieldPath "{path}" (the process runner provides '
                          f"{', '.join(sorted(simple))}, metadata.labels['KEY'] and metadata.annotations['KEY'])")
    return str(simple[path] or "")


def container_env(pod: dict, container: dict) -> dict[str, str]:
    """The container's declared environment, in order, each `value` expanded against the ones before it."""
    if container.get("envFrom"):
        raise ConfigError("envFrom is not supported by the process runner: it cannot read ConfigMaps or Secrets")
    env: dict[str, str] = {}
    for var in container.get("env") or ():
        name = var.get("name") or ""
        source = var.get("valueFrom")
        if source:
            if "fieldRef" not in source:
                kind = next(iter(source), "valueFrom")
                raise ConfigError(f"env {name}: valueFrom.{kind} is not supported by the process runner "
                                  f"(only value and fieldRef)")
            env[name] = field_value(pod, (source.get("fieldRef") or {}).get("fieldPath", ""))
        else:
            env[name] = expand(str(var.get("value") or ""), env)
    return env


def container_command(pod: dict, container: dict) -> tuple[list[str], dict[str, str]]:
    """argv (command + args, expanded) and the declared environment; ConfigError if it cannot be run."""
    if container.get("restartPolicy") == "Always":
        raise ConfigError("sidecar init containers (restartPolicy: Always) are not supported by the process runner")
    env = container_env(pod, container)
    parts = [*(container.get("command") or ()), *(container.get("args") or ())]
    if not parts:
        raise ConfigError("the container has no command: the process runner ignores images, so it runs "
                          "command + args and needs at least one of them")
    return [expand(str(part), env) for part in parts], env


# --- logs ------------------------------------------------------------------------------------------


class LogFile:
    """One container instance's output: appended as it arrives, trimmed to about the last `limit` bytes.

    Positions are absolute (bytes written since the instance started), so a follower keeps its
    place when the front of the file is trimmed away.
    """

    def __init__(self, path: Path, limit: int) -> None:
        self.path = path
        self.limit = max(limit, 1)
        self.size = 0  # bytes in the file
        self.dropped = 0  # bytes trimmed from its front
        self.closed = False
        self._file: BinaryIO | None = open(path, "wb")  # kept open while the instance runs
        self._changed = asyncio.Event()

    @property
    def end(self) -> int:
        return self.dropped + self.size

    def write(self, data: bytes) -> None:
        if self._file is None:
            return
        self._file.write(data)
        self._file.flush()
        self.size += len(data)
        if self.size > self.limit + self.limit // 4:
            self._trim()
        self._wake()

    def _trim(self) -> None:
        assert self._file is not None
        self._file.close()
        with open(self.path, "rb") as f:
            f.seek(self.size - self.limit)
            keep = f.read()
        cut = keep.find(b"\n")
        if 0 <= cut < len(keep) - 1:
            keep = keep[cut + 1:]  # start at a line
        with open(self.path, "wb") as f:
            f.write(keep)
        self.dropped += self.size - len(keep)
        self.size = len(keep)
        self._file = open(self.path, "ab")

    def read(self, since: int = 0) -> tuple[bytes, int]:
        """What is kept from absolute position `since` on, and the position after it."""
        start = min(max(since - self.dropped, 0), self.size)
        with open(self.path, "rb") as f:
            f.seek(start)
            data = f.read(self.size - start)
        return data, self.dropped + start + len(data)

    def waiter(self) -> asyncio.Event:
        """An event set at the next write or at close (take it before reading, so no write is missed)."""
        return self._changed

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()


# --- the runner's view of a pod --------------------------------------------------------------------


class Box:
    """One container of a pod: its spec, its state as reported, and its running process."""

    def __init__(self, spec: dict, init: bool, waiting: str) -> None:
        self.spec = spec
        self.name: str = spec["name"]
        self.init = init
        self.state: dict = {"waiting": {"reason": waiting}}
        self.last_state: dict = {}
        self.restarts = 0
        self.instances = 0
        self.container_id: str | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self.log: LogFile | None = None

    @property
    def succeeded(self) -> bool:
        return self.state.get("terminated", {}).get("exitCode") == 0

    def status(self) -> dict:
        running = "running" in self.state
        out = {"name": self.name, "image": self.spec.get("image", ""), "imageID": "",
               "ready": self.succeeded if self.init else running, "restartCount": self.restarts,
               "started": running, "state": self.state, "lastState": self.last_state}
        if self.container_id:
            out["containerID"] = self.container_id
        return out


class PodRun:
    def __init__(self, pod: dict, log_dir: Path) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        self.uid: str = meta["uid"]
        self.key = obj_key(pod)
        self.restart_policy: str = spec.get("restartPolicy") or "Always"
        init = spec.get("initContainers") or []
        self.init_boxes = [Box(c, True, "PodInitializing") for c in init]
        self.boxes = [Box(c, False, "PodInitializing" if init else "ContainerCreating") for c in spec["containers"]]
        self.log_dir = log_dir / f"{self.key[0]}_{self.key[1]}_{self.uid}"
        self.initialized = not init
        self.init_failed = False
        self.start_time: str | None = None
        self.stop = asyncio.Event()  # SIGTERM now, start nothing more
        self.kill = asyncio.Event()  # SIGKILL now
        self.grace: float | None = None
        self.kill_handle: asyncio.TimerHandle | None = None
        self.main: asyncio.Task | None = None
        self.terminator: asyncio.Task | None = None
        self.deleted = False

    def box(self, name: str) -> Box | None:
        return next((b for b in (*self.init_boxes, *self.boxes) if b.name == name), None)

    def busy(self) -> bool:
        return any(t is not None and not t.done() for t in (self.main, self.terminator))


# --- the runner ------------------------------------------------------------------------------------


class ProcessRunner(NoneRunner):
    name = "process"

    def __init__(self, api: Api, log_dir: str | Path | None = None, log_limit: int = 1 << 20,
                 backoff: tuple[float, float] = (0.5, 10.0)) -> None:
        super().__init__(api)
        configured = log_dir or os.environ.get(LOG_DIR_ENV)
        self.log_dir: Path | None = Path(configured) if configured else None
        self.log_limit = log_limit
        self.backoff = backoff  # (first, longest) delay before a container restarts; doubles each time
        self.runs: dict[str, PodRun] = {}
        self._owned_dir: Path | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._closing = False
        if self.log_dir is None:
            self.log_dir = self._owned_dir = Path(tempfile.mkdtemp(prefix="localcluster-pod-logs-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)

    async def stop(self) -> None:
        """Kill every process at once and wait for the pods' tasks; the pods keep their last status."""
        self._closing = True
        runs = list(self.runs.values())
        for run in runs:
            run.stop.set()
            run.kill.set()
        tasks = [t for run in runs for t in (run.main, run.terminator) if t is not None and not t.done()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=PUMP_DRAIN + 3)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        for run in runs:
            self._forget(run)
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self.log_dir = self._owned_dir = None
        self._loop = None

    # --- events (synchronous, from the store) ----------------------------------------------

    def on_event(self, ev: Event) -> None:
        if ev.key != PODS or self._loop is None or self._closing:
            return
        meta = ev.obj["metadata"]
        run = self.runs.get(meta["uid"])
        if ev.type == DELETED:
            if run is not None:
                run.deleted = True
                if run.busy():
                    self._terminate(run, 0)
                else:
                    self._forget(run)
            return
        if meta.get("deletionTimestamp"):
            if run is not None:
                self._terminate(run, float(meta.get("deletionGracePeriodSeconds") or 0))
            return
        if (ev.type == ADDED and run is None and ev.obj["spec"].get("nodeName") in (None, "", NODE)
                and (ev.obj.get("status") or {}).get("phase") not in ("Succeeded", "Failed")):
            assert self.log_dir is not None
            run = self.runs[meta["uid"]] = PodRun(ev.obj, self.log_dir)
            run.main = self._loop.create_task(self._pod(run), name=f"pod {run.key[0]}/{run.key[1]}")

    def _terminate(self, run: PodRun, grace: float) -> None:
        """Stop the pod's containers: SIGTERM now, SIGKILL after `grace` seconds (a shorter grace wins)."""
        assert self._loop is not None
        if run.grace is None or grace < run.grace:
            run.grace = grace
            if run.kill_handle is not None:
                run.kill_handle.cancel()
            if grace <= 0:
                run.kill.set()
            else:
                run.kill_handle = self._loop.call_later(grace, run.kill.set)
        run.stop.set()
        if run.terminator is None:
            run.terminator = self._loop.create_task(self._finish(run), name=f"stop {run.key[0]}/{run.key[1]}")

    def _forget(self, run: PodRun) -> None:
        self.runs.pop(run.uid, None)
        if run.kill_handle is not None:
            run.kill_handle.cancel()
        for box in (*run.init_boxes, *run.boxes):
            if box.log is not None:
                box.log.close()
        shutil.rmtree(run.log_dir, ignore_errors=True)

    # --- the API ---------------------------------------------------------------------------

    def _current(self, run: PodRun) -> dict | None:
        pod = self.api.store.get(PODS, run.key)
        return pod if pod is not None and pod["metadata"]["uid"] == run.uid else None

    def _publish(self, run: PodRun, terminal: bool = False) -> None:
        if self._closing or run.deleted:
            return
        pod = self._current(run)
        if pod is None:
            return
        status = self._status(run, pod, terminal)
        if status != pod.get("status"):
            self.api.system_write(self.api.registry.get("", "v1", "pods"), {**pod, "status": status}, KUBELET, "status")

    def _status(self, run: PodRun, pod: dict, terminal: bool) -> dict:
        now = now_rfc3339()
        status = dict(pod.get("status") or {})
        status.update(hostIP=HOST_IP, hostIPs=[{"ip": HOST_IP}], podIP=POD_IP, podIPs=[{"ip": POD_IP}],
                      startTime=run.start_time or now)
        if run.init_boxes:
            status["initContainerStatuses"] = [b.status() for b in run.init_boxes]
        status["containerStatuses"] = [b.status() for b in run.boxes]
        phase = status["phase"] = _phase(run, terminal)
        done = phase in ("Succeeded", "Failed")
        ready = run.initialized and not done and all("running" in b.state for b in run.boxes)
        not_ready = [b.name for b in run.boxes if "running" not in b.state]
        why = None if ready else "PodCompleted" if done else "ContainersNotReady"
        message = None if ready or done else f"containers with unready status: [{' '.join(not_ready)}]"
        waiting_init = [b.name for b in run.init_boxes if not b.succeeded]
        init_reason = None if run.initialized else "ContainersNotInitialized"
        init_message = f"containers with incomplete status: [{' '.join(waiting_init)}]" if init_reason else None
        status["conditions"] = _conditions(status.get("conditions"), now, [
            ("PodReadyToStartContainers", not done, None, None),
            ("Initialized", run.initialized, init_reason, init_message),
            ("Ready", ready, why, message),
            ("ContainersReady", ready, why, message),
            ("PodScheduled", True, None, None),
        ])
        return status

    def _delete(self, run: PodRun) -> None:
        """What the kubelet does once the containers are stopped: delete the pod with no grace left."""
        pod = self._current(run)
        if pod is None:
            return
        rt = self.api.registry.get("", "v1", "pods")
        if not pod["metadata"].get("finalizers"):
            self.api.remove_now(rt, pod)
            return
        with contextlib.suppress(ApiError):  # the object stays until its finalizers are removed
            self.api.delete(rt, run.key[0], run.key[1], {"gracePeriodSeconds": 0, "preconditions": {"uid": run.uid}})

    # --- the pod's life --------------------------------------------------------------------

    async def _pod(self, run: PodRun) -> None:
        try:
            if not self._schedule(run):
                return
            for box in run.init_boxes:
                code = await self._supervise(run, box)
                if code != 0:
                    if code is not None and run.restart_policy == "Never":
                        run.init_failed = True
                        self._publish(run)
                    return
            run.initialized = True
            for box in run.boxes:
                box.state = {"waiting": {"reason": "ContainerCreating"}}
            self._publish(run)
            results = await asyncio.gather(*(self._supervise(run, b) for b in run.boxes), return_exceptions=True)
            for result in results:
                if isinstance(result, Exception):
                    log.error("pod %s/%s: container failed", *run.key, exc_info=result)
            self._publish(run)
        except Exception:
            log.exception("pod %s/%s: the process runner failed", *run.key)

    def _schedule(self, run: PodRun) -> bool:
        pod = self._current(run)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return False
        run.log_dir.mkdir(parents=True, exist_ok=True)
        run.start_time = now_rfc3339()
        status = self._status(run, pod, False)
        self.api.system_write(self.api.registry.get("", "v1", "pods"),
                              {**pod, "spec": {**pod["spec"], "nodeName": NODE}, "status": status}, KUBELET, "status")
        return True

    async def _supervise(self, run: PodRun, box: Box) -> int | None:
        """Run a container until the restart policy says it is done: its last exit code, or None if it never ran."""
        code = None
        while not run.stop.is_set():
            code = await self._run_once(run, box)
            if code is None or run.stop.is_set():
                return code
            policy = run.restart_policy
            if policy == "Never" or (code == 0 and (box.init or policy == "OnFailure")):
                return code
            first, longest = self.backoff
            delay = min(first * 2 ** min(box.restarts, 20), longest)
            box.last_state, box.state = box.state, {"waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off {delay:g}s restarting failed container={box.name} "
                           f"pod={run.key[1]}_{run.key[0]}({run.uid})"}}
            self._publish(run)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run.stop.wait(), delay)
        return code

    async def _run_once(self, run: PodRun, box: Box) -> int | None:
        """Start one instance of the container and wait for it: its exit code, or None on a config error."""
        pod = self._current(run)
        if pod is None:
            return None
        try:
            argv, env = container_command(pod, box.spec)
        except ConfigError as exc:
            box.state = {"waiting": {"reason": CONFIG_ERROR, "message": str(exc)}}
            self._publish(run)
            return None
        if run.stop.is_set():
            return None
        if box.instances:
            box.restarts += 1
        box.instances += 1
        box.log = self._open_log(run, box)
        started = now_rfc3339()
        read_fd, write_fd = os.pipe()
        pipe = os.fdopen(read_fd, "rb", buffering=0)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=write_fd, stderr=write_fd,
                env={**os.environ, "HOSTNAME": run.key[1], **env}, cwd=box.spec.get("workingDir") or None,
                start_new_session=True)
        except BaseException as exc:
            pipe.close()
            box.log.close()
            if not isinstance(exc, OSError):
                raise
            box.container_id = None
            box.state = _terminated(128, started, now_rfc3339(), "StartError",
                                    f"failed to start the container process: {exc}")
            self._publish(run)
            return 128
        finally:
            os.close(write_fd)
        box.proc = proc
        pump = asyncio.get_running_loop().create_task(self._pump(pipe, box.log))
        try:
            box.container_id = f"process://{proc.pid}"
            box.state = {"running": {"startedAt": started}}
            self._publish(run)
            code = await self._wait(run, proc)
        finally:
            _signal_group(proc, signal.SIGKILL)  # whatever the container's main process left behind
            await _settle(pump, PUMP_DRAIN)
            pipe.close()  # already closed unless the pump never ran
            box.log.close()
            box.proc = None
        box.state = _terminated(code, started, now_rfc3339())
        self._publish(run)
        return code

    async def _wait(self, run: PodRun, proc: asyncio.subprocess.Process) -> int:
        """The process's exit code; SIGTERM to its group when the pod stops, SIGKILL when the grace period ends."""
        waiter = asyncio.get_running_loop().create_task(proc.wait())
        try:
            if not await _first(waiter, run.stop):
                _signal_group(proc, signal.SIGTERM)
                if not await _first(waiter, run.kill):
                    _signal_group(proc, signal.SIGKILL)
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

    async def _finish(self, run: PodRun) -> None:
        """A deleted pod: wait for its containers to stop, report them, remove the pod object."""
        try:
            assert run.main is not None
            await asyncio.wait({run.main}, timeout=(run.grace or 0) + STOP_SLACK)
            if not run.main.done():
                log.warning("pod %s/%s: containers did not stop in time", *run.key)
                run.main.cancel()
                await asyncio.gather(run.main, return_exceptions=True)
            if not run.deleted and not self._closing:
                self._publish(run, terminal=True)
                self._delete(run)
        except Exception:
            log.exception("pod %s/%s: stopping failed", *run.key)
        finally:
            if run.deleted and self.runs.get(run.uid) is run:
                self._forget(run)

    # --- the pods/log subresource ----------------------------------------------------------

    async def pod_log(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        """GET /api/v1/namespaces/{namespace}/pods/{name}/log: what `kubectl logs` reads."""
        pod = self.api.get(self.api.registry.get("", "v1", "pods"), namespace, name)
        query = request.query
        spec = pod.get("spec") or {}
        names = [c["name"] for c in spec.get("containers") or ()]
        init_names = [c["name"] for c in spec.get("initContainers") or ()]
        container = query.get("container")
        if not container:
            if len(names) != 1:
                extra = f" or one of the init containers: [{' '.join(init_names)}]" if init_names else ""
                raise errors.bad_request(f"a container name must be specified for pod {name}, choose one of: "
                                         f"[{' '.join(names)}]{extra}")
            container = names[0]
        if container not in names and container not in init_names:
            raise errors.bad_request(f"container {container} is not valid for pod {name}")
        tail = _int_param(query, "tailLines")
        limit = _int_param(query, "limitBytes")
        run = self.runs.get(pod["metadata"]["uid"])
        box = run.box(container) if run is not None else None
        if run is None or box is None:
            raise errors.bad_request(f'pod "{name}" is not run by the process runner (no logs)')
        if query.get("previous") in ("true", "1", "True"):
            path = run.log_dir / f"{container}.previous.log"
            if not path.exists():
                raise errors.bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
            return web.Response(body=_select(_read_bytes(path), tail, limit), content_type="text/plain")
        sink = box.log
        if sink is None:
            reason = box.state.get("waiting", {}).get("reason", "ContainerCreating")
            raise errors.bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
        waiter = sink.waiter()
        data, position = sink.read()
        data = _select(data, tail, limit)
        follow = query.get("follow") in ("true", "1", "True")
        if not follow or sink.closed or limit is not None:
            return web.Response(body=data, content_type="text/plain")
        response = web.StreamResponse(headers={"Content-Type": "text/plain", "Cache-Control": "no-cache, private"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        if data:
            await response.write(data)
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.wait(), 1.0)
            if request.transport is None or request.transport.is_closing():
                break
            waiter = sink.waiter()
            data, position = sink.read(position)
            if data:
                await response.write(data)
            if sink.closed:
                break
        return response


# --- helpers ---------------------------------------------------------------------------------------


def _phase(run: PodRun, terminal: bool) -> str:
    """The kubelet's getPhase, for the states this runner produces."""
    if run.init_failed:
        return "Failed"
    if terminal:
        return "Succeeded" if all(b.succeeded for b in run.boxes) else "Failed"
    if not run.initialized:
        return "Pending"
    waiting = running = stopped = succeeded = 0
    for box in run.boxes:
        if "running" in box.state:
            running += 1
        elif "terminated" in box.state:
            stopped += 1
            succeeded += box.succeeded
        elif box.last_state.get("terminated"):
            stopped += 1
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if run.restart_policy == "Always":
        return "Running"
    if stopped == succeeded:
        return "Succeeded"
    return "Failed" if run.restart_policy == "Never" else "Running"


def _conditions(old: list | None, now: str, wanted: list[tuple[str, bool, str | None, str | None]]) -> list[dict]:
    """Pod conditions, keeping lastTransitionTime while a condition's status is unchanged."""
    previous = {c.get("type"): c for c in old or ()}
    out = []
    for kind, ok, reason, message in wanted:
        status = "True" if ok else "False"
        before = previous.get(kind)
        since = before["lastTransitionTime"] if before and before.get("status") == status else now
        cond = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": since}
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        out.append(cond)
    return out


def _terminated(code: int, started: str, finished: str, reason: str | None = None, message: str | None = None) -> dict:
    state = {"exitCode": code, "reason": reason or ("Completed" if code == 0 else "Error"),
             "startedAt": started, "finishedAt": finished}
    if message:
        state["message"] = message
    return {"terminated": state}


def _signal_group(proc: asyncio.subprocess.Process, sig: int) -> None:
    """Signal the container's process group (its main process leads it: start_new_session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


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


def _read_bytes(path: Path) -> bytes:
    return path.read_bytes()


def _int_param(query, name: str) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        value = int(raw)
    except ValueError as exc:
        raise errors.bad_request(f"{name}: invalid value {raw!r}: must be an integer") from exc
    if value < (0 if name == "tailLines" else 1):
        raise errors.bad_request(f"{name}: Invalid value: {value}: must be "
                                 f"{'greater than or equal to 0' if name == 'tailLines' else 'greater than 0'}")
    return value


def _select(data: bytes, tail: int | None, limit: int | None) -> bytes:
    if tail is not None:
        data = b"".join(data.splitlines(keepends=True)[-tail:]) if tail else b""
    if limit is not None:
        data = data[:limit]
    return data
