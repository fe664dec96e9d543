"""The `process` pod runner: a kubelet whose containers are local processes.

Each pod a scheduler binds (scheduling.py) goes to the node `localnode`; its init containers run one
after the other, then its containers run together, each container's `command` + `args` as a process of its own
(`asyncio.create_subprocess_exec`, in a new session, so its process group is the container).
Images are ignored: with no `command`, `args` alone is run, as with an image without an
ENTRYPOINT (so `kubectl run NAME --image=any -- CMD ARG...` works). Little is isolated: a
process starts with a minimal environment (PATH, HOME, LANG and TMPDIR from the server's, standing
in for the image's; `HOSTNAME`, the pod's name; and the container's `env`/`envFrom`), never the server's
whole environment, but it runs as the server's user and sees the host's files. Its network is its own
where this machine allows (network/: an address per pod on the loopback network, `status.podIP`,
where its wildcard listeners go, and Service and pod names that resolve to pods' addresses), else, and
with `hostNetwork: true`, the host's (pod IP 127.0.0.1).

What a kubelet would report comes back through the pod's status: Pending, then Running with
the containers' states, then each container's exit code, reason and times, and Succeeded or
Failed when the restart policy lets the pod finish. With `OnFailure` or `Always` a container
that exits is restarted in place after a back-off (`CrashLoopBackOff`, counted in
`restartCount`).

The environment (container_env.py): `envFrom` and `env` with plain `value`s, `fieldRef`s to
`metadata.name`, `.namespace`, `.uid`, `.labels['k']`, `.annotations['k']`, `spec.nodeName`,
`spec.serviceAccountName`, `status.hostIP(s)` and `status.podIP(s)`, and keys of ConfigMaps and
Secrets; `$(VAR)` in values, command and args is expanded as the kubelet does (`$$` escapes,
unknown references stay as written). What cannot be resolved (a missing Secret, ConfigMap or
key; resourceFieldRef; a container with neither command nor args; sidecar init containers)
leaves that container waiting with `CreateContainerConfigError` and the kubelet's message (the
pod stays Pending), tried again after a back-off: a Secret created later lets it start. A
ConfigMap or Secret volume whose object is missing holds the pod in ContainerCreating with
FailedMount Events. A command that cannot be executed terminates as under a kubelet with containerd:
`StartError`, exit code 128, startedAt the epoch (it never started) and runc's message in containerd's wrapping
(`failed to create containerd task: ... exec: "x": executable file not found in $PATH: unknown`).

Every step is recorded as the scheduler's and the kubelet's Events about the pod
(pod_events.py: Scheduled, Pulled, Created, Started, Failed, BackOff, Killing, FailedMount),
so `kubectl describe pod` tells what happened. `kubectl exec` runs a command in a running
container's environment (exec.py) and `kubectl port-forward` reaches the pod's ports at its address
(portforward.py).

Deleting a pod stops it as a kubelet does: SIGTERM to every container's process group, SIGKILL
once the pod's `deletionGracePeriodSeconds` have passed, a final status, then the pod object is
removed. Stopping the runner (the cluster) kills every process at once.

Each container's stdout and stderr go to `<log_dir>/<namespace>_<name>_<uid>/<container>.log`
(the instance before the last restart to `<container>.previous.log`), trimmed to about the last
`log_limit` bytes, and are served as the `pods/log` subresource (`kubectl logs`, with
`container`, `previous`, `follow`, `tailLines` and `limitBytes`). `log_dir` defaults to the
environment variable `LOCALCLUSTER_POD_LOG_DIR`, else to a temporary directory the runner
removes when it stops; a pod's logs are removed with the pod, and every pod's when the runner stops.
`keep_logs(directory)` (what `genericjob-controller local` asks for) first copies each pod's output there as
its pod goes, and every pod's when the runner stops (kept_logs.py): served no more, but never lost.
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

from .. import errors
from ..api import Api, now_rfc3339
from ..storage.store import ADDED, DELETED, Event, obj_key
from . import container_env, kept_logs, pod_exec, portforward
from .container_env import HOST_IP, ConfigError, container_command, missing_volume_source, start_error
from .network.pod_network import PodNetwork
from .nodes import register
from .pod_connect import container_of
from .pod_events import PodEvents, field_path
from .pod_exec import signal_group
from .process_guard import drop_pod_privileges
from .runner import KUBELET, NODE, PODS, NoneRunner, ScriptedRunner, bound_here, finish_deletion
from .scheduling import Schedulers

log = logging.getLogger("localcluster.process")

LOG_DIR_ENV = "LOCALCLUSTER_POD_LOG_DIR"
POD_NETWORK_ENV = "LOCALCLUSTER_POD_NETWORK"
CONFIG_ERROR = "CreateContainerConfigError"
NEVER_STARTED = "1970-01-01T00:00:00Z"  # a StartError's startedAt: containerd's zero time, as the kubelet shows it
STOP_SLACK = 10.0  # seconds a stopping pod may take beyond its grace period before its tasks are cancelled
PUMP_DRAIN = 2.0  # seconds to drain a container's output once its process group is gone
READ_CHUNK = 64 * 1024

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
        # What the running instance's process got, for `kubectl exec`; and the exec processes, which die with it.
        self.env: dict[str, str] = {}
        self.cwd: str | None = None
        self.execs: set[asyncio.subprocess.Process] = set()

    @property
    def path(self) -> str:
        """The container's fieldPath in its pod's Events."""
        return field_path(self.name, self.init)

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
        self.last_seen = pod  # the latest pod object, for Events once the object is gone
        self.ip = HOST_IP  # its address, once scheduled (PodNetwork.attach)

    def box(self, name: str) -> Box | None:
        return next((b for b in (*self.init_boxes, *self.boxes) if b.name == name), None)

    def busy(self) -> bool:
        return any(t is not None and not t.done() for t in (self.main, self.terminator))


# --- the runner ------------------------------------------------------------------------------------


class ProcessRunner(NoneRunner):
    name = "process"

    def __init__(self, api: Api, log_dir: str | Path | None = None, log_limit: int = 1 << 20,
                 backoff: tuple[float, float] = (0.5, 10.0), pod_network: bool | None = None) -> None:
        super().__init__(api)
        if pod_network is None:  # LOCALCLUSTER_POD_NETWORK=host: every pod on the host's network
            pod_network = os.environ.get(POD_NETWORK_ENV, "pod") != "host"
        self.network = PodNetwork(api.store, pod_network)
        configured = log_dir or os.environ.get(LOG_DIR_ENV)
        self.log_dir: Path | None = Path(configured) if configured else None
        self.log_limit = log_limit
        self.backoff = backoff  # (first, longest) delay before a container restarts; doubles each time
        self.runs: dict[str, PodRun] = {}
        self.events = PodEvents(api)
        self._owned_dir: Path | None = None
        self.kept_dir: Path | None = None  # where each pod's output is copied as it goes (keep_logs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        self.schedulers = Schedulers(api.store)

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._closing = False
        if self.log_dir is None:
            self.log_dir = self._owned_dir = Path(tempfile.mkdtemp(prefix="localcluster-pod-logs-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        register(self.api)  # the kubelet's node, which every pod is bound to
        self.network.start()

    def keep_logs(self, directory: str | Path) -> Path:
        """From now on, copy each pod's output to `directory` as the pod goes (kept_logs.py); it is emptied now,
        and kept when the runner stops."""
        self.kept_dir = kept_logs.fresh_directory(Path(directory))
        return self.kept_dir

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
        self.network.stop()
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self.log_dir = self._owned_dir = None
        self._loop = None

    # --- events (synchronous, from the store) ----------------------------------------------

    def on_event(self, ev: Event) -> None:
        if self._loop is None or self._closing:
            return
        for pod in self.schedulers.on_event(ev):  # unbound pods a scheduler binds now
            self._admit(pod)
        self.network.on_event(ev)
        if ev.key != PODS:
            return
        meta = ev.obj["metadata"]
        run = self.runs.get(meta["uid"])
        if run is not None:
            run.last_seen = ev.obj
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
        if ev.type == ADDED and bound_here(ev.obj):  # created bound to the node: no scheduler sees it
            self._admit(ev.obj)

    def _admit(self, pod: dict) -> None:
        meta = pod["metadata"]
        if meta["uid"] in self.runs or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        assert self.log_dir is not None and self._loop is not None
        run = self.runs[meta["uid"]] = PodRun(pod, self.log_dir)
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
        self.events.forget(run.uid)
        self.network.detach(run.uid)
        if run.kill_handle is not None:
            run.kill_handle.cancel()
        for box in (*run.init_boxes, *run.boxes):
            _kill_execs(box)
            if box.log is not None:
                box.log.close()
        if self.kept_dir is not None and run.log_dir.exists():
            # Synchronously, in the loop: a few MiB at most per pod (the live logs' limit), and the live files
            # go right after.
            try:
                kept_logs.keep(self.kept_dir, run.key, run.uid, run.log_dir,
                               [b.name for b in (*run.init_boxes, *run.boxes)])
            except OSError:
                log.warning("pod %s/%s: cannot keep its output in %s", *run.key, self.kept_dir, exc_info=True)
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
            self.api.system_write(self.api.registry.builtin("", "v1", "pods"), {**pod, "status": status}, KUBELET,
                                  "status")

    def _status(self, run: PodRun, pod: dict, terminal: bool) -> dict:
        now = now_rfc3339()
        status = dict(pod.get("status") or {})
        status.update(hostIP=HOST_IP, hostIPs=[{"ip": HOST_IP}], podIP=run.ip, podIPs=[{"ip": run.ip}],
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
        if pod is not None:
            finish_deletion(self.api, pod)

    # --- the pod's life --------------------------------------------------------------------

    async def _pod(self, run: PodRun) -> None:
        try:
            if not self._schedule(run) or not await self._mount(run):
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
        run.ip = self.network.attach(pod)
        status = self._status(run, pod, False)
        bound = self.api.system_write(self.api.registry.builtin("", "v1", "pods"),
                                      {**pod, "spec": {**pod["spec"], "nodeName": NODE}, "status": status},
                                      KUBELET, "status")
        if not pod["spec"].get("nodeName"):  # one created bound to the node never met the scheduler
            self.events.scheduled(bound)
        return True

    def _objects(self, run: PodRun):
        """The ConfigMaps and Secrets of the pod's namespace, by (plural, name), as the kubelet's caches see them."""
        return lambda plural, name: self.api.store.get(("", plural), (run.key[0], name))

    def _delay(self, attempt: int) -> float:
        first, longest = self.backoff
        return min(first * 2 ** min(attempt, 20), longest)

    async def _backed_off(self, run: PodRun, delay: float) -> bool:
        """Wait `delay` seconds unless the pod stops first; True if it did not."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(run.stop.wait(), delay)
        return not run.stop.is_set()

    async def _mount(self, run: PodRun) -> bool:
        """Wait until every ConfigMap and Secret the pod's volumes name exists, as the kubelet's volume
        manager does before any container starts; False if the pod stops first."""
        attempt = 0
        while (pod := self._current(run)) is not None:
            missing = missing_volume_source(pod, self._objects(run))
            if missing is None:
                return True
            self.events.record(pod, "Warning", "FailedMount", missing)
            if not await self._backed_off(run, self._delay(attempt)):
                return False
            attempt += 1
        return False

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
            argv, env = container_command(pod, box.spec, self._objects(run))
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
        box.env = {**container_env.base_environment(), **network,
                   **container_env.api_server_variables(self.api_address), "HOSTNAME": run.key[1], **env}
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
            box.state = _terminated(128, NEVER_STARTED, now_rfc3339(), "StartError", message)
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
            _kill_execs(box)  # the container's processes die with it, `kubectl exec`'s too
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

    async def _finish(self, run: PodRun) -> None:
        """A deleted pod: wait for its containers to stop, report them, remove the pod object."""
        try:
            for box in (*run.init_boxes, *run.boxes):
                if box.proc is not None:
                    self._record(run, box, "Normal", "Killing", f"Stopping container {box.name}")
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
        pod = self.api.get(self.api.registry.builtin("", "v1", "pods"), namespace, name)
        query = request.query
        container = container_of(pod, query.get("container"))
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

    # --- the pods/exec and pods/portforward subresources --------------------------------------

    async def pod_exec(self, request: web.Request, pod: dict, options: pod_exec.ExecOptions,
                       container: str) -> web.StreamResponse:
        """pods/exec (a WebSocket) of a pod bound to this node: what `kubectl exec` asks for."""
        run = self.runs.get(pod["metadata"]["uid"])
        box = run.box(container) if run is not None else None
        running = box is not None and box.proc is not None
        target = pod_exec.Target(container, box.env, box.cwd, box.execs) if box is not None and running else None
        return await pod_exec.serve(request, options, target, container)

    async def pod_portforward(self, request: web.Request, pod: dict) -> web.StreamResponse:
        """pods/portforward (a WebSocket) of a pod bound to this node: what `kubectl port-forward` asks for."""
        run = self.runs.get(pod["metadata"]["uid"])
        if run is None:
            raise errors.bad_request(f'pod "{pod["metadata"]["name"]}" is not run by the process runner (no network '
                                     f"to forward to)")
        return await portforward.serve(request, pod, None if run.ip == HOST_IP else run.ip)


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


def _kill_execs(box: Box) -> None:
    for proc in list(box.execs):
        signal_group(proc, signal.SIGKILL)


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


def make_runner(kind: str, api: Api, default_script: dict | list | None = None) -> NoneRunner:
    """The pod runner `--runner KIND` names: `none` or `scripted` (runner.py), `process` (this module)."""
    if kind == "none":
        return NoneRunner(api)
    if kind == "scripted":
        return ScriptedRunner(api, default_script)
    if kind == "process":
        return ProcessRunner(api)
    raise ValueError(f"unknown pod runner {kind!r} (expected none, scripted or process)")
