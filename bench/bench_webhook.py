"""The event loop's longest stall while 24 clients post the costliest admission reviews (issue 47, finding 2).

The webhook server (every kind's path) and the metrics endpoint run in this process on uvloop, as in `run`; the
clients run in a process of their own (tests/program/costly_clients.py): each posts, one after another, reviews
of the worst shapes (near 3 MiB: 200,000 rules, 460,000 bad ranks, 34,000 replica types, 50,000 env vars of two
variables each, an UPDATE of 100,000 rules; issue 47's 250 KiB review of 17,036 rules; the costliest review still
decided on the loop). Meanwhile a probe measures how late a 10 ms timer fires (the loop's longest stall), and a
valid review and a /metrics scrape are made every 100 ms, each timed. Target: the longest stall under 100 ms.

    .venv/bin/python bench/bench_webhook.py [--clients 24] [--seconds 20] [--before]

`--before` decides as the server did before issue 47: on the loop up to 256 KiB of body, else on a thread.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import ssl
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import structlog  # noqa: E402
import uvloop  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from controller.jobs.schema import admission  # noqa: E402
from controller.kinds.genericjob.kind import GENERICJOB  # noqa: E402
from controller.kinds.registry import KINDS  # noqa: E402
from controller.runtime import costly_reviews, webhook_server  # noqa: E402
from controller.runtime.certs import context_from_pem, issue  # noqa: E402
from controller.runtime.server import Server  # noqa: E402
from controller.runtime.webhook_server import WebhookServer  # noqa: E402
from tests.program.costly_clients import LoopLag, job, review  # noqa: E402

HOST = "webhook.bench.svc"
TARGET = 0.100


def before(server: WebhookServer) -> None:
    """The server as it was: a body over 256 KiB decided on a thread, any other on the loop."""
    from concurrent.futures import ThreadPoolExecutor
    threads = ThreadPoolExecutor(max_workers=2)

    class Threads:
        async def decide(self, handler, body):
            return await asyncio.get_running_loop().run_in_executor(threads, costly_reviews.decide, handler, body)

        async def stop(self):
            threads.shutdown(wait=False, cancel_futures=True)

    webhook_server.costly = lambda body: len(body) > 256 * 1024  # type: ignore[attr-defined]
    server._pool = Threads()  # type: ignore[assignment]


async def timed(samples: list[float], failures: list[str], request) -> None:
    started = time.perf_counter()
    try:
        status = await request()
    except aiohttp.ClientError as err:
        failures.append(repr(err))
        return
    if status != 200:
        failures.append(str(status))
    samples.append(time.perf_counter() - started)


async def main(clients: int, seconds: float, old: bool) -> dict:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    cert, key = issue("bench", [HOST], __import__("datetime").timedelta(days=1), ips=("127.0.0.1",))
    context = context_from_pem(cert, key)
    handlers = {admission.path(kind.api): functools.partial(admission.review, kind) for kind in KINDS.values()}
    server = WebhookServer(handlers, CollectorRegistry())
    await server.start("127.0.0.1", 0, context)
    if old:
        before(server)
    metrics = Server(CollectorRegistry(), problems=list, unready=lambda: None)
    addresses = await metrics.start(metrics="127.0.0.1:0", health="127.0.0.1:0", metrics_tls=context)
    path = admission.path(GENERICJOB.api)
    host, _, port = server.address.rpartition(":")
    tls = ssl.create_default_context(cadata=cert.decode())
    valid = review(job({"worker": 2}), uid="valid")
    async with LoopLag() as idle:  # the machine's own floor: the same probe before the attack
        await asyncio.sleep(5)
    reviews: list[float] = []
    scrapes: list[float] = []
    failures: list[str] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session:
        async def a_review() -> int:
            async with session.post(f"https://{server.address}{path}", json=valid, ssl=tls,
                                    server_hostname=HOST) as answer:
                return answer.status

        async def a_scrape() -> int:
            async with session.get(f"https://{addresses['metrics']}/metrics", ssl=tls,
                                   server_hostname=HOST) as answer:
                return answer.status

        attackers = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.program.costly_clients", host, port, path, str(clients), str(seconds),
            cwd=ROOT, stdout=asyncio.subprocess.PIPE)
        os.setpriority(os.PRIO_PROCESS, attackers.pid, 10)  # their CPU is not the server's: elsewhere in a cluster
        assert attackers.stdout is not None
        assert await attackers.stdout.readline() == b"ready\n"  # the bodies made (seconds): the attack starts
        attack = asyncio.create_task(attackers.communicate())
        async with LoopLag() as lag:
            while not attack.done():
                await asyncio.gather(timed(reviews, failures, a_review), timed(scrapes, failures, a_scrape),
                                     asyncio.sleep(0.1))
        out, _ = attack.result()
    assert server.site is not None
    site = {"refused": server.site.refused, "evicted": server.site.evicted}
    await server.stop()
    await metrics.stop()
    return {"clients": clients, "seconds": seconds, "before": old, "longest_stall_ms": round(lag.longest * 1000, 1),
            "idle_longest_stall_ms": round(idle.longest * 1000, 1),
            "probes": lag.samples,
            "review_ms": {"median": round(statistics.median(reviews) * 1000, 1), "max": round(max(reviews) * 1000, 1)},
            "scrape_ms": {"median": round(statistics.median(scrapes) * 1000, 1), "max": round(max(scrapes) * 1000, 1)},
            "failed": failures, "site": site, "attack": json.loads(out)["statuses"], "target_met": lag.longest < TARGET}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--before", action="store_true")
    args = parser.parse_args()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        print(json.dumps(runner.run(main(args.clients, args.seconds, args.before)), indent=1))
