"""Informer benchmarks against a localcluster in a subprocess (so its CPU is not the informer's).

Run: /work/venv/bin/python bench/bench_informers.py [--pods 10000] [--jobs 1000] [--events 50000]

Reports:
  sync        time from start() to wait_for_sync() for N pods and for N custom objects, against the
              baseline of one unpaginated GET of the same list plus json.loads of its body.
  watch       watch events per second delivered to a handler while the server rewrites pods as fast
              as it can (the server's own write rate is shown too: the slower of the two bounds it).
  memory      cache memory per pod (tracemalloc of what the informer keeps, and RSS growth) against
              the pod's JSON size as served, with and without the compactor.

The server side is this same file run with `--serve`: a LocalCluster plus a line protocol on
stdin so that populating and rewriting objects happens in-process, at memory speed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import aiohttp
import orjson

# Run as a script from anywhere: make the repository root importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kubernetes_asyncio import client

from informers import PODS, InformerFactory, InformerOptions, Resource
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient
from localcluster import LocalCluster

NAMESPACE = "bench"
JOBS = Resource("bench.example.com", "v1", "genericjobs")
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "genericjobs.bench.example.com"},
    "spec": {
        "group": "bench.example.com",
        "scope": "Namespaced",
        "names": {"plural": "genericjobs", "singular": "genericjob", "kind": "GenericJob",
                  "listKind": "GenericJobList"},
        "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
    },
}


# --- the server process ---------------------------------------------------------------------

def job_pod(i: int, owner: dict) -> dict:
    """A worker pod as the GenericJob controller makes them: 8 per job, from one template."""
    job, rank = owner["metadata"]["name"], i % 8
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": f"{job}-worker-{rank}", "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/name": "genericjob", "genericjob.tensorstack.dev/name": job,
                       "genericjob.tensorstack.dev/replica-type": "worker",
                       "genericjob.tensorstack.dev/replica-index": str(rank)},
            "annotations": {"genericjob.tensorstack.dev/spec-hash": "5d8f7c9b6a"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": job,
                                 "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{
                "name": "worker", "image": "registry.example.com/train/pytorch:2.3.0-cuda12.1",
                "command": ["torchrun"], "args": ["--nnodes", "8", "--node-rank", str(rank), "train.py"],
                "env": [{"name": "WORLD_SIZE", "value": "8"}, {"name": "RANK", "value": str(rank)},
                        {"name": "MASTER_ADDR", "value": f"{job}-worker-0"}, {"name": "MASTER_PORT", "value": "23456"}],
                "ports": [{"containerPort": 23456, "name": "dist", "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "4", "memory": "16Gi"},
                              "limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}},
                "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "shm", "mountPath": "/dev/shm"}],
            }],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "training-data"}},
                        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
        },
    }


def running_status(pod: dict, i: int) -> dict:
    started = f"2025-01-01T00:{i // 60 % 60:02}:{i % 60:02}Z"
    return {
        "phase": "Running", "qosClass": "Burstable", "hostIP": "10.0.0.1", "podIP": f"10.1.{i // 250}.{i % 250}",
        "startTime": started,
        "conditions": [{"type": t, "status": "True", "lastTransitionTime": started}
                       for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
        "containerStatuses": [{"name": "worker", "ready": True, "restartCount": 0, "started": True,
                               "image": pod["spec"]["containers"][0]["image"],
                               "imageID": "registry.example.com/train/pytorch@sha256:5f0e3c1d2b",
                               "containerID": f"containerd://{i:064x}",
                               "state": {"running": {"startedAt": started}}}],
    }


class Server:
    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.api = cluster.api
        self.pods = cluster.registry.get("", "v1", "pods")

    def populate_pods(self, count: int) -> dict:
        configmaps = self.cluster.registry.get("", "v1", "configmaps")
        sizes = []
        owner = None
        for i in range(count):
            if i % 8 == 0:
                owner = self.api.create(configmaps, NAMESPACE, {"metadata": {"name": f"job-{i // 8:05}"}})
            pod = self.api.create(self.pods, NAMESPACE, job_pod(i, owner))
            # Status as a kubelet writes it: most of a running pod's unique strings are here.
            pod = self.api.system_write(self.pods, {**pod, "metadata": dict(pod["metadata"]),
                                                    "status": running_status(pod, i)})
            sizes.append(len(orjson.dumps(pod)))
        return {"json_bytes": statistics.fmean(sizes)}

    def populate_jobs(self, count: int) -> dict:
        """GenericJob-shaped custom objects: a pod template per replica type, and a status."""
        self.api.create(self.cluster.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
                        None, CRD)
        rt = self.cluster.registry.get(JOBS.group, JOBS.version, JOBS.plural)
        sizes = []
        for i in range(count):
            template = job_pod(i, {"metadata": {"name": f"job-{i:05}", "uid": ""}})
            template = {"metadata": {"labels": template["metadata"]["labels"]}, "spec": template["spec"]}
            obj = self.api.create(rt, NAMESPACE, {
                "apiVersion": "bench.example.com/v1", "kind": "GenericJob",
                "metadata": {"name": f"job-{i:05}", "labels": {"team": f"team-{i % 7}"}},
                "spec": {"replicaSpecs": [{"type": "worker", "replicas": 8, "template": template,
                                           "restartPolicy": {"policy": "OnFailure", "limit": 3}}],
                         "successPolicy": "worker", "cleanUpPolicy": "Unfinished"}})
            obj = self.api.system_write(rt, {**obj, "metadata": dict(obj["metadata"]), "status": {
                "phase": "Running", "observedGeneration": 1,
                "conditions": [{"type": "Running", "status": "True", "reason": "AllReplicasRunning",
                                "lastTransitionTime": f"2025-01-01T00:{i // 60 % 60:02}:{i % 60:02}Z"}],
                "tasks": [{"type": "worker", "restartCount": 0, "active": 8}]}})
            sizes.append(len(orjson.dumps(obj)))
        return {"json_bytes": statistics.fmean(sizes)}

    async def churn(self, count: int) -> dict:
        """Rewrite pods round-robin as fast as possible, yielding now and then so watches flush."""
        pods = self.cluster.store.objects(self.pods.storage_key, NAMESPACE)
        start = time.perf_counter()
        for i in range(count):
            old = pods[i % len(pods)]
            current = self.cluster.store.get(self.pods.storage_key, (NAMESPACE, old["metadata"]["name"]))
            meta = {**current["metadata"], "annotations": {**current["metadata"]["annotations"], "bench/tick": str(i)}}
            self.api.system_write(self.pods, {**current, "metadata": meta})
            if i % 100 == 99:
                await asyncio.sleep(0)
        return {"writes_per_s": count / (time.perf_counter() - start)}


async def serve() -> None:
    # Plain HTTP (benchmarks only): the figures are the informers' own, not TLS's. The token is still needed.
    cluster = LocalCluster(bookmark_interval=60.0, history_size=200_000, watch_buffer=1_000_000, tls=False,
                           close_slow_watchers=False)
    await cluster.start()
    cluster.api.ensure_namespace(NAMESPACE)
    server = Server(cluster)
    print(json.dumps({"url": cluster.url, "token": cluster.admin_token}), flush=True)  # over our private pipe
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        command, arg = line.decode().split()
        if command == "pods":
            reply = server.populate_pods(int(arg))
        elif command == "jobs":
            reply = server.populate_jobs(int(arg))
        elif command == "churn":
            reply = await server.churn(int(arg))
        else:
            reply = {"error": f"unknown command {command}"}
        print(json.dumps(reply), flush=True)
    await cluster.stop()


# --- the client process ---------------------------------------------------------------------

class Remote:
    """The server subprocess and its line protocol."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        first = self._reply()
        self.url, self.token = first["url"], first["token"]

    def _reply(self) -> dict:
        return json.loads(self.proc.stdout.readline())

    async def call(self, command: str, arg: int) -> dict:
        self.proc.stdin.write(f"{command} {arg}\n")
        self.proc.stdin.flush()
        return await asyncio.to_thread(self._reply)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


# The server subprocess's admin token (it prints it on its stdout, a pipe only we read): set by main.
TOKEN = ""


def headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


async def api_client(url: str) -> RestClient:
    return RestClient(settings_from_configuration(client.Configuration(host=url,
                                                                       api_key={"BearerToken": f"Bearer {TOKEN}"})))


async def baseline(url: str, resource: Resource) -> tuple[float, float]:
    """Seconds for localcluster to serve the whole list in one response, and for json.loads to parse it."""
    async with aiohttp.ClientSession(headers=headers()) as session:
        start = time.perf_counter()
        async with session.get(url + resource.path(NAMESPACE)) as response:
            body = await response.read()
        served = time.perf_counter() - start
    start = time.perf_counter()
    parsed = json.loads(body)
    parse = time.perf_counter() - start
    del parsed
    return served, parse


async def sync_once(url: str, resource: Resource, options: InformerOptions) -> tuple[float, int]:
    api = await api_client(url)
    factory = InformerFactory(api, options=options)
    informer = factory.informer(resource, namespace=NAMESPACE)
    added = 0

    def on_add(obj: dict) -> None:  # what a controller's handler does: compute a key, enqueue it
        nonlocal added
        added += 1

    informer.add_handler(on_add=on_add)
    start = time.perf_counter()
    factory.start()
    await factory.wait_for_sync(timeout=120)
    elapsed = time.perf_counter() - start
    await factory.stop()
    await api.close()
    return elapsed, added


async def bench_sync(url: str, resource: Resource, count: int, runs: int, options: InformerOptions) -> dict:
    baselines = [await baseline(url, resource) for _ in range(runs)]
    syncs = []
    for _ in range(runs):
        elapsed, added = await sync_once(url, resource, options)
        assert added == count, (added, count)
        syncs.append(elapsed)
        gc.collect()
    served = statistics.median(b[0] for b in baselines)
    parsed = statistics.median(b[1] for b in baselines)
    return {"served": served, "parsed": parsed, "sync": statistics.median(syncs)}


async def bench_watch(url: str, remote: Remote, events: int) -> dict:
    api = await api_client(url)
    factory = InformerFactory(api)
    informer = factory.informer(PODS, namespace=NAMESPACE)
    seen = 0
    first = last = 0.0
    done = asyncio.Event()

    def on_update(old: dict, new: dict) -> None:
        nonlocal seen, first, last
        seen += 1
        last = time.perf_counter()
        if seen == 1:
            first = last
        if seen + registration.coalesced >= events:  # coalesced: merged into later ones, never delivered
            done.set()

    registration = informer.add_handler(on_update=on_update)
    factory.start()
    await factory.wait_for_sync(timeout=120)
    start = time.perf_counter()
    server = await remote.call("churn", events)
    await asyncio.wait_for(done.wait(), timeout=300)
    total = time.perf_counter() - start
    coalesced = registration.coalesced
    await factory.stop()
    await api.close()
    return {"delivered_per_s": (seen - 1) / (last - first) if last > first else 0.0,
            "end_to_end_per_s": events / total, "server_writes_per_s": server["writes_per_s"],
            "coalesced": coalesced}


async def bench_memory(url: str, count: int, compact: bool) -> dict:
    api = await api_client(url)
    factory = InformerFactory(api, options=InformerOptions(compact=compact))
    informer = factory.informer(PODS, namespace=NAMESPACE)
    gc.collect()
    rss_before = rss()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    factory.start()
    await factory.wait_for_sync(timeout=300)
    await factory.stop()  # what stays is the cache: no watch buffers, no handler queues
    gc.collect()
    traced = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    rss_after = rss()
    assert len(informer.store) == count
    await api.close()
    return {"traced": traced / count, "rss": (rss_after - rss_before) / count, "keep": informer}


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


async def main(args: argparse.Namespace) -> None:
    global TOKEN
    remote = Remote()
    TOKEN = remote.token
    try:
        pods = await remote.call("pods", args.pods)
        jobs = await remote.call("jobs", args.jobs)
        url = remote.url
        print(f"localcluster in a subprocess at {url}; {args.pods} pods of {pods['json_bytes']:.0f} JSON bytes, "
              f"{args.jobs} GenericJob custom objects of {jobs['json_bytes']:.0f}; median of {args.runs} runs\n")

        print(f"{'initial sync':<34}{'serve':>8}{'json.loads':>12}{'baseline':>10}{'informer':>10}{'ratio':>8}")
        plain = InformerOptions(compact=False)
        for label, resource, count, options in (
                (f"{args.pods} pods", PODS, args.pods, InformerOptions()),
                (f"{args.pods} pods, compact=False", PODS, args.pods, plain),
                (f"{args.jobs} custom objects", JOBS, args.jobs, InformerOptions()),
                (f"{args.jobs} custom objects, compact=False", JOBS, args.jobs, plain)):
            r = await bench_sync(url, resource, count, args.runs, options)
            base = r["served"] + r["parsed"]
            print(f"{label:<34}{r['served']:>7.3f}s{r['parsed']:>11.3f}s{base:>9.3f}s{r['sync']:>9.3f}s"
                  f"{r['sync'] / base:>7.2f}x")

        w = await bench_watch(url, remote, args.events)
        print(f"\nwatch: {args.events} pod updates; delivered to the handler at {w['delivered_per_s']:,.0f}/s "
              f"(first to last), {w['end_to_end_per_s']:,.0f}/s end to end; the server wrote "
              f"{w['server_writes_per_s']:,.0f}/s; coalesced {w['coalesced']}")

        print(f"\n{'cache memory per pod':<34}{'traced':>8}{'RSS':>10}{'JSON':>8}{'traced/JSON':>13}{'RSS/JSON':>10}")
        keep = []
        for compact in (True, False):
            m = await bench_memory(url, args.pods, compact)
            keep.append(m.pop("keep"))  # alive until both are measured, so RSS deltas do not reuse it
            label = "compacted" if compact else "plain orjson dicts"
            size = pods["json_bytes"]
            print(f"{label:<34}{m['traced']:>7,.0f}B{m['rss']:>9,.0f}B{size:>7,.0f}B"
                  f"{m['traced'] / size:>12.2f}x{m['rss'] / size:>9.2f}x")
    finally:
        remote.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=1_000, help="custom objects")
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    asyncio.run(serve() if args.serve else main(args))
