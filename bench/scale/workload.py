"""Jobs to submit, and a watcher that timestamps what happens to pods and jobs (seen from outside)."""

from __future__ import annotations

import asyncio
import contextlib
import time

import aiohttp
import orjson

GROUP, VERSION, PLURAL = "batch.tensorstack.dev", "v1beta1", "genericjobs"
JOBS_PATH = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
TF_PLURAL = "tensorflowtrainingjobs"
TF_JOBS_PATH = f"/apis/{GROUP}/{VERSION}/namespaces/default/{TF_PLURAL}"
PT_PLURAL = "pytorchtrainingjobs"
PT_JOBS_PATH = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PT_PLURAL}"
PATHS = {"GenericJob": JOBS_PATH, "TensorFlowTrainingJob": TF_JOBS_PATH, "PyTorchTrainingJob": PT_JOBS_PATH}
PLURALS = {"GenericJob": PLURAL, "TensorFlowTrainingJob": TF_PLURAL, "PyTorchTrainingJob": PT_PLURAL}
SCRIPT = "localcluster.dev/script"
JOB_LABEL = "bench.genericjob/name"  # on the pod template, so the kopf peer can find its pods


def genericjob(name: str, replicas: int, script, services: bool = True) -> dict:
    """One replica type `worker` of `replicas` pods following `script` (one dict, or a list per rank)."""
    specs = []
    per_rank = isinstance(script, list) and len(script) == replicas and all(isinstance(s, dict) for s in script)
    if per_rank:  # a replica spec per rank would change the job's shape; give each rank its own type instead
        for rank, own in enumerate(script):
            specs.append(_replica_spec(f"w{rank}", 1, own))
    else:
        specs.append(_replica_spec("worker", replicas, script))
    spec: dict = {"replicaSpecs": specs}
    if services:
        spec["service"] = {"ports": [{"name": "http", "port": 8080}]}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "GenericJob", "metadata": {"name": name}, "spec": spec}


def tensorflowjob(name: str, replicas: int, script) -> dict:
    """A TensorFlowTrainingJob of `replicas` workers following `script` (worker 0 is its master; every replica
    has a Service, as the kind always makes one)."""
    spec = _replica_spec("worker", replicas, script)
    spec["template"]["spec"]["containers"][0]["name"] = "tensorflow"
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "TensorFlowTrainingJob", "metadata": {"name": name},
            "spec": {"replicaSpecs": [spec], "runPolicy": {"cleanUpPolicy": "None"}}}


def pytorchjob(name: str, replicas: int, script) -> dict:
    """A PyTorchTrainingJob of `replicas` workers following `script` (worker 0 is its master, global rank 0; every
    replica has a Service, as the kind always makes one)."""
    spec = _replica_spec("worker", replicas, script)
    spec["template"]["spec"]["containers"][0]["name"] = "pytorch"
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PyTorchTrainingJob", "metadata": {"name": name},
            "spec": {"replicaSpecs": [spec], "runPolicy": {"cleanUpPolicy": "None"}}}


def _replica_spec(kind: str, count: int, script) -> dict:
    template = {"metadata": {"annotations": {SCRIPT: orjson.dumps(script).decode()}},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "10"]}]}}
    return {"type": kind, "replicas": count, "template": template}


async def submit(session: aiohttp.ClientSession, url: str, jobs: list[dict], concurrency: int = 32) -> float:
    """Create every job, `concurrency` requests at a time; seconds taken."""
    todo = list(reversed(jobs))
    headers = {"Content-Type": "application/json"}

    async def worker():
        while todo:
            job = todo.pop()
            async with session.post(url + PATHS[job["kind"]], data=orjson.dumps(job), headers=headers) as r:
                if r.status != 201:
                    raise RuntimeError(f"create {job['metadata']['name']}: {r.status} {await r.text()}")

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


def _owner(pod: dict) -> str | None:
    for ref in pod["metadata"].get("ownerReferences") or ():
        if ref.get("kind") in PATHS:
            return ref["name"]
    return None


class Tracker:
    """Watches pods and jobs (of every kind) in `default`; records when each pod first exists, when each job
    reaches a terminal phase, and (for the latency scenario) how long after a pod's phase changed the
    job's status showed it."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url
        self.pods_seen: dict[str, float] = {}
        self.services: int = 0
        self.jobs_done: dict[str, tuple[str, float]] = {}
        self.pod_phase: dict[str, str] = {}
        self.pending: dict[tuple[str, str], tuple[str, float]] = {}  # (job, pod uid) -> (phase, seen at)
        self.latencies: list[tuple[float, float]] = []  # (change seen at, seconds until the job showed it)
        # What each job's status last showed per pod: the job's watch stream can deliver a status that
        # reflects a pod change before the pod's own stream delivers the change.
        self.shown: dict[tuple[str, str], str] = {}  # (job, pod uid) -> phase
        self.job_phase: dict[str, str] = {}
        self.changes: list[float] = []  # when each pod phase change was seen
        self.record_latency = False
        self.stalls: list[tuple[float, float]] = []  # (when, seconds) this process's loop was late by > 0.1 s
        self._tasks: list[asyncio.Task] = []
        self._ready = 0

    async def __aenter__(self) -> Tracker:
        watches = (("/api/v1/namespaces/default/pods", self._pod), (JOBS_PATH, self._job),
                   (TF_JOBS_PATH, self._job), (PT_JOBS_PATH, self._job),
                   ("/api/v1/namespaces/default/services", self._service))
        for path, handle in watches:
            self._tasks.append(asyncio.create_task(self._watch(path, handle)))
        self._tasks.append(asyncio.create_task(self._watch_loop_lag()))
        while self._ready < len(watches):  # noqa: ASYNC110 - the watch streams to open
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(self, *exc) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _watch_loop_lag(self, tick: float = 0.02) -> None:
        """A stall of this process's own loop delays its timestamps; recorded so a figure can be trusted."""
        while True:
            before = time.perf_counter()
            await asyncio.sleep(tick)
            late = time.perf_counter() - before - tick
            if late > 0.1:
                self.stalls.append((before, late))

    async def _watch(self, path: str, handle) -> None:
        async with self.session.get(self.url + path, params={"limit": "1"}) as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        params = {"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "3600"}
        async with self.session.get(self.url + path, params=params) as r:
            self._ready += 1
            buffer = b""
            async for chunk in r.content.iter_any():
                now = time.perf_counter()
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line:
                        ev = orjson.loads(line)
                        if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                            handle(ev["type"], ev["object"], now)

    def _pod(self, kind: str, pod: dict, now: float) -> None:
        meta = pod["metadata"]
        self.pods_seen.setdefault(meta["name"], now)
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if kind == "DELETED" or self.pod_phase.get(meta["uid"]) == phase:
            return
        self.pod_phase[meta["uid"]] = phase
        self.changes.append(now)
        job = _owner(pod)
        if self.record_latency and job is not None:
            if self.shown.get((job, meta["uid"])) == phase:
                # Already reflected: the two streams are not ordered with each other. Waiting for the
                # job's next status write would time that write, not this change.
                self.latencies.append((now, 0.0))
            else:
                self.pending[(job, meta["uid"])] = (phase, now)

    def _service(self, kind: str, svc: dict, now: float) -> None:
        if kind == "ADDED":
            self.services += 1

    def _job(self, kind: str, job: dict, now: float) -> None:
        status = job.get("status") or {}
        name = job["metadata"]["name"]
        self.job_phase[name] = status.get("phase") or ""
        if status.get("phase") in ("Succeeded", "Failed") and name not in self.jobs_done:
            self.jobs_done[name] = (status["phase"], now)
        if not self.record_latency:
            return
        for task in status.get("tasks") or ():
            for replica in task.get("replicas") or ():
                key = (name, replica.get("uid") or "")
                self.shown[key] = replica.get("phase") or ""
                seen = self.pending.get(key)
                if seen is not None and seen[0] == replica.get("phase"):
                    self.latencies.append((seen[1], now - seen[1]))
                    del self.pending[key]

    async def until(self, check, timeout: float, what: str) -> float:
        """Wait until check() holds; the time it first held."""
        async with asyncio.timeout(timeout):
            while not check():  # noqa: ASYNC110 - polling a condition over watch-fed state
                await asyncio.sleep(0.05)
        return time.perf_counter()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
