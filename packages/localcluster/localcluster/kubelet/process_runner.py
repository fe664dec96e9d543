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
FailedMount Events; once it exists, its files are written in the runner's own directory and the container's
env, command and args name them there (pod_volumes.py), kept current as the object changes. A container whose
command is `sshd` runs a stand-in, and `ssh` from another pod runs commands in it (remote_shell.py). A command
that cannot be executed terminates as under a kubelet with containerd:
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
import tempfile
from pathlib import Path

from aiohttp import web

from .. import errors
from ..api import Api, now_rfc3339
from ..storage.store import ADDED, DELETED, Event
from . import kept_logs, pod_exec, portforward, process_pod_log
from .container_env import HOST_IP, missing_volume_source
from .container_processes import PUMP_DRAIN, ContainerProcesses
from .network.pod_network import PodNetwork
from .nodes import register
from .pod_events import PodEvents
from .pod_runs import PodRun, kill_execs, pod_conditions, pod_phase
from .pod_volumes import PodVolumes, sources
from .remote_shell import RemoteShell, ShellTarget
from .runner import KUBELET, NODE, PODS, NoneRunner, ScriptedRunner, bound_here, finish_deletion
from .scheduling import Schedulers

log = logging.getLogger("localcluster.process")

LOG_DIR_ENV = "LOCALCLUSTER_POD_LOG_DIR"
POD_NETWORK_ENV = "LOCALCLUSTER_POD_NETWORK"
VOLUME_SOURCES = (("", "configmaps"), ("", "secrets"))
STOP_SLACK = 10.0  # seconds a stopping pod may take beyond its grace period before its tasks are cancelled

# --- the runner ------------------------------------------------------------------------------------


class ProcessRunner(ContainerProcesses, NoneRunner):
    name = "process"

    def __init__(self, api: Api, log_dir: str | Path | None = None, log_limit: int = 1 << 20,
                 backoff: tuple[float, float] = (0.5, 10.0), pod_network: bool | None = None) -> None:
        super().__init__(api)
        if pod_network is None:  # LOCALCLUSTER_POD_NETWORK=host: every pod on the host's network
            pod_network = os.environ.get(POD_NETWORK_ENV, "pod") != "host"
        self.network = PodNetwork(api.store, pod_network)
        self.shell = RemoteShell(self._shell_target)
        self.volumes = PodVolumes()
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
        self.volumes.start()
        self.shell.start(self.network.pool.network if self.network.own_addresses else None)

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
        await self.shell.stop()
        self.volumes.stop()
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
        if ev.key in VOLUME_SOURCES:
            self._refresh_volumes(ev)
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
        self.volumes.forget(run.uid)
        if run.kill_handle is not None:
            run.kill_handle.cancel()
        for box in (*run.init_boxes, *run.boxes):
            kill_execs(box)
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
        phase = status["phase"] = pod_phase(run, terminal)
        done = phase in ("Succeeded", "Failed")
        ready = run.initialized and not done and all("running" in b.state for b in run.boxes)
        not_ready = [b.name for b in run.boxes if "running" not in b.state]
        why = None if ready else "PodCompleted" if done else "ContainersNotReady"
        message = None if ready or done else f"containers with unready status: [{' '.join(not_ready)}]"
        waiting_init = [b.name for b in run.init_boxes if not b.succeeded]
        init_reason = None if run.initialized else "ContainersNotInitialized"
        init_message = f"containers with incomplete status: [{' '.join(waiting_init)}]" if init_reason else None
        status["conditions"] = pod_conditions(status.get("conditions"), now, [
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

    def _refresh_volumes(self, ev: Event) -> None:
        """A ConfigMap or Secret changed: the volumes that show it follow, as the kubelet's do (one deleted
        leaves them as they were)."""
        meta = ev.obj["metadata"]
        source = (ev.key[1], meta["name"])
        if ev.type == DELETED:
            return
        for run in list(self.runs.values()):
            pod = self._current(run)
            if pod is not None and run.key[0] == meta.get("namespace") and source in sources(pod):
                self.volumes.write(pod, self._objects(run))

    def _shell_target(self, address: str) -> ShellTarget | None:
        """The container of the pod at `address` that runs the sshd stand-in (remote_shell.py)."""
        run = next((r for r in self.runs.values() if r.ip == address and r.ip != HOST_IP), None)
        if run is None:
            raise KeyError(address)
        box = next((b for b in run.boxes if b.sshd and b.proc is not None), None)
        return None if box is None else ShellTarget(box.env, box.cwd, box.execs)

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
                self.volumes.write(pod, self._objects(run))
                return True
            self.events.record(pod, "Warning", "FailedMount", missing)
            if not await self._backed_off(run, self._delay(attempt)):
                return False
            attempt += 1
        return False

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
        """GET /api/v1/namespaces/{namespace}/pods/{name}/log: what `kubectl logs` reads (process_pod_log.py)."""
        return await process_pod_log.serve(self.api, self.runs, request, namespace, name)


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


def make_runner(kind: str, api: Api, default_script: dict | list | None = None) -> NoneRunner:
    """The pod runner `--runner KIND` names: `none` or `scripted` (runner.py), `process` (this module)."""
    if kind == "none":
        return NoneRunner(api)
    if kind == "scripted":
        return ScriptedRunner(api, default_script)
    if kind == "process":
        return ProcessRunner(api)
    raise ValueError(f"unknown pod runner {kind!r} (expected none, scripted or process)")
