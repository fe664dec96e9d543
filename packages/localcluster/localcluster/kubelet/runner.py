"""Pod runners: the scheduler and kubelet of localcluster.

- `none`: pods are never scheduled and stay Pending; tests write status through `/status`.
- `scripted`: each pod a scheduler binds (scheduling.py: the default scheduler's at once, T9k Scheduler's as
  a gang, no other's) goes to the node `localnode` (nodes.py) and follows a script: start after a
  delay, run, then exit with a code (or run forever, or fail to start, or hang terminating).

A script is a dict, or a list of dicts indexed by attempt (the n-th pod seen with that name
uses entry min(n, len-1)), so "fail once, then succeed" is `[{"exit_code": 1}, {"exit_code": 0}]`.
Keys: `start_after` (s, default 0.01), `run_for` (s; absent or null: forever), `exit_code`
(default 0), `exit_reason` (the terminated container's reason: default `Completed` for 0, else `Error`;
`OOMKilled` as the kubelet reports a container killed for its memory limit, with exit code 137),
`fail_to_start` (a waiting reason such as "ImagePullBackOff", with the kubelet's message for an image that
cannot be pulled, or `fail_message`), `unschedulable` (true, or the scheduler's message: the pod is never
bound and its PodScheduled condition is False, reason Unschedulable, as the scheduler leaves a pod no node
fits), `terminate_after`
(s a deleted pod takes to stop, default 0), `stuck_terminating` (never finishes deleting).
Scripts come from the pod annotation `localcluster.dev/script` (JSON) or from `set_script`,
matched by fnmatch on "namespace/name"; otherwise the runner's default script applies.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
from collections import Counter

import orjson

from ..api import Api, now_rfc3339
from ..errors import ApiError
from ..storage.store import ADDED, DELETED, Event, obj_key
from .nodes import NODE, register
from .scheduling import Schedulers

SCRIPT_ANNOTATION = "localcluster.dev/script"
KUBELET = "kubelet"  # the field manager of the status a pod runner writes, as a kubelet's
PODS = ("", "pods")


class NoneRunner:
    name = "none"

    def __init__(self, api: Api) -> None:
        self.api = api
        self.api_address: tuple[str, int] | None = None  # where pods reach the API server, once it listens

    def on_event(self, ev: Event) -> None:
        pass

    def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass


class ScriptedRunner(NoneRunner):
    name = "scripted"

    def __init__(self, api: Api, default_script: dict | list | None = None) -> None:
        super().__init__(api)
        self.default_script = default_script if default_script is not None else {}
        self.scripts: list[tuple[str, dict | list]] = []
        self.attempts: Counter[tuple[str, str]] = Counter()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._terminating: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.schedulers = Schedulers(api.store)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        register(self.api)  # the kubelet's node, which every pod is bound to

    async def stop(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def set_script(self, pattern: str, script: dict | list) -> None:
        """Scripts for pods whose "namespace/name" matches `pattern`; later calls win."""
        self.scripts.insert(0, (pattern, script))

    def _script_for(self, pod: dict) -> dict:
        meta = pod["metadata"]
        raw = (meta.get("annotations") or {}).get(SCRIPT_ANNOTATION)
        script = orjson.loads(raw) if raw else None
        if script is None:
            full = f"{meta.get('namespace', '')}/{meta['name']}"
            script = next((s for p, s in self.scripts if fnmatch.fnmatchcase(full, p)), self.default_script)
        if isinstance(script, list):
            attempt = self.attempts[obj_key(pod)] - 1
            return script[min(attempt, len(script) - 1)] if script else {}
        return script

    # --- events -----------------------------------------------------------------------------

    def on_event(self, ev: Event) -> None:
        if self._loop is None:
            return
        for pod in self.schedulers.on_event(ev):  # unbound pods a scheduler binds now
            self._admit(pod)
        if ev.key != PODS:
            return
        uid = ev.obj["metadata"]["uid"]
        if ev.type == DELETED:
            self._cancel(uid)
            self._terminating.discard(uid)
            return
        if ev.obj["metadata"].get("deletionTimestamp"):
            if uid not in self._terminating:
                self._terminating.add(uid)
                self._cancel(uid)
                self._loop.call_soon(self._begin_termination, obj_key(ev.obj), uid)
            return
        # Pods created bound to this node run too (the scheduler never saw them); those bound to another stay
        # Pending, as no kubelet claims them.
        if ev.type == ADDED and bound_here(ev.obj):
            self._admit(ev.obj)

    def _started_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("the pod runner is not started")
        return self._loop

    def _admit(self, pod: dict) -> None:
        self.attempts[obj_key(pod)] += 1
        self._started_loop().call_soon(self._schedule, obj_key(pod), pod["metadata"]["uid"])

    def _cancel(self, uid: str) -> None:
        handle = self._timers.pop(uid, None)
        if handle is not None:
            handle.cancel()

    def _later(self, uid: str, delay: float, fn, *args) -> None:
        self._cancel(uid)
        self._timers[uid] = self._started_loop().call_later(max(delay, 0.0), fn, *args)

    def _current(self, okey: tuple[str, str], uid: str) -> dict | None:
        pod = self.api.store.get(PODS, okey)
        return pod if pod is not None and pod["metadata"]["uid"] == uid else None

    def _write(self, pod: dict, spec: dict | None = None, status: dict | None = None) -> None:
        rt = self.api.registry.builtin("", "v1", "pods")
        new = dict(pod)
        if spec is not None:
            new["spec"] = {**pod["spec"], **spec}
        if status is not None:
            new["status"] = status
        self.api.system_write(rt, new, KUBELET, "status")

    # --- the pod lifecycle -----------------------------------------------------------------

    def _schedule(self, okey: tuple[str, str], uid: str) -> None:
        pod = self._current(okey, uid)
        if pod is None:
            return
        script = self._script_for(pod)
        now = now_rfc3339()
        if script.get("unschedulable"):
            message = script["unschedulable"] if isinstance(script["unschedulable"], str) else UNSCHEDULABLE
            self._write(pod, status={**pod.get("status", {}), "phase": "Pending", "conditions": [
                {**_condition("PodScheduled", "False", now), "reason": "Unschedulable", "message": message}]})
            return
        status = {**pod.get("status", {}), "phase": "Pending", "hostIP": "127.0.0.1",
                  "conditions": [_condition("PodScheduled", "True", now)]}
        status["containerStatuses"] = [_container(c, {"waiting": _waiting(c, script)})
                                       for c in pod["spec"]["containers"]]
        self._write(pod, spec={"nodeName": NODE}, status=status)
        if not script.get("fail_to_start"):
            self._later(uid, script.get("start_after", 0.01), self._run, okey, uid, script)

    def _run(self, okey: tuple[str, str], uid: str, script: dict) -> None:
        pod = self._current(okey, uid)
        if pod is None:
            return
        now = now_rfc3339()
        status = dict(pod["status"])
        status.update(phase="Running", startTime=now, podIP="127.0.0.1", podIPs=[{"ip": "127.0.0.1"}])
        status["conditions"] = [_condition(t, "True", now) for t in
                                ("PodScheduled", "Initialized", "ContainersReady", "Ready")]
        if pod["spec"].get("initContainers"):
            status["initContainerStatuses"] = [
                _container(c, _terminated(0, now, now), ready=True) for c in pod["spec"]["initContainers"]]
        status["containerStatuses"] = [_container(c, {"running": {"startedAt": now}}, ready=True)
                                       for c in pod["spec"]["containers"]]
        self._write(pod, status=status)
        if script.get("run_for") is not None:
            self._later(uid, script["run_for"], self._exit, okey, uid, int(script.get("exit_code", 0)), now,
                        script.get("exit_reason"))

    def _exit(self, okey: tuple[str, str], uid: str, code: int, started: str, reason: str | None = None) -> None:
        pod = self._current(okey, uid)
        if pod is None:
            return
        self._write(pod, status=_finished(pod, code, started, reason))

    def _begin_termination(self, okey: tuple[str, str], uid: str) -> None:
        pod = self._current(okey, uid)
        if pod is None:
            return
        script = self._script_for(pod)
        if script.get("stuck_terminating"):
            return  # a lost node: the deletion never completes unless forced
        self._later(uid, script.get("terminate_after", 0.0), self._finish_termination, okey, uid)

    def _finish_termination(self, okey: tuple[str, str], uid: str) -> None:
        pod = self._current(okey, uid)
        if pod is None:
            return
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            started = ((pod.get("status") or {}).get("startTime")) or now_rfc3339()
            self._write(pod, status=_finished(pod, 143, started))
            pod = self._current(okey, uid)
        if pod is not None:  # None: it went meanwhile
            finish_deletion(self.api, pod)


def bound_here(pod: dict) -> bool:
    """Whether the pod was created bound to localnode: its kubelet runs it without a scheduler. Unbound pods
    run once a scheduler binds them (scheduling.py: the default scheduler, T9k Scheduler's gangs)."""
    return pod["spec"].get("nodeName") == NODE


def finish_deletion(api: Api, pod: dict) -> None:
    """As a kubelet ends a graceful deletion once the pod's containers have stopped: delete again with no grace
    left (MODIFIED, then DELETED), uid-checked; a pod with finalizers stays (grace 0) until they are removed."""
    rt = api.registry.builtin("", "v1", "pods")
    meta = pod["metadata"]
    with contextlib.suppress(ApiError):  # gone or replaced meanwhile
        api.delete(rt, meta.get("namespace"), meta["name"], {"gracePeriodSeconds": 0,
                                                             "preconditions": {"uid": meta["uid"]}})


# The default scheduler's message for a pod no node fits (here: one node, without the GPUs it asks for).
UNSCHEDULABLE = ("0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: "
                 "1 No preemption victims found for incoming pod.")


def _waiting(container: dict, script: dict) -> dict:
    """The waiting state of a container that has not started: ContainerCreating, or the script's `fail_to_start`
    with the kubelet's message (`fail_message`, else the one a kubelet with containerd gives for an image that
    cannot be pulled)."""
    reason = script.get("fail_to_start")
    if not reason:
        return {"reason": "ContainerCreating"}
    image = container.get("image", "")
    ref = image if "/" in image else f"docker.io/library/{image}"
    defaults = {
        "ErrImagePull": f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": failed to '
                        f'resolve reference "{ref}": {ref}: not found',
        "ImagePullBackOff": f'Back-off pulling image "{image}"',
    }
    message = script.get("fail_message") or defaults.get(reason)
    return {"reason": reason, **({"message": message} if message else {})}


def _condition(kind: str, status: str, now: str) -> dict:
    return {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": now}


def _container(container: dict, state: dict, ready: bool = False) -> dict:
    return {"name": container["name"], "image": container.get("image", ""), "imageID": "",
            "containerID": "", "ready": ready, "restartCount": 0, "started": "running" in state,
            "state": state}


def _terminated(code: int, started: str, finished: str, reason: str | None = None) -> dict:
    reason = reason or ("Completed" if code == 0 else "Error")
    return {"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": finished}}


def _finished(pod: dict, code: int, started: str, reason: str | None = None) -> dict:
    now = now_rfc3339()
    status = dict(pod.get("status") or {})
    status["phase"] = "Succeeded" if code == 0 else "Failed"
    status["conditions"] = [_condition("PodScheduled", "True", now), _condition("Initialized", "True", now),
                            _condition("ContainersReady", "False", now), _condition("Ready", "False", now)]
    status["containerStatuses"] = [_container(c, _terminated(code, started, now, reason))
                                   for c in pod["spec"]["containers"]]
    return status
