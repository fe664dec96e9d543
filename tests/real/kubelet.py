"""A kubelet (and scheduler) for tests on the real API server: it moves pods through their status as
localcluster's scripted runner does, driven by the same scripts, so one scenario runs on both servers.

The scripts are localcluster's (localcluster/kubelet/runner.py: the pod annotation `localcluster.dev/script`,
or `set_script` patterns; lists by attempt, a later pod of the same name being the next attempt), and so are the
scheduling rules (localcluster/kubelet/scheduling.py: the default scheduler binds at once, T9k Scheduler's
gangs once minMember pods are live, any other scheduler never). Here a bound pod is bound through the
`binding` subresource, and each step of its life is a status update as a kubelet's: Pending with
ContainerCreating (or the script's fail_to_start), Running and Ready after `start_after`, Succeeded or Failed
with the exit code after `run_for`. A deleted pod (the API server keeps a bound pod until its kubelet confirms)
stops after `terminate_after` (exit code 143 if it was still running) and is deleted with no grace left, uid
checked; `stuck_terminating` never is. Pods are never restarted in place: the controller's pods are
restartPolicy Never, and a restart is a new pod of the same name, the script's next attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
from collections import Counter
from collections.abc import Callable

import orjson

from localcluster.testing import pod_scripts

from .http import Http

WATCHED = {pod_scripts.PODS: "/api/v1/pods", pod_scripts.PODGROUPS: "/apis/scheduler.tensorstack.dev/v1beta1/podgroups",
           pod_scripts.CRDS: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"}
# of the CRDs only the PodGroup's (whether gangs are scheduled at all): all of them are megabytes to list
SELECTORS = {pod_scripts.CRDS: f"metadata.name={pod_scripts.PODGROUP_CRD}"}


class Mirror:
    """What the kubelet has seen of the watched resources, as localcluster's store answers (get, objects), and
    the subscribers told every event (a test's history of pods)."""

    def __init__(self) -> None:
        self.objects_by_key: dict[tuple[str, str], dict[tuple[str, str], dict]] = {k: {} for k in WATCHED}
        self.subscribers: list[Callable[[pod_scripts.Event], None]] = []

    def get(self, key, okey):
        return self.objects_by_key.get(key, {}).get(okey)

    def objects(self, key, namespace: str | None = None):
        return [o for (ns, _), o in self.objects_by_key.get(key, {}).items() if namespace in (None, ns)]

    def subscribe(self, fn: Callable[[pod_scripts.Event], None]) -> None:
        self.subscribers.append(fn)


def _okey(obj: dict) -> tuple[str, str]:
    return obj["metadata"].get("namespace") or "", obj["metadata"]["name"]


class TestKubelet:
    """Start it in the test's event loop (start/stop); `set_script` as localcluster's runner's."""

    __test__ = False  # not a test class

    def __init__(self, http: Http, default_script: dict | list | None = None) -> None:
        self.http = http
        self.default_script = default_script if default_script is not None else {}
        self.scripts: list[tuple[str, dict | list]] = []
        self.attempts: Counter[tuple[str, str]] = Counter()
        self.store = Mirror()
        self.schedulers = pod_scripts.Schedulers(self.store)
        self._lives: dict[str, asyncio.Task] = {}  # by pod uid: its life, or its termination
        self._terminating: set[str] = set()
        self._tasks: list[asyncio.Task] = []
        self.errors: list[str] = []  # status writes the server refused (a test may assert there are none)

    def set_script(self, pattern: str, script: dict | list) -> None:
        self.scripts.insert(0, (pattern, script))

    async def start(self) -> None:
        node = pod_scripts.node_object()
        status, _ = await self.http.request("POST", "/api/v1/nodes", node)
        if status == 201:
            await self.http.request("PUT", f"/api/v1/nodes/{pod_scripts.NODE}/status",
                                    {**(await self.http.request("GET", f"/api/v1/nodes/{pod_scripts.NODE}"))[1],
                                     "status": node["status"]})
        synced = {key: asyncio.Event() for key in WATCHED}
        for key, path in WATCHED.items():
            self._tasks.append(asyncio.create_task(self.http.informer(
                path, lambda kind, obj, key=key: self._on(key, kind, obj), synced[key], SELECTORS.get(key))))
        await asyncio.gather(*(event.wait() for event in synced.values()))

    async def stop(self) -> None:
        for task in [*self._tasks, *self._lives.values()]:
            task.cancel()
        for task in [*self._tasks, *self._lives.values()]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        self._lives.clear()

    def _script_for(self, pod: dict) -> dict:
        meta = pod["metadata"]
        raw = (meta.get("annotations") or {}).get(pod_scripts.SCRIPT_ANNOTATION)
        script = orjson.loads(raw) if raw else None
        if script is None:
            full = f"{meta.get('namespace', '')}/{meta['name']}"
            script = next((s for p, s in self.scripts if fnmatch.fnmatchcase(full, p)), self.default_script)
        if isinstance(script, list):
            attempt = self.attempts[_okey(pod)] - 1
            return script[min(attempt, len(script) - 1)] if script else {}
        return script

    # --- events ---------------------------------------------------------------------------------

    def _on(self, key: tuple[str, str], kind: str, obj: dict) -> None:
        known = self.store.objects_by_key[key]
        old = known.get(_okey(obj))
        if kind == pod_scripts.DELETED:
            known.pop(_okey(obj), None)
        else:
            known[_okey(obj)] = obj
        ev = pod_scripts.Event(0, key, kind, obj, old)
        for fn in self.store.subscribers:
            fn(ev)
        for pod in self.schedulers.on_event(ev):
            self._admit(pod, bind=True)
        if key != pod_scripts.PODS:
            return
        uid = obj["metadata"]["uid"]
        if kind == pod_scripts.DELETED:
            self._cancel(uid)
            self._terminating.discard(uid)
        elif obj["metadata"].get("deletionTimestamp"):
            if uid not in self._terminating:
                self._terminating.add(uid)
                self._cancel(uid)
                self._lives[uid] = asyncio.create_task(self._terminate(_okey(obj), uid))
        elif kind == pod_scripts.ADDED and obj["spec"].get("nodeName") == pod_scripts.NODE and uid not in self._lives:
            self._admit(obj, bind=False)

    def _admit(self, pod: dict, bind: bool) -> None:
        self.attempts[_okey(pod)] += 1
        uid = pod["metadata"]["uid"]
        self._lives[uid] = asyncio.create_task(self._live(_okey(pod), uid, self._script_for(pod), bind))

    def _cancel(self, uid: str) -> None:
        task = self._lives.pop(uid, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    # --- the pod's life, as status updates -------------------------------------------------------

    def _path(self, okey: tuple[str, str]) -> str:
        return f"/api/v1/namespaces/{okey[0]}/pods/{okey[1]}"

    async def _write(self, okey: tuple[str, str], uid: str, make_status: Callable[[dict], dict]) -> dict | None:
        """Update the pod's status to make_status(pod) as the kubelet's field manager, retrying conflicts; the pod
        as written, or None once it is gone or replaced."""
        for _ in range(20):
            status, pod = await self.http.request("GET", self._path(okey))
            if status != 200 or pod is None or pod["metadata"]["uid"] != uid:
                return None
            pod["status"] = make_status(pod)
            status, written = await self.http.request("PUT", self._path(okey) + "/status", pod,
                                                      params={"fieldManager": "kubelet"})
            if status == 200:
                return written
            if status != 409:
                self.errors.append(f"{okey}: status {status}: {(written or {}).get('message')}")
                return None
        return None

    async def _live(self, okey: tuple[str, str], uid: str, script: dict, bind: bool) -> None:
        if script.get("unschedulable"):
            message = script["unschedulable"] if isinstance(script["unschedulable"], str) else pod_scripts.UNSCHEDULABLE
            await self._write(okey, uid, lambda pod: {**pod.get("status", {}), "phase": "Pending", "conditions": [
                {**pod_scripts.condition("PodScheduled", "False", pod_scripts.now_rfc3339()), "reason": "Unschedulable",
                 "message": message}]})
            return
        if bind:
            binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": okey[1], "uid": uid},
                       "target": {"apiVersion": "v1", "kind": "Node", "name": pod_scripts.NODE}}
            status, answer = await self.http.request("POST", self._path(okey) + "/binding", binding)
            if status != 201:
                self.errors.append(f"{okey}: binding {status}: {(answer or {}).get('message')}")
                return

        def pending(pod: dict) -> dict:
            return {**pod.get("status", {}), "phase": "Pending", "hostIP": "127.0.0.1",
                    "hostIPs": [{"ip": "127.0.0.1"}],
                    "conditions": [pod_scripts.condition("PodScheduled", "True", pod_scripts.now_rfc3339())],
                    "containerStatuses": [pod_scripts.container(c, {"waiting": pod_scripts.waiting(c, script)})
                                          for c in pod["spec"]["containers"]]}

        if await self._write(okey, uid, pending) is None or script.get("fail_to_start"):
            return
        await asyncio.sleep(script.get("start_after", 0.01))
        started = pod_scripts.now_rfc3339()

        def running(pod: dict) -> dict:
            status = {**pod["status"], "phase": "Running", "startTime": started, "podIP": "127.0.0.1",
                      "podIPs": [{"ip": "127.0.0.1"}],
                      "conditions": [pod_scripts.condition(t, "True", started) for t in
                                     ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
                      "containerStatuses": [pod_scripts.container(c, {"running": {"startedAt": started}}, ready=True)
                                            for c in pod["spec"]["containers"]]}
            if pod["spec"].get("initContainers"):
                done = pod_scripts.terminated(0, started, started)
                status["initContainerStatuses"] = [pod_scripts.container(c, done, ready=True)
                                                   for c in pod["spec"]["initContainers"]]
            return status

        if await self._write(okey, uid, running) is None or script.get("run_for") is None:
            return
        await asyncio.sleep(script["run_for"])
        code = int(script.get("exit_code", 0))
        await self._write(okey, uid, lambda pod: pod_scripts.finished(pod, code, started, script.get("exit_reason")))

    async def _terminate(self, okey: tuple[str, str], uid: str) -> None:
        pod = self.store.get(pod_scripts.PODS, okey)
        script = self._script_for(pod) if pod is not None else {}
        if script.get("stuck_terminating"):
            return  # a lost node: the deletion never completes unless forced
        await asyncio.sleep(script.get("terminate_after", 0.0))

        def stopped(pod: dict) -> dict:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return pod["status"]
            started = (pod.get("status") or {}).get("startTime") or pod_scripts.now_rfc3339()
            return pod_scripts.finished(pod, 143, started)

        if await self._write(okey, uid, stopped) is None:
            return
        await self.http.request("DELETE", self._path(okey), {"gracePeriodSeconds": 0,
                                                              "preconditions": {"uid": uid}})
