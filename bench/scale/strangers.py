"""The `strangers` scenario: the controller's memory with N unrelated pods in the cluster against none.

Each run is a fresh localcluster: first `--strangers` pods (no label of the controller's, a web server's
usual labels, annotations and container) and `--strangers // 10` Services, all Running; then the controller
starts, syncs, and serves `--stranger-jobs` small GenericJobs to Succeeded; its RSS is read once it is idle.
The pod, Service and PodGroup informers list and watch only the controller's children (a label selector), so
the unrelated objects never reach the process: its RSS should not depend on them (figures in BENCHMARKS.md).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import orjson

from .procs import Cluster, Controller
from .workload import Tracker, genericjob, submit

PODS_PATH = "/api/v1/namespaces/default/pods"
SERVICES_PATH = "/api/v1/namespaces/default/services"


def stranger_pod(i: int) -> dict:
    labels = {"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": f"web-{i % 50}",
              "pod-template-hash": f"{i:010x}"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-{i}", "labels": labels,
                         "annotations": {"example.com/owner": "another-team", "example.com/revision": str(i)}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 8080}],
                                     "env": [{"name": "MODE", "value": "production"}],
                                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}


def stranger_service(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"web-{i}", "labels": {"app.kubernetes.io/name": "web"}},
            "spec": {"selector": {"app.kubernetes.io/instance": f"web-{i}"}, "ports": [{"port": 80}]}}


async def create(cluster: Cluster, path: str, objects: list[dict], concurrency: int = 32) -> None:
    todo = list(reversed(objects))
    headers = {"Content-Type": "application/json"}

    async def worker():
        while todo:
            obj = todo.pop()
            async with cluster.session.post(cluster.url + path, data=orjson.dumps(obj), headers=headers) as r:
                if r.status != 201:
                    raise RuntimeError(f"create {obj['metadata']['name']}: {r.status} {await r.text()}")

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def one_run(args, strangers: int) -> dict:
    directory = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    async with Cluster(directory) as cluster:
        started = time.perf_counter()
        await create(cluster, PODS_PATH, [stranger_pod(i) for i in range(strangers)])
        await create(cluster, SERVICES_PATH, [stranger_service(i) for i in range(strangers // 10)])
        populated = time.perf_counter() - started
        controller = Controller(cluster, "--qps", "0", "--workers", str(args.workers))
        await controller.start()
        try:
            synced = await controller.wait_synced()
            jobs = [genericjob(f"small-{i}", args.replicas, {"start_after": 0.2, "run_for": 0.5})
                    for i in range(args.stranger_jobs)]
            async with Tracker(cluster.session, cluster.url) as tracker:
                await submit(cluster.session, cluster.url, jobs)
                await tracker.until(lambda: sum(p == "Succeeded" for p in tracker.job_phase.values())
                                    >= args.stranger_jobs, args.timeout, "all jobs Succeeded")
            async with asyncio.timeout(60):
                while not await controller.idle():  # noqa: ASYNC110 - another process
                    await asyncio.sleep(0.1)
            await asyncio.sleep(2.0)  # anything late (Events, delayed requeues) settles first
            return {"strangers": strangers, "stranger_services": strangers // 10, "jobs": args.stranger_jobs,
                    "populate_s": round(populated, 1), "synced_s": round(synced, 2), **controller.memory()}
        finally:
            await controller.stop()


async def run_strangers(args) -> dict:
    """A run with none, then a run with --strangers unrelated pods; the RSS of each and the difference."""
    none = await one_run(args, 0)
    many = await one_run(args, args.strangers)
    return {"runs": [none, many], "rss_delta_mib": round(many["rss_mib"] - none["rss_mib"], 1),
            "peak_rss_delta_mib": round(many["peak_rss_mib"] - none["peak_rss_mib"], 1)}


def row(result: dict) -> tuple[str, str]:
    none, many = result["runs"]
    return ("strangers", f"RSS {none['rss_mib']:.0f} MiB with no unrelated pods, {many['rss_mib']:.0f} MiB with "
                         f"{many['strangers']} pods and {many['stranger_services']} Services unrelated "
                         f"(delta {result['rss_delta_mib']} MiB, peak delta {result['peak_rss_delta_mib']} MiB)")
