"""How fast localcluster itself is: the floor every later benchmark stands on.

Runs localcluster in a subprocess (so the client's CPU is not the server's) and measures, over
HTTP with aiohttp: pod creates per second, listing N pods (whole and paginated), and watch events
per second delivered to 1 and to 10 watchers. Prints a table; `--json FILE` writes the figures.

    python bench/bench_localcluster.py [--pods 10000] [--concurrency 32] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson

from localcluster import Credentials


def pod(name: str) -> bytes:
    return orjson.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench", "index": name.rsplit("-", 1)[-1]}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"],
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
    })


async def start_server(history: int, directory: Path) -> tuple[asyncio.subprocess.Process, Credentials]:
    """The server and how to reach it (HTTPS, its admin token: from the kubeconfig it writes)."""
    kubeconfig = directory / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "localcluster", "serve", "--port", "0", "--history-size", str(history),
        "--kubeconfig-out", str(kubeconfig), stdout=asyncio.subprocess.PIPE)
    async with asyncio.timeout(30):
        while True:
            line = (await proc.stdout.readline()).decode()
            if "listening on" in line:
                return proc, Credentials.from_kubeconfig(kubeconfig)


async def create_pods(session: aiohttp.ClientSession, url: str, names: list[str], concurrency: int) -> float:
    queue = list(reversed(names))
    headers = {"Content-Type": "application/json"}

    async def worker():
        while queue:
            name = queue.pop()
            async with session.post(f"{url}/api/v1/namespaces/default/pods", data=pod(name), headers=headers) as r:
                if r.status != 201:
                    raise RuntimeError(f"create {name}: {r.status} {await r.text()}")

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


async def timed_list(session: aiohttp.ClientSession, url: str, limit: int = 0) -> tuple[float, float, int]:
    """Seconds to fetch (all pages), seconds to parse, and the byte count."""
    fetch = parse = 0.0
    size = 0
    token = ""
    while True:
        params = {"limit": str(limit)} if limit else {}
        if token:
            params["continue"] = token
        started = time.perf_counter()
        async with session.get(f"{url}/api/v1/pods", params=params) as r:
            raw = await r.read()
        fetch += time.perf_counter() - started
        started = time.perf_counter()
        body = json.loads(raw)
        parse += time.perf_counter() - started
        size += len(raw)
        token = body["metadata"].get("continue", "")
        if not token:
            return fetch, parse, size


async def watch_throughput(session: aiohttp.ClientSession, url: str, watchers: int, events: int,
                           concurrency: int, round_name: str) -> float:
    """Events per second delivered to every watcher while `events` label patches are written."""
    async with session.get(f"{url}/api/v1/namespaces/default/pods", params={"limit": "1"}) as r:
        rv = (await r.json())["metadata"]["resourceVersion"]
    ready = asyncio.Event()
    started_at: list[float] = []

    async def watch():
        params = {"watch": "1", "resourceVersion": rv}
        got = 0
        async with session.get(f"{url}/api/v1/namespaces/default/pods", params=params,
                               timeout=aiohttp.ClientTimeout(total=600)) as r:
            ready.set()
            async for _ in r.content:
                got += 1
                if got == events:
                    return time.perf_counter()
        raise RuntimeError(f"watch ended after {got} events")

    tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
    await ready.wait()
    await asyncio.sleep(0.2)
    names = [f"bench-{i}" for i in range(events)]
    headers = {"Content-Type": "application/merge-patch+json"}
    started_at.append(time.perf_counter())

    async def writer():
        while names:
            name = names.pop()
            body = orjson.dumps({"metadata": {"labels": {"round": round_name}}})  # a change every round
            async with session.patch(f"{url}/api/v1/namespaces/default/pods/{name}", data=body, headers=headers):
                pass

    await asyncio.gather(*(writer() for _ in range(concurrency)))
    finished = await asyncio.gather(*tasks)
    return events / (max(finished) - started_at[0])


async def run(args: argparse.Namespace) -> dict:
    directory = tempfile.TemporaryDirectory(prefix="bench-localcluster-")
    proc, credentials = await start_server(max(args.pods * 2, 10_000), Path(directory.name))
    url = credentials.url
    results: dict = {"pods": args.pods, "concurrency": args.concurrency}
    try:
        async with credentials.session(limit=args.concurrency + 16) as session:
            names = [f"bench-{i}" for i in range(args.pods)]
            seconds = await create_pods(session, url, names, args.concurrency)
            results["creates_per_second"] = args.pods / seconds
            fetch, parse, size = await timed_list(session, url)
            results.update(list_seconds=fetch, list_parse_seconds=parse, list_bytes=size)
            fetch, _, _ = await timed_list(session, url, limit=500)
            results["list_paginated_seconds"] = fetch
            events = min(args.pods, 5_000)
            results["watch_events_per_second_1"] = await watch_throughput(
                session, url, 1, events, args.concurrency, "one")
            results["watch_events_per_second_10"] = await watch_throughput(
                session, url, 10, events, args.concurrency, "ten")
    finally:
        proc.terminate()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 10)
        directory.cleanup()
    return results


def table(results: dict) -> str:
    n = results["pods"]
    rows = [
        ("pod creates per second", f"{results['creates_per_second']:,.0f}"),
        (f"list {n:,} pods (one request)", f"{results['list_seconds'] * 1000:,.0f} ms"),
        (f"  json.loads of that list ({results['list_bytes'] / 1e6:.1f} MB)",
         f"{results['list_parse_seconds'] * 1000:,.0f} ms"),
        (f"list {n:,} pods (pages of 500)", f"{results['list_paginated_seconds'] * 1000:,.0f} ms"),
        ("watch events per second, 1 watcher", f"{results['watch_events_per_second_1']:,.0f}"),
        ("watch events per second, 10 watchers (each)", f"{results['watch_events_per_second_10']:,.0f}"),
    ]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{name:<{width}}  {value:>12}" for name, value in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    print(table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
