"""Issue 47: the admission webhook and the metrics endpoint attacked under load, on loopback, bounded in count and
time. Many slow clients (2,000 TLS connections trickling a header line, in a process of their own) are cut within
the deadlines and cost the server a bounded memory, while valid reviews and scrapes made meanwhile are answered.
The deadlines are shortened here (ConnectionLimits) so the test takes seconds, not the real 35. Costly clients (24
posting the costliest reviews near 3 MiB, in a process of their own) never stall the event loop for long: a
loop-lag probe measures its longest stall, while reviews and scrapes made meanwhile are answered."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
import ssl
import sys
from pathlib import Path

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from apimachinery.serving import BoundedSite, ConnectionLimits
from controller.jobs.schema import admission
from controller.kinds.genericjob.kind import GENERICJOB
from controller.runtime.certs import context_from_pem, issue
from controller.runtime.server import Server
from controller.runtime.webhook_server import WEBHOOK_LIMITS, WebhookServer

from .costly_clients import LoopLag
from .test_webhook_server import HOST, PATHS, job, review, webhook_server_validity

ROOT = Path(__file__).resolve().parents[2]
SLOW_CLIENTS = 2000
# The webhook's own cap, its deadlines shortened: handshake 1 s, then a head within 2 s.
LIMITS = dataclasses.replace(WEBHOOK_LIMITS, handshake_timeout=1.0, header_timeout=2.0)
CUT_WITHIN = LIMITS.handshake_timeout + LIMITS.header_timeout + 1.0  # the real ones: 5 + 30 s, under 35 s
MEMORY_BOUND_MB = 50
COSTLY_CLIENTS, COSTLY_SECONDS = 24, 3.0
# The shapes at a quarter of their size (bodies near 750 KiB, each still a second or more to decide): the same path
# as at 3 MiB (bench/bench_webhook.py's), a quarter of the bytes, so that the test leaves the machine to the suite's
# others (the slow clients' tests above, run beside it, count on the CPU to flood fast enough).
COSTLY_SCALE = 0.25
COSTLY_TIMEOUT = 2.0  # the webhook's bound on a review, shortened from 5 s: the costly ones are cut sooner
# The loop's longest stall under the costly clients, on a loaded 2-core machine (the suite's other workers, other
# processes): before issue 47 it was seconds (a 3 MiB review decoded and validated holding the GIL); a quiet
# machine's figure, under 100 ms, is bench/bench_webhook.py's.
STALL_BOUND = 1.0


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Peak:
    """The process's largest RSS while it runs, sampled every 20 ms, and the largest number of open connections
    of a site."""

    def __init__(self, site: BoundedSite) -> None:
        self.site, self.rss, self.open = site, rss_mb(), 0
        self._task: asyncio.Task | None = None

    async def _sample(self) -> None:
        while True:
            self.rss, self.open = max(self.rss, rss_mb()), max(self.open, len(self.site.open))
            await asyncio.sleep(0.02)

    async def __aenter__(self) -> Peak:
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc) -> None:
        assert self._task is not None
        self._task.cancel()


async def slow_clients(address: str, count: int = SLOW_CLIENTS) -> dict:
    host, _, port = address.rpartition(":")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.program.flood", host, port, str(count), "0.2", "30", cwd=ROOT,
        stdout=asyncio.subprocess.PIPE)
    out, _ = await process.communicate()
    assert process.returncode == 0
    return json.loads(out)


def tls_pair() -> tuple[bytes, ssl.SSLContext]:
    cert, key = issue("test", [HOST], webhook_server_validity(), ips=("127.0.0.1",))
    return cert, context_from_pem(cert, key)


async def answered_meanwhile(flood: asyncio.Task, request) -> list[int]:
    """The statuses of requests made one after another, each on a new connection, while the flood runs."""
    statuses = []
    while not flood.done() or not statuses:
        statuses.append(await request())
        await asyncio.sleep(0.05)
    return statuses


@pytest.mark.slow  # the slow clients are a process of their own
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS read from /proc")
async def test_slow_clients_are_cut_and_capped_while_reviews_are_answered():
    cert, context = tls_pair()
    server = WebhookServer({PATHS[GENERICJOB]: functools.partial(admission.review, GENERICJOB)}, limits=LIMITS)
    await server.start("127.0.0.1", 0, context)
    assert server.site is not None
    body = review("CREATE", job("GenericJob", {"worker": 2}))
    client_tls = ssl.create_default_context(cadata=cert.decode())

    async def valid_review() -> int:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session, \
                session.post(f"https://{server.address}{PATHS[GENERICJOB]}", json=body, ssl=client_tls,
                             server_hostname=HOST) as answer:
            assert (await answer.json())["response"]["allowed"] is True
            return answer.status

    try:
        before = rss_mb()
        async with Peak(server.site) as peak:
            flood = asyncio.create_task(slow_clients(server.address))
            statuses = await answered_meanwhile(flood, valid_review)
            result = flood.result()
        assert result["still_open"] == 0 and result["cut"] == SLOW_CLIENTS, result
        assert result["longest"] < CUT_WITHIN, result
        assert peak.open <= LIMITS.max_connections
        assert peak.rss - before < MEMORY_BOUND_MB, (before, peak.rss)
        assert statuses and set(statuses) == {200}, statuses
        # The cap was met and idle connections were closed to make room (the others were cut by the handshake
        # or header timeout before the cap was met again: how many of each depends on how fast the machine is).
        assert server.site.evicted > 0
    finally:
        await server.stop()


@pytest.mark.slow  # the slow clients are a process of their own
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS read from /proc")
async def test_slow_clients_of_the_metrics_endpoint_are_cut_while_scrapes_are_answered():
    cert, context = tls_pair()
    limits = ConnectionLimits(max_connections=64, handshake_timeout=1.0, header_timeout=2.0)
    server = Server(CollectorRegistry(), problems=list, unready=lambda: None, limits=limits)
    addresses = await server.start(metrics="127.0.0.1:0", health="127.0.0.1:0", metrics_tls=context)
    client_tls = ssl.create_default_context(cadata=cert.decode())

    async def scrape() -> int:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session, \
                session.get(f"https://{addresses['metrics']}/metrics", ssl=client_tls,
                            server_hostname=HOST) as answer:
            return answer.status

    try:
        before = rss_mb()
        async with Peak(server.sites["metrics"]) as peak:
            flood = asyncio.create_task(slow_clients(addresses["metrics"], 1000))
            statuses = await answered_meanwhile(flood, scrape)
            result = flood.result()
        assert result["still_open"] == 0 and result["cut"] == 1000, result
        assert result["longest"] < CUT_WITHIN, result
        assert peak.open <= limits.max_connections
        assert peak.rss - before < MEMORY_BOUND_MB, (before, peak.rss)
        assert set(statuses) == {200}, statuses
    finally:
        await server.stop()


async def test_the_deadlines_bound_a_slow_client_to_35_seconds():
    """The real limits: what the shortened ones above stand for."""
    assert WEBHOOK_LIMITS.handshake_timeout + WEBHOOK_LIMITS.header_timeout <= 35
    assert WEBHOOK_LIMITS.max_connections * 256 / 1024 <= MEMORY_BOUND_MB  # asyncio's TLS buffer: 256 KiB each


async def costly_clients(address: str, path: str, ready: asyncio.Event) -> dict:
    host, _, port = address.rpartition(":")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.program.costly_clients", host, port, path, str(COSTLY_CLIENTS),
        str(COSTLY_SECONDS), str(COSTLY_SCALE), cwd=ROOT, stdout=asyncio.subprocess.PIPE)
    os.setpriority(os.PRIO_PROCESS, process.pid, 10)  # the attackers' CPU is not the server's: elsewhere in a cluster
    assert process.stdout is not None
    assert await process.stdout.readline() == b"ready\n"  # its bodies made: the attack starts
    ready.set()
    out, _ = await process.communicate()
    assert process.returncode == 0
    return json.loads(out)


@pytest.mark.slow  # the costly clients are a process of their own
async def test_costly_clients_never_stall_the_loop_while_reviews_and_scrapes_are_answered():
    cert, context = tls_pair()
    path = PATHS[GENERICJOB]
    server = WebhookServer({path: functools.partial(admission.review, GENERICJOB)}, timeout=COSTLY_TIMEOUT)
    await server.start("127.0.0.1", 0, context)
    metrics = Server(CollectorRegistry(), problems=list, unready=lambda: None)
    addresses = await metrics.start(metrics="127.0.0.1:0", health="127.0.0.1:0", metrics_tls=context)
    body = review("CREATE", job("GenericJob", {"worker": 2}))
    client_tls = ssl.create_default_context(cadata=cert.decode())

    async def valid_review_and_scrape() -> int:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session:
            async with session.post(f"https://{server.address}{path}", json=body, ssl=client_tls,
                                    server_hostname=HOST) as answer:
                assert (await answer.json())["response"]["allowed"] is True
            async with session.get(f"https://{addresses['metrics']}/metrics", ssl=client_tls,
                                   server_hostname=HOST) as scraped:
                return max(answer.status, scraped.status)

    try:
        ready = asyncio.Event()
        attack = asyncio.create_task(costly_clients(server.address, path, ready))
        await asyncio.wait([attack, asyncio.create_task(ready.wait())], return_when=asyncio.FIRST_COMPLETED)
        async with LoopLag() as lag:
            statuses = await answered_meanwhile(attack, valid_review_and_scrape)
        result = attack.result()
        assert statuses and set(statuses) == {200}, statuses
        assert lag.longest < STALL_BOUND, (lag.longest, result)
        answered = {name_status.rpartition(" ")[2] for name_status in result["statuses"]}
        # Decided, or cut at the bound (500): never a connection dropped while a review is decided. (A new
        # connection is, rarely, reset in its handshake on a loaded machine, before issue 47's change as after.)
        assert answered <= {"200", "500", "ClientConnectorError"}, result
        assert result["statuses"].get("cheap_but_most 200"), result  # on the loop, and answered
    finally:
        await server.stop()
        await metrics.stop()
