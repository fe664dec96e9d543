"""Client CPU per write: the controller's KubeClient over its keep-alive HTTP/1.1 connections (http1.py), the
same KubeClient over the client's aiohttp session (kubeclient/rest.py's path when a proxy is configured), and a
bare aiohttp session (what bench/scale/floor.py uses).

Each round creates `--requests` Events in `localcluster serve` (its own process, TLS, the admin's token) from
4 concurrent coroutines, and reports this process's CPU (user + system) per request; the rounds take turns so
that a busy spell of the machine hits each. Issue 27's measurement: ~35 us over http1, 100-120 us over aiohttp.

    python bench/bench_writes.py [--requests 3000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

# Run as a script from anywhere: make the repository root importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import orjson
from prometheus_client import CollectorRegistry

from bench.scale.procs import Cluster
from controller.runtime.client import KubeClient
from controller.runtime.manager import USER_AGENT, client_settings
from controller.runtime.metrics import RequestMetrics
from kubeclient.rest import RestClient
from localcluster import Credentials

CONCURRENCY = 4
EVENTS = "/api/v1/namespaces/default/events"


def event(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"bench.{time.time_ns():x}.{i}", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "type": "Normal", "reason": "Bench", "message": "m" * 60, "count": 1}


async def cpu_per_request(send, requests: int) -> float:
    """Microseconds of this process's CPU per request, `requests` sent by CONCURRENCY coroutines."""
    left = list(range(requests))

    async def sender() -> None:
        while left:
            await send(event(left.pop()))

    started = time.process_time()
    await asyncio.gather(*(sender() for _ in range(CONCURRENCY)))
    return (time.process_time() - started) / requests * 1e6


async def main(args: argparse.Namespace) -> None:
    async with Cluster(Path(tempfile.mkdtemp(prefix="bench-writes-"))) as cluster:
        credentials = Credentials.from_kubeconfig(cluster.kubeconfig)
        settings = await client_settings(str(cluster.kubeconfig))
        async with RestClient(settings, observer=RequestMetrics(CollectorRegistry()),
                              user_agent=USER_AGENT) as api, \
                credentials.session(timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as session:
            over_http1 = KubeClient(api, qps=0)
            over_aiohttp = KubeClient(api, qps=0)
            over_aiohttp.rest.writes_via_session = True  # the client's aiohttp session, as with a proxy

            async def bare(body: dict) -> None:
                async with session.post(credentials.url + EVENTS, data=orjson.dumps(body),
                                        headers={"Content-Type": "application/json"}) as answer:
                    assert answer.status == 201, answer.status

            clients = {"KubeClient over http1": lambda body: over_http1.create_event(body),
                       "KubeClient over aiohttp": lambda body: over_aiohttp.create_event(body),
                       "bare aiohttp session (the floor's)": bare}
            results: dict[str, list[float]] = {name: [] for name in clients}
            for send in clients.values():
                await cpu_per_request(send, 200)  # connections made, code warm
            for _ in range(args.rounds):
                for name, send in clients.items():
                    results[name].append(await cpu_per_request(send, args.requests))
    for name, runs in results.items():
        print(f"{name:36s} {statistics.median(runs):6.1f} us of CPU per request "
              f"(runs: {', '.join(f'{r:.1f}' for r in runs)})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
