"""Reconciles per second of an 8-replica GenericJob whose cache is up to date (no writes needed).

The controller runs in-process against an in-process LocalCluster (scripted pod runner) until the
job is Running and every informer has caught up; then `Reconciler.reconcile(key)` is called in a
loop. That is the steady-state cost of one reconcile: read the caches, parse (cached per
generation), plan, compare the status, decide that nothing is to be written. The benchmark
checks that the loop made no request to the API server. Target: at least 2,000 per second.

    /work/venv/bin/python bench/bench_reconcile.py [--replicas 8] [--seconds 3] [--plain] [--profile]

By default the job has a Service per replica and T9k Scheduler (the most work per reconcile);
`--plain` leaves both out. `--profile` runs the loop under pyinstrument and prints the profile.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from pathlib import Path

# Run as a script from anywhere: make the repository root importable.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import structlog  # noqa: E402
from kubernetes_asyncio import client, config  # noqa: E402

from controller.jobs.execution.controller import JobController  # noqa: E402
from controller.kinds.genericjob.kind import GENERICJOB  # noqa: E402
from controller.kinds.genericjob.models import GROUP, PLURAL, VERSION  # noqa: E402
from controller.runtime.controller import ControllerConfig  # noqa: E402
from kubeclient.from_configuration import settings_from_configuration  # noqa: E402
from kubeclient.rest import RestClient  # noqa: E402
from localcluster import LocalCluster  # noqa: E402

TARGET = 2000.0
KEY = "default/bench"


def job(replicas: int, plain: bool) -> dict:
    worker = {"name": "main", "image": "busybox:1.36", "command": ["python", "train.py", "--rank=$(rank)"],
              "env": [{"name": "PEERS", "value": "$(replicas[worker])"}],
              "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    spec: dict = {"replicaSpecs": [
        {"type": "master", "replicas": 1, "template": {"spec": {"containers": [worker]}}},
        {"type": "worker", "replicas": replicas - 1, "restartPolicy": {"policy": "OnFailure", "limit": 3},
         "template": {"spec": {"containers": [worker]}}},
    ], "successRules": [{"master": [0]}], "failureRules": [{"master": [0]}, {"worker": [0]}]}
    if not plain:
        spec["service"] = {"ports": [{"name": "http", "port": 2222}]}
        spec["scheduler"] = {"t9kScheduler": {"queue": "default", "priority": 10}}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "GenericJob", "metadata": {"name": "bench"}, "spec": spec}


async def steady(controller: JobController, replicas: int, plain: bool) -> None:
    """Until the job runs, its children are all cached, and the controller has nothing left to do."""
    async with asyncio.timeout(30):
        while True:
            cached = controller.jobs.lister.get(KEY)
            status = (cached or {}).get("status") or {}
            children = (len(controller.pods.lister.controlled_by(cached["metadata"]["uid"])) == replicas and
                        (plain or len(controller.services.lister.controlled_by(cached["metadata"]["uid"])) == replicas)
                        ) if cached else False
            if status.get("phase") == "Running" and status["aggregate"]["running"] == replicas and children \
                    and len(controller.queue) == 0 and not controller.queue._processing:
                return
            await asyncio.sleep(0.05)


async def measure(controller: JobController, seconds: float) -> tuple[int, float]:
    reconcile = controller.reconciler.reconcile
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(100):
            result = await reconcile(KEY)
            assert not result.requeue, result
        count += 100
        now = time.perf_counter()
        if now >= deadline:
            return count, now - start


async def main(args: argparse.Namespace) -> float:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    # Plain HTTP (benchmarks only; the token is still sent): the figures are the reconcile's, not TLS's.
    async with LocalCluster(runner="scripted", tls=False) as cluster:
        cluster.apply_crds(ROOT / "manifests" / "crds")
        configuration = client.Configuration()
        await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
        async with client.ApiClient(configuration) as api, \
                RestClient(settings_from_configuration(configuration)) as rest:
            controller = JobController(GENERICJOB, rest, ControllerConfig(workers=2, qps=0))
            await controller.start(sync_timeout=10)
            try:
                await client.CustomObjectsApi(api).create_namespaced_custom_object(
                    GROUP, VERSION, "default", PLURAL, job(args.replicas, args.plain))
                await steady(controller, args.replicas, args.plain)
                before = sum(controller.client.requests.values())
                await measure(controller, 0.3)  # warm-up
                if args.profile:
                    from pyinstrument import Profiler

                    with Profiler(async_mode="disabled") as profiler:
                        count, elapsed = await measure(controller, args.seconds)
                    profiler.print(show_all=False)
                else:
                    count, elapsed = await measure(controller, args.seconds)
                writes = sum(controller.client.requests.values()) - before
            finally:
                await controller.stop()
    rate = count / elapsed
    kind = "plain" if args.plain else "with Services and T9k Scheduler"
    verdict = "ok" if rate >= TARGET else f"BELOW the target of {TARGET:,.0f}"
    print(f"reconcile, {args.replicas} replicas ({kind}), cache up to date: {rate:,.0f}/s "
          f"({count} in {elapsed:.2f}s, {writes} API requests) {verdict}")
    if writes:
        raise SystemExit(f"a steady-state reconcile made {writes} API requests; expected none")
    return rate


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=8, help="replicas of the job (default 8: 1 master, 7 workers)")
    parser.add_argument("--seconds", type=float, default=3.0, help="how long to measure (default 3)")
    parser.add_argument("--plain", action="store_true", help="no Services and no T9k Scheduler")
    parser.add_argument("--profile", action="store_true", help="profile the loop with pyinstrument")
    asyncio.run(main(parser.parse_args()))
