"""The processes of a run: localcluster, the controller, the kopf peer; their CPU and memory from /proc."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from localcluster import Credentials

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/<pid>/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def memory(pid: int) -> dict[str, float]:
    """Current and peak resident set size in MiB (/proc/<pid>/status VmRSS, VmHWM)."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return {"rss_mib": out.get("VmRSS", 0.0), "peak_rss_mib": out.get("VmHWM", 0.0)}


async def terminate(process: asyncio.subprocess.Process | None, timeout: float = 15.0) -> None:
    if process is None or process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        async with asyncio.timeout(timeout):
            await process.wait()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


class Measured:
    """A subprocess whose CPU seconds and peak RSS can be read while it lives."""

    process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def memory(self) -> dict[str, float]:
        return memory(self.pid)


class Cluster(Measured):
    """`python -m localcluster serve --runner scripted` with the project's CRDs, on a free port."""

    def __init__(self, directory: Path, history: int = 200_000) -> None:
        self.kubeconfig = directory / "kubeconfig"
        self.history = history
        self.url = ""
        self.session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Cluster:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "localcluster", "serve", "--port", "0", "--kubeconfig-out", str(self.kubeconfig),
            "--crds", str(ROOT / "manifests" / "crds"), "--runner", "scripted", "--history-size", str(self.history),
            "--log-level", "warning", stdout=asyncio.subprocess.PIPE, cwd=ROOT)
        async with asyncio.timeout(30):
            while True:
                line = (await self.process.stdout.readline()).decode()
                if not line:
                    raise RuntimeError("localcluster exited before listening")
                if line.startswith("localcluster listening on "):
                    self.url = line.split()[3]
                    break
        # As the cluster's admin: the token and certificate are in the kubeconfig it wrote.
        self.session = Credentials.from_kubeconfig(self.kubeconfig).session(
            limit=256, timeout=aiohttp.ClientTimeout(total=None, sock_read=None))
        return self

    async def __aexit__(self, *exc) -> None:
        if self.session is not None:
            await self.session.close()
        await terminate(self.process)

    async def requests(self) -> dict[tuple[str, str], int]:
        """Every request the server has answered so far: (verb, resource) -> count."""
        async with self.session.get(f"{self.url}/_localcluster/requests") as answer:
            rows = (await answer.json())["requests"]
        counts: dict[tuple[str, str], int] = {}
        for row in rows:
            key = (row["verb"], row["resource"])
            counts[key] = counts.get(key, 0) + row["count"]
        return counts

    async def stats(self) -> dict:
        async with self.session.get(f"{self.url}/_localcluster/stats") as answer:
            return await answer.json()


def diff(after: dict, before: dict) -> dict[tuple[str, str], int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


def writes(counts: dict[tuple[str, str], int]) -> int:
    return sum(n for (verb, _), n in counts.items() if verb in WRITE_VERBS)


class Controller(Measured):
    """`genericjob-controller run` (JSON logs) against a Cluster; with leader election as deployed
    (a Lease in `default`) when `leader_elect`, else without."""

    def __init__(self, cluster: Cluster, *flags: str, leader_elect: bool = False) -> None:
        self.cluster = cluster
        election = ["--leader-elect", "--lease-namespace", "default"] if leader_elect else ["--no-leader-elect"]
        self.argv = [str(BIN / "genericjob-controller"), "run", "--kubeconfig", str(cluster.kubeconfig),
                     "--metrics-address", "127.0.0.1:0", "--no-metrics-secure", "--health-address", "0",
                     "--log-format", "json", "--webhook-port", "0",
                     "--log-level", "info", *election, "--shutdown-timeout", "2", *flags]
        self.url = ""
        self.started = 0.0
        self.synced_at = 0.0
        self._reader: asyncio.Task | None = None
        self._session: aiohttp.ClientSession | None = None
        self._serving = asyncio.Event()
        self._synced = asyncio.Event()
        self.tail: list[str] = []

    async def start(self) -> None:
        self.started = time.perf_counter()
        self.process = await asyncio.create_subprocess_exec(*self.argv, stderr=asyncio.subprocess.PIPE, cwd=ROOT)
        self._reader = asyncio.get_running_loop().create_task(self._read_logs())
        self._session = aiohttp.ClientSession()
        async with asyncio.timeout(60):
            await self._serving.wait()

    async def wait_synced(self, timeout: float = 300.0) -> float:
        async with asyncio.timeout(timeout):
            await self._synced.wait()
        return self.synced_at - self.started

    async def stop(self) -> None:
        await terminate(self.process)
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        if self._session is not None:
            await self._session.close()

    async def _read_logs(self) -> None:
        async for line in self.process.stderr:
            text = line.decode(errors="replace").rstrip("\n")
            try:
                record = json.loads(text)
            except ValueError:
                record = {}
            event = record.get("event") if isinstance(record, dict) else None
            if event == "serving metrics":
                self.url = f"http://{record['address']}"
                self._serving.set()
            elif event == "caches synced":
                self.synced_at = time.perf_counter()
                self._synced.set()
            elif record.get("level") in ("warning", "error", "critical") or not record:
                self.tail = [*self.tail[-50:], text]

    async def metrics(self) -> dict[str, float]:
        """Sample name (labels folded in as name{k=v,...}) -> value."""
        async with self._session.get(self.url + "/metrics") as answer:
            text = await answer.text()
        out: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
        return out

    async def idle(self) -> bool:
        m = await self.metrics()
        return (sum(v for k, v in m.items() if k.startswith("workqueue_depth")) == 0
                and m.get("controller_runtime_active_workers", 0) == 0
                and m.get("genericjob_events_pending", 0) == 0)


class Kopf(Measured):
    """`kopf run --standalone --all-namespaces bench/kopf_peer.py` against a Cluster."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.started = 0.0

    async def start(self) -> None:
        self.started = time.perf_counter()
        env = {**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig)}
        self.process = await asyncio.create_subprocess_exec(
            str(BIN / "kopf"), "run", "--standalone", "--all-namespaces", "--quiet",
            str(ROOT / "bench" / "kopf_peer.py"), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            env=env, cwd=ROOT)

    async def stop(self) -> None:
        await terminate(self.process)
