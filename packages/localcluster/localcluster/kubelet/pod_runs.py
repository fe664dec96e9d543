"""The process runner's view of a pod (a PodRun) and of each of its containers (a Box), and the status the
kubelet makes of them: the pod's phase (getPhase), its conditions, a container's terminated state."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from ..storage.store import obj_key
from .container_env import HOST_IP
from .log_file import LogFile
from .pod_events import field_path
from .pod_exec import signal_group


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
        self.sshd = False  # whether the running instance is the sshd stand-in (remote_shell.py)

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



def pod_phase(run: PodRun, terminal: bool) -> str:
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


def pod_conditions(old: list | None, now: str, wanted: list[tuple[str, bool, str | None, str | None]]) -> list[dict]:
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


def terminated_state(code: int, started: str, finished: str, reason: str | None = None,
                     message: str | None = None) -> dict:
    state = {"exitCode": code, "reason": reason or ("Completed" if code == 0 else "Error"),
             "startedAt": started, "finishedAt": finished}
    if message:
        state["message"] = message
    return {"terminated": state}


def kill_execs(box: Box) -> None:
    for proc in list(box.execs):
        signal_group(proc, signal.SIGKILL)

