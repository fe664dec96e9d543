"""The floor: a bare client making only the writes a burst strictly needs, nothing else.

For each GenericJob it sees created: create each replica's pod and Service, then one status write
per job phase change (Pending once the pods exist, Running once all run, Succeeded or Failed once
all have finished). Same concurrency (`--workers` jobs at a time, writes sequential within one,
as the controller's reconciles) and the same client-side limit (the controller's own TokenBucket,
kubeclient/ratelimit.py).
It keeps the state it needs from two watches (jobs, pods) and never reads anything else.

    python -m bench.scale.floor --kubeconfig FILE [--workers 4] [--qps 20] [--burst 30]
"""

from __future__ import annotations

import argparse
import asyncio
import copy

import aiohttp
import orjson

from kubeclient.ratelimit import TokenBucket
from localcluster import Credentials

from .workload import JOBS_PATH

TERMINAL = ("Succeeded", "Failed")


class Floor:
    def __init__(self, session: aiohttp.ClientSession, url: str, workers: int, qps: float, burst: int) -> None:
        self.session = session
        self.url = url
        self.workers = workers
        self.limiter = TokenBucket(qps, burst)
        self.jobs: dict[str, dict] = {}
        self.made: set[str] = set()
        self.written: dict[str, str] = {}
        self.pods: dict[str, dict[str, str]] = {}  # job -> pod name -> phase
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.queued: set[str] = set()
        self.processing: set[str] = set()
        self.dirty: set[str] = set()
        self.writes = 0

    def enqueue(self, name: str) -> None:
        """A job is worked on by one worker at a time (as in a work queue): changes while it is
        being worked on queue it again afterwards."""
        if name in self.processing:
            self.dirty.add(name)
        elif name not in self.queued:
            self.queued.add(name)
            self.queue.put_nowait(name)

    async def run(self) -> None:
        watches = [asyncio.create_task(self._watch(JOBS_PATH, self._job)),
                   asyncio.create_task(self._watch("/api/v1/namespaces/default/pods", self._pod))]
        await asyncio.gather(*(self._worker() for _ in range(self.workers)), *watches)

    async def _watch(self, path: str, handle) -> None:
        params = {"watch": "1", "resourceVersion": "0", "timeoutSeconds": "36000"}
        async with self.session.get(self.url + path, params=params) as r:
            buffer = b""
            async for chunk in r.content.iter_any():
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line:
                        ev = orjson.loads(line)
                        if ev["type"] in ("ADDED", "MODIFIED"):
                            handle(ev["object"])

    def _job(self, job: dict) -> None:
        name = job["metadata"]["name"]
        if name not in self.jobs:
            self.jobs[name] = job
            self.enqueue(name)

    def _pod(self, pod: dict) -> None:
        job = next((r["name"] for r in pod["metadata"].get("ownerReferences") or () if r["kind"] == "GenericJob"),
                   None)
        if job is None:
            return
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        pods = self.pods.setdefault(job, {})
        if pods.get(pod["metadata"]["name"]) != phase:
            pods[pod["metadata"]["name"]] = phase
            self.enqueue(job)

    async def _worker(self) -> None:
        while True:
            name = await self.queue.get()
            self.queued.discard(name)
            self.processing.add(name)
            try:
                await self._sync(name)
            finally:
                self.processing.discard(name)
            if name in self.dirty:
                self.dirty.discard(name)
                self.enqueue(name)

    def _expected(self, job: dict) -> list[tuple[str, int, dict]]:
        return [(spec["type"], rank, spec["template"]) for spec in job["spec"]["replicaSpecs"]
                for rank in range(spec["replicas"])]

    async def _sync(self, name: str) -> None:
        job = self.jobs[name]
        replicas = self._expected(job)
        if name not in self.made:
            for kind, rank, template in replicas:
                await self._create("pods", _pod(job, kind, rank, template))
                if job["spec"].get("service"):
                    await self._create("services", _service(job, kind, rank))
            self.made.add(name)
        phases = list(self.pods.get(name, {}).values())
        if len(phases) < len(replicas):
            phase = "Pending"
        elif any(p == "Failed" for p in phases):
            phase = "Failed"
        elif all(p == "Succeeded" for p in phases):
            phase = "Succeeded"
        elif all(p in ("Running", "Succeeded") for p in phases):
            phase = "Running"
        else:
            phase = "Pending"
        if self.written.get(name) != phase and self.written.get(name) not in TERMINAL:
            await self._status(name, phase)
            self.written[name] = phase

    async def _create(self, resource: str, body: dict) -> None:
        await self.limiter.take()
        self.writes += 1
        async with self.session.post(f"{self.url}/api/v1/namespaces/default/{resource}", data=orjson.dumps(body),
                                     headers={"Content-Type": "application/json"}) as r:
            if r.status not in (201, 409):
                raise RuntimeError(f"create {resource}: {r.status} {await r.text()}")

    async def _status(self, name: str, phase: str) -> None:
        await self.limiter.take()
        self.writes += 1
        async with self.session.patch(f"{self.url}{JOBS_PATH}/{name}/status",
                                      data=orjson.dumps({"status": {"phase": phase}}),
                                      headers={"Content-Type": "application/merge-patch+json"}) as r:
            if r.status != 200:
                raise RuntimeError(f"status {name}: {r.status} {await r.text()}")


def _owner(job: dict) -> list[dict]:
    return [{"apiVersion": job["apiVersion"], "kind": "GenericJob", "name": job["metadata"]["name"],
             "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]


def _pod(job: dict, kind: str, rank: int, template: dict) -> dict:
    meta = copy.deepcopy(template.get("metadata") or {})
    meta.update(name=f"{job['metadata']['name']}-{kind}-{rank}", ownerReferences=_owner(job))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {**template["spec"], "restartPolicy": "Never"}}


def _service(job: dict, kind: str, rank: int) -> dict:
    name = f"{job['metadata']['name']}-{kind}-{rank}"
    ports = [{"name": p.get("name"), "port": p["port"]} for p in job["spec"]["service"]["ports"]]
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "ownerReferences": _owner(job)},
            "spec": {"clusterIP": "None", "selector": {"bench": name}, "ports": ports}}


async def main_async(args: argparse.Namespace) -> None:
    credentials = Credentials.from_kubeconfig(args.kubeconfig)
    async with credentials.session(timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as session:
        await Floor(session, credentials.url, args.workers, args.qps, args.burst).run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", required=True, help="the kubeconfig `localcluster serve` wrote")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--qps", type=float, default=20.0)
    parser.add_argument("--burst", type=int, default=30)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
