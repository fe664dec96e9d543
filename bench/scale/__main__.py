"""The scale benchmark suite: every scenario in one command, a table on stdout and a JSON file.

    python -m bench.scale [--jobs 1000] [--replicas 4] [--qps 20] [--burst 30] [--workers 4] [--repeat 3]
                          [--cold-jobs 2000] [--cold-replicas 5] [--idle-jobs 1000] [--idle-seconds 60]
                          [--latency-jobs 200] [--latency-replicas 10]
                          [--latency-rate 100] [--strangers 10000] [--stranger-jobs 20]
                          [--only burst,floor,...] [--json bench-scale.json]

Scenarios (each on a fresh localcluster in its own process, scripted pod runner):
  burst     N jobs x R replicas (a Service each) at once, controller at --qps/--burst, then at --qps 0
            (unlimited bursts run --repeat times, taking turns with the floor and peer; medians reported)
  floor     the same burst served by a bare client (bench/scale/floor.py), same limits; ratio = burst / floor
  cold      a fresh controller on a cluster holding --cold-jobs finished jobs of --cold-replicas pods
            (and Services) each, made by a --qps 0 burst: time to synced and idle, writes made
  idle      K jobs whose pods run forever, nothing changing, for --idle-seconds: requests and CPU (the
            controller elects itself leader, as deployed, so its Lease renewals are counted apart)
  latency   J jobs whose pods change phase at --latency-rate per second: pod change -> job status
  peer      the --qps 0 burst served by bench/kopf_peer.py (kopf): time to all pods, memory
  mix       the --qps 0 burst with the three kinds in turn (GenericJob, TensorFlow-, PyTorchTrainingJob): one process
  strangers the controller's RSS with --strangers unrelated pods in the cluster against none (strangers.py)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import procs
from .procs import Cluster, Controller, Kopf, diff, writes
from .strangers import row as strangers_row
from .strangers import run_strangers
from .workload import PLURALS, Tracker, genericjob, percentile, pytorchjob, submit, tensorflowjob

SCENARIOS = ("burst", "floor", "cold", "idle", "latency", "peer", "mix", "strangers")
BURST_SCRIPT = {"start_after": 0.5, "run_for": 2}


def per_job(counts: dict[tuple[str, str], int], jobs: int) -> dict[str, float]:
    return {f"{verb} {resource}": round(n / jobs, 2) for (verb, resource), n in sorted(counts.items())}


async def wait_watching(cluster: Cluster, resource: str, timeout: float = 60.0) -> None:
    """Until some client (the actor under test) watches `resource`."""
    async with asyncio.timeout(timeout):
        while (await cluster.requests()).get(("watch", resource), 0) < 1:  # noqa: ASYNC110 - another process
            await asyncio.sleep(0.1)


async def run_burst(args, actor: str, qps: float, burst: int, keep: bool = False, jobs_n: int = 0,
                    replicas: int = 0, mix: bool = False) -> tuple[dict, object]:
    """One burst handled by `actor` (controller, floor, kopf). With keep, returns the live cluster
    and controller for the cold start. Rate-limited runs use --limited-jobs jobs."""
    jobs_n = jobs_n or (args.limited_jobs if qps > 0 and args.limited_jobs else args.jobs)
    replicas = replicas or args.replicas
    directory = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    cluster = Cluster(directory)
    await cluster.__aenter__()
    runner = None
    try:
        if actor == "controller":
            runner = Controller(cluster, "--qps", str(qps), "--burst", str(burst), "--workers", str(args.workers))
            await runner.start()
            await runner.wait_synced()
        elif actor == "floor":
            runner = procs.Measured()
            runner.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bench.scale.floor", "--kubeconfig", str(cluster.kubeconfig), "--qps", str(qps),
                "--burst", str(burst), "--workers", str(args.workers), cwd=procs.ROOT)
            await wait_watching(cluster, "pods")
        else:
            runner = Kopf(cluster)
            await runner.start()
            await wait_watching(cluster, "pods")
            await wait_watching(cluster, "genericjobs")
        # mix: the three kinds in turn (GenericJob, TensorFlowTrainingJob, PyTorchTrainingJob), served by the
        # same process (the controller only).
        makers = (genericjob, tensorflowjob, pytorchjob) if mix else (genericjob,)
        jobs = [makers[i % len(makers)](f"job-{i}", replicas, BURST_SCRIPT) for i in range(jobs_n)]
        pods = jobs_n * replicas
        async with Tracker(cluster.session, cluster.url) as tracker:
            await asyncio.sleep(0.5)
            before = await cluster.requests()
            cpu0, server0 = runner.cpu(), cluster.cpu()
            started = time.perf_counter()
            submitted = await submit(cluster.session, cluster.url, jobs)
            timeout = args.timeout
            t_pods = await tracker.until(lambda: len(tracker.pods_seen) >= pods, timeout, "all pods")
            t_svc = await tracker.until(lambda: tracker.services >= pods, timeout, "all services")
            t_done = await tracker.until(lambda: len(tracker.jobs_done) >= jobs_n, timeout, "all jobs done")
            if actor == "controller":
                async with asyncio.timeout(60):
                    while not await runner.idle():  # noqa: ASYNC110 - another process
                        await asyncio.sleep(0.1)
            cpu = runner.cpu() - cpu0
            server_cpu = cluster.cpu() - server0
            counts = diff(await cluster.requests(), before)
            for job in jobs:  # the submitter's creates, not the actor's
                counts[("create", PLURALS[job["kind"]])] -= 1
            counts = {k: v for k, v in counts.items() if v}
            failed = sum(1 for phase, _ in tracker.jobs_done.values() if phase != "Succeeded")
        result = {"actor": actor + (" mix" if mix else ""), "qps": qps, "burst": burst, "jobs": jobs_n,
                  "replicas": replicas,
                  "submit_s": round(submitted, 2), "all_pods_s": round(t_pods - started, 2),
                  "all_services_s": round(t_svc - started, 2), "all_done_s": round(t_done - started, 2),
                  "failed_jobs": failed, "writes": writes(counts), "writes_per_job": round(writes(counts) / jobs_n, 2),
                  "requests_per_job": per_job(counts, jobs_n), "cpu_s": round(cpu, 2),
                  "server_cpu_s": round(server_cpu, 2), **runner.memory()}
        if keep:
            return result, (cluster, runner)
        return result, None
    finally:
        if not keep:
            if isinstance(runner, Controller | Kopf):
                await runner.stop()
            elif runner is not None:
                await procs.terminate(runner.process)
            await cluster.__aexit__(None, None, None)


async def run_cold(args) -> dict:
    """A cluster made by a --qps 0 burst of the cold-start sizes; its controller stopped; a fresh one started."""
    made, (cluster, old) = await run_burst(args, "controller", 0.0, args.burst, keep=True, jobs_n=args.cold_jobs,
                                           replicas=args.cold_replicas)
    fresh = Controller(cluster, "--qps", "0", "--workers", str(args.workers))
    try:
        await old.stop()
        stats = await cluster.stats()
        before = await cluster.requests()
        await fresh.start()
        synced = await fresh.wait_synced()
        async with asyncio.timeout(300):
            while True:
                m = await fresh.metrics()
                if m.get("controller_runtime_reconcile_total{controller=genericjob,result=success}", 0) + \
                        m.get("controller_runtime_reconcile_total{result=success}", 0) >= made["jobs"] \
                        and await fresh.idle():
                    break
                await asyncio.sleep(0.05)
        idle_at = time.perf_counter() - fresh.started
        await asyncio.sleep(2.0)  # anything late (delayed requeues, events) still counts
        counts = diff(await cluster.requests(), before)
        m = await fresh.metrics()
        return {"jobs": stats["objects"].get("batch.tensorstack.dev/genericjobs", 0),
                "pods": stats["objects"].get("/pods", 0), "services": stats["objects"].get("/services", 0),
                "synced_s": round(synced, 2), "idle_s": round(idle_at, 2), "writes": writes(counts),
                "requests": {f"{v} {r}": n for (v, r), n in sorted(counts.items())},
                "reconciles": sum(v for k, v in m.items() if k.startswith("controller_runtime_reconcile_total")),
                "cpu_s": round(fresh.cpu(), 2), **fresh.memory()}
    finally:
        await fresh.stop()
        await cluster.__aexit__(None, None, None)


async def run_idle(args) -> dict:
    directory = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    async with Cluster(directory) as cluster:
        # As deployed: leader election renews its Lease every retry period (2 s), whatever the jobs.
        controller = Controller(cluster, "--qps", "0", "--workers", str(args.workers), leader_elect=True)
        await controller.start()
        try:
            await controller.wait_synced()
            jobs = [genericjob(f"idle-{i}", args.replicas, {"start_after": 0.2}) for i in range(args.idle_jobs)]
            async with Tracker(cluster.session, cluster.url) as tracker:
                await submit(cluster.session, cluster.url, jobs)
                await tracker.until(lambda: sum(p == "Running" for p in tracker.job_phase.values()) >= args.idle_jobs,
                                    args.timeout, "all jobs running")
                async with asyncio.timeout(60):
                    while not await controller.idle():  # noqa: ASYNC110 - another process
                        await asyncio.sleep(0.1)
                await asyncio.sleep(2.0)
                before = await cluster.requests()
                cpu0, started = controller.cpu(), time.perf_counter()
                await asyncio.sleep(args.idle_seconds)
                cpu, elapsed = controller.cpu() - cpu0, time.perf_counter() - started
                counts = diff(await cluster.requests(), before)
            lease = {k: v for k, v in counts.items() if k[1] == "leases"}
            return {"jobs": args.idle_jobs, "pods": args.idle_jobs * args.replicas, "seconds": round(elapsed, 1),
                    "requests": {f"{v} {r}": n for (v, r), n in sorted(counts.items())},
                    "writes": writes(counts) - writes(lease), "lease_requests": sum(lease.values()),
                    "watch_renewals": sum(n for (verb, _), n in counts.items() if verb == "watch"),
                    "cpu_s": round(cpu, 3), "cpu_percent_of_core": round(100 * cpu / elapsed, 2),
                    **controller.memory()}
        finally:
            await controller.stop()


def histogram_quantile(metrics: dict[str, float], name: str, q: float) -> float:
    buckets = sorted((float(k.split("le=")[1].rstrip("}").split(",")[0]), v) for k, v in metrics.items()
                     if k.startswith(name + "_bucket"))
    if not buckets or buckets[-1][1] == 0:
        return float("nan")
    total = buckets[-1][1]
    previous_le, previous_count = 0.0, 0.0
    for le, count in buckets:
        if count >= q * total:
            if math.isinf(le):
                return previous_le
            share = (q * total - previous_count) / max(count - previous_count, 1e-9)
            return previous_le + (le - previous_le) * share
        previous_le, previous_count = le, count
    return float("nan")


def steady_rate(times: list[float]) -> float | None:
    """Events per second over the middle 80% of them: pods are created over a few seconds, so the
    first and last changes trickle in and the whole span would understate the rate in between."""
    times = sorted(times)
    lo, hi = len(times) // 10, len(times) - 1 - len(times) // 10
    if hi <= lo or times[hi] == times[lo]:
        return None
    return round((hi - lo) / (times[hi] - times[lo]), 1)


async def run_latency(args) -> dict:
    directory = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    pods = args.latency_jobs * args.latency_replicas
    window = 2 * pods / args.latency_rate  # two changes per pod (Running, then Succeeded)
    lead = pods / 150 + 5  # time for the controller to create every pod first
    rng = random.Random(1)
    async with Cluster(directory) as cluster:
        controller = Controller(cluster, "--qps", "0", "--workers", str(args.workers))
        await controller.start()
        try:
            await controller.wait_synced()
            jobs = []
            for i in range(args.latency_jobs):
                scripts = []
                for _ in range(args.latency_replicas):
                    a, b = sorted((rng.uniform(0, window), rng.uniform(0, window)))
                    scripts.append({"start_after": round(lead + a, 3), "run_for": round(max(b - a, 0.01), 3)})
                jobs.append(genericjob(f"lat-{i}", args.latency_replicas, scripts, services=False))
            async with Tracker(cluster.session, cluster.url) as tracker:
                tracker.record_latency = True
                started = time.perf_counter()
                await submit(cluster.session, cluster.url, jobs)
                t_pods = await tracker.until(lambda: len(tracker.pods_seen) >= pods, args.timeout, "all pods")
                # The window opens once the start-up burst is through (its status writes and Events),
                # so both measures time the steady changes only.
                async with asyncio.timeout(lead):
                    while not await controller.idle():  # noqa: ASYNC110 - another process
                        await asyncio.sleep(0.05)
                t_steady = time.perf_counter()
                before = await controller.metrics()
                await tracker.until(lambda: len(tracker.jobs_done) >= args.latency_jobs, args.timeout + window,
                                    "all jobs done")
                await asyncio.sleep(0.5)
                after = await controller.metrics()
            steady_at = [(at, lat) for at, lat in tracker.latencies if at > t_steady]
            steady = [lat for _, lat in steady_at]
            changes = [t for t in tracker.changes if t > t_steady]
            name = "genericjob_status_latency_seconds"
            hist = {k: after.get(k, 0) - before.get(k, 0) for k in after if k.startswith(name + "_bucket")}
            under = next((v for k, v in hist.items() if "le=0.1" in k and "le=0.1" + "}" in k + "}"), 0)
            total = max(hist.values()) if hist else 0
            return {"jobs": args.latency_jobs, "pods": pods, "all_pods_s": round(t_pods - started, 2),
                    "changes": len(changes), "changes_per_s": steady_rate(changes),
                    "external_p50_ms": round(1000 * percentile(steady, 0.5), 1),
                    "external_p99_ms": round(1000 * percentile(steady, 0.99), 1),
                    "external_max_ms": round(1000 * max(steady, default=float("nan")), 1), "samples": len(steady),
                    "metric_p50_ms": round(1000 * histogram_quantile(hist, name, 0.5), 1),
                    "metric_p99_ms": round(1000 * histogram_quantile(hist, name, 0.99), 1),
                    "metric_share_under_100ms": round(under / total, 4) if total else None,
                    "metric_samples": total,
                    "status_conflicts": sum(v - before.get(k, 0) for k, v in after.items()
                                            if k.startswith("rest_client_requests_total") and "code=409" in k
                                            and "resource=genericjobs/status" in k),
                    "requeues": sum(v - before.get(k, 0) for k, v in after.items()
                                    if k.startswith("workqueue_retries_total")),
                    "external_slowest": [(round(at - started, 2), round(1000 * lat, 1))
                                         for at, lat in sorted(steady_at, key=lambda x: -x[1])[:5]],
                    "reflected_first": sum(1 for at, lat in steady_at if lat == 0.0),
                    "watcher_stalls": [(round(at - started, 2), round(1000 * late, 1))
                                       for at, late in tracker.stalls if at > t_steady],
                    "cpu_s": round(controller.cpu(), 2)}
        finally:
            await controller.stop()


def median_run(items: list[dict]) -> dict:
    """The run with the median time to all Succeeded, with every run's times alongside."""
    ordered = sorted(items, key=lambda item: item["all_done_s"])
    median = dict(ordered[len(ordered) // 2])
    median["runs"] = [{k: item[k] for k in ("all_pods_s", "all_done_s", "cpu_s", "server_cpu_s")} for item in items]
    return median


def ratios(controller: dict, floor: dict, qps: float) -> dict[str, float]:
    """The controller's time over the floor's: to every job Succeeded, and to every pod created
    (medians over the repeats where there are several)."""
    def median(item: dict, key: str) -> float:
        values = sorted(run[key] for run in item.get("runs") or [item])
        return values[len(values) // 2]

    return {f"qps={qps:g} (all Succeeded)": round(median(controller, "all_done_s") / median(floor, "all_done_s"), 2),
            f"qps={qps:g} (all pods)": round(median(controller, "all_pods_s") / median(floor, "all_pods_s"), 2)}


def table(results: dict) -> str:
    rows = []
    for item in results.get("bursts", []):
        name = f"burst {item['actor']} qps={item['qps']:g}"
        rows.append((name, f"{item['jobs']}x{item['replicas']}: pods {item['all_pods_s']} s, services "
                           f"{item['all_services_s']} s, all Succeeded {item['all_done_s']} s; "
                           f"{item['writes_per_job']} writes/job; CPU {item['cpu_s']} s; peak RSS "
                           f"{item['peak_rss_mib']:.0f} MiB; server CPU {item['server_cpu_s']} s"
                           + (f"; all Succeeded in each run {[r['all_done_s'] for r in item['runs']]}"
                              if len(item.get("runs") or ()) > 1 else "")))
    for key, value in results.get("ratios", {}).items():
        rows.append((f"overhead ratio {key}", f"{value}"))
    if "cold" in results:
        c = results["cold"]
        rows.append(("cold start", f"{c['jobs']} jobs/{c['pods']} pods/{c['services']} services: synced "
                                   f"{c['synced_s']} s, idle {c['idle_s']} s, writes {c['writes']}, "
                                   f"peak RSS {c['peak_rss_mib']:.0f} MiB"))
    if "idle" in results:
        i = results["idle"]
        rows.append(("idle", f"{i['jobs']} jobs/{i['pods']} pods for {i['seconds']} s: writes {i['writes']}, "
                             f"watch renewals {i['watch_renewals']}, Lease requests {i['lease_requests']} "
                             f"(all: {i['requests']}), CPU {i['cpu_percent_of_core']}% of a core, "
                             f"RSS {i['rss_mib']:.0f} MiB"))
    if "latency" in results:
        lat = results["latency"]
        rows.append(("latency", f"{lat['jobs']} jobs, {lat['changes_per_s']} changes/s: external p50 "
                                f"{lat['external_p50_ms']} ms p99 {lat['external_p99_ms']} ms; metric p50 "
                                f"{lat['metric_p50_ms']} ms p99 {lat['metric_p99_ms']} ms"))
    if "strangers" in results:
        rows.append(strangers_row(results["strangers"]))
    width = max((len(r[0]) for r in rows), default=10)
    return "\n".join(f"{name:<{width}}  {text}" for name, text in rows)


async def main_async(args) -> dict:
    only = set(args.only.split(",")) if args.only else set(SCENARIOS)
    results: dict = {"machine": machine(), "args": vars(args), "bursts": [], "ratios": {}}

    def show(item):
        print(json.dumps(item), flush=True)
        if args.json:  # after every scenario, so a late failure keeps what was measured
            Path(args.json).write_text(json.dumps(results, indent=2) + "\n")

    limited = {}
    if "burst" in only and args.qps > 0:
        limited["controller"], _ = await run_burst(args, "controller", args.qps, args.burst)
        results["bursts"].append(limited["controller"])
        show(limited["controller"])
    if "floor" in only and args.qps > 0:
        limited["floor"], _ = await run_burst(args, "floor", args.qps, args.burst)
        results["bursts"].append(limited["floor"])
        show(limited["floor"])
    if len(limited) == 2:
        results["ratios"].update(ratios(limited["controller"], limited["floor"], args.qps))
    # Unlimited bursts are bound by the shared cores and vary from run to run: repeat them,
    # controller and floor taking turns so that a slow spell of the machine hits both.
    actors = [a for a, scenario in (("controller", "burst"), ("floor", "floor"), ("kopf", "peer")) if scenario in only]
    runs: dict[str, list[dict]] = {a: [] for a in actors}
    for _ in range(args.repeat):
        for actor in actors:
            item, _ = await run_burst(args, actor, 0.0, args.burst)
            runs[actor].append(item)
            print(json.dumps(item), flush=True)
    unlimited = {actor: median_run(items) for actor, items in runs.items() if items}
    for item in unlimited.values():
        results["bursts"].append(item)
        show(item)
    if "controller" in unlimited and "floor" in unlimited:
        results["ratios"].update(ratios(unlimited["controller"], unlimited["floor"], 0.0))
    if "mix" in only:
        # Half GenericJobs, half TensorFlowTrainingJobs, at once: one process serving both kinds.
        results["mix"], _ = await run_burst(args, "controller", 0.0, args.burst, mix=True)
        results["bursts"].append(results["mix"])
        show(results["mix"])
    if "cold" in only:
        results["cold"] = await run_cold(args)
        show(results["cold"])
    if "idle" in only:
        results["idle"] = await run_idle(args)
        show(results["idle"])
    if "latency" in only:
        results["latency"] = await run_latency(args)
        show(results["latency"])
    if "strangers" in only:
        results["strangers"] = await run_strangers(args)
        show(results["strangers"])
    return results


def machine() -> dict:
    import os
    import platform
    with open("/proc/meminfo") as f:
        total = int(f.readline().split()[1]) // 1024
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True,
                         text=True).stdout.strip()
    return {"nproc": os.cpu_count(), "memory_mib": total, "cpu": cpu, "python": platform.python_version()}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--jobs", type=int, default=1000, help="burst: jobs")
    add("--limited-jobs", type=int, default=0, help="jobs of the --qps-limited bursts (default: --jobs)")
    add("--replicas", type=int, default=4, help="burst and idle: replicas per job (each with a Service)")
    add("--qps", type=float, default=20.0, help="client-side write limit of the controller and the floor")
    add("--burst", type=int, default=30, help="client-side burst")
    add("--workers", type=int, default=4, help="controller workers; the floor's concurrency")
    add("--repeat", type=int, default=3, help="runs of each unlimited (qps 0) burst; the median is reported")
    add("--cold-jobs", type=int, default=2000, help="cold start: finished jobs in the cluster")
    add("--cold-replicas", type=int, default=5, help="cold start: replicas (pods and Services) per job")
    add("--idle-jobs", type=int, default=1000)
    add("--idle-seconds", type=float, default=60.0)
    add("--latency-jobs", type=int, default=200)
    add("--latency-replicas", type=int, default=10)
    add("--latency-rate", type=float, default=100.0, help="pod phase changes per second")
    add("--strangers", type=int, default=10_000, help="strangers: unrelated pods in the cluster")
    add("--stranger-jobs", type=int, default=20, help="strangers: GenericJobs served in each run")
    add("--timeout", type=float, default=1800.0, help="seconds any one wait may take")
    add("--only", default="", help=f"comma-separated subset of {','.join(SCENARIOS)}")
    add("--json", default="bench-scale.json", help="write the results here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    results = asyncio.run(main_async(args))
    print()
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
