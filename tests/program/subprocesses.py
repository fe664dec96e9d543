"""The program as its users run it: `localcluster serve` and `genericjob-controller run` as subprocesses.

    async with LocalClusterProcess(tmp_path) as cluster, ControllerProcess(cluster) as controller:
        await cluster.jobs.submit(genericjob("job", script=QUICK))
        samples = await controller.metrics()

Everything is synchronised on observable conditions (log lines, HTTP answers, API state) with
timeouts; nothing sleeps for a fixed time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client, config
from prometheus_client.parser import text_string_to_metric_families

from bench.scale.procs import terminate
from localcluster import Credentials
from localcluster.testing import until
from tests.e2e.conftest import Jobs

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CLI = BIN / "genericjob-controller"
# LocalProcess's waits for an event (its ready line, a line that follows from a job's run): generous, as they only
# keep a run that never prints it from hanging the test, on a machine however loaded.
READY_TIMEOUT = 90.0
LINE_TIMEOUT = 90.0
# Short leader election timings: lease 2 s, renew deadline 1.5 s, retry 0.25 s.
LEASE = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.25}


def timing_flags(lease_duration: float, renew_deadline: float, retry_period: float) -> list[str]:
    return ["--lease-duration", str(int(lease_duration)), "--renew-deadline", str(renew_deadline),
            "--retry-period", str(retry_period)]


class LocalClusterProcess:
    """`python -m localcluster serve --runner scripted` on a free port, with the project's CRDs."""

    def __init__(self, directory: Path, crds: Path = ROOT / "manifests" / "crds") -> None:
        self.kubeconfig = directory / "kubeconfig"
        self.crds = crds
        self.process: asyncio.subprocess.Process | None = None
        self.url = ""
        self.credentials: Credentials  # from the kubeconfig it wrote: the only way to its token
        self._stack = contextlib.AsyncExitStack()
        self.api: client.ApiClient
        self.jobs: Jobs

    async def __aenter__(self) -> LocalClusterProcess:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "localcluster", "serve", "--port", "0", "--kubeconfig-out", str(self.kubeconfig),
            "--crds", str(self.crds), "--runner", "scripted", "--bookmark-interval", "1",
            stdout=asyncio.subprocess.PIPE, cwd=ROOT)
        async with asyncio.timeout(READY_TIMEOUT):  # generous for a loaded machine: an exit ends the wait at once
            while True:
                line = (await self.process.stdout.readline()).decode()
                if not line:
                    raise RuntimeError("localcluster exited before listening")
                if line.startswith("localcluster listening on "):
                    self.url = line.split()[3]
                    break
        self.credentials = Credentials.from_kubeconfig(self.kubeconfig)
        configuration = client.Configuration()
        await config.load_kube_config(str(self.kubeconfig), client_configuration=configuration)
        self.api = await self._stack.enter_async_context(client.ApiClient(configuration))
        self.jobs = Jobs(self.api)
        return self

    async def __aexit__(self, *exc) -> None:
        await self._stack.aclose()
        await terminate(self.process)

    def session(self, **kwargs) -> aiohttp.ClientSession:
        """A raw HTTP session as the cluster's admin (its token sent, its certificate trusted)."""
        return self.credentials.session(**kwargs)

    async def requests(self) -> dict[tuple[str, str], int]:
        """What every client asked of the API server so far: (verb, resource) -> count."""
        async with self.session() as session, session.get(f"{self.url}/_localcluster/requests") as answer:
            rows = (await answer.json())["requests"]
        counts: dict[tuple[str, str], int] = {}
        for row in rows:
            counts[(row["verb"], row["resource"])] = counts.get((row["verb"], row["resource"]), 0) + row["count"]
        return counts

    async def lease(self, name: str = "genericjob-controller", namespace: str = "default") -> dict | None:
        """The Lease as the API server stores it (camelCase, MicroTimes as written); None before it exists."""
        return await self._lease_request("GET", name, namespace)

    async def replace_lease(self, lease: dict) -> dict:
        return await self._lease_request("PUT", lease["metadata"]["name"], lease["metadata"]["namespace"], lease)

    async def _lease_request(self, method: str, name: str, namespace: str, body: dict | None = None
                             ) -> dict | None:
        response = await self.api.call_api(
            f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", method, body=body,
            header_params={"Accept": "application/json", "Content-Type": "application/json"},
            auth_settings=["BearerToken"], _preload_content=False)
        try:
            if response.status == 404 and method == "GET":
                return None
            assert response.status == 200, await response.text()
            return await response.json()
        finally:
            response.release()


class ControllerProcess:
    """`genericjob-controller run` against a LocalClusterProcess, JSON logs on stderr collected as dicts."""

    def __init__(self, cluster: LocalClusterProcess, *flags: str, env: dict[str, str] | None = None,
                 lease: dict | None = None) -> None:
        self.cluster = cluster
        timings = timing_flags(**(lease or LEASE))
        self.argv = [str(CLI), "run", "--kubeconfig", str(cluster.kubeconfig), "--metrics-address", "127.0.0.1:0",
                     "--no-metrics-secure", "--health-address", "127.0.0.1:0", "--log-format", "json",
                     "--shutdown-timeout", "1", "--restart-backoff", "0", "--webhook-port", "0",
                     *timings, *flags]
        self.env = {**os.environ, **(env or {})}
        self.process: asyncio.subprocess.Process | None = None
        self.logs: list[dict] = []
        self.raw: list[str] = []
        self.url = ""
        self.identity = ""
        self._reader: asyncio.Task | None = None
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> ControllerProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def start(self, ready: bool = True) -> None:
        self.process = await asyncio.create_subprocess_exec(*self.argv, stderr=asyncio.subprocess.PIPE,
                                                            env=self.env, cwd=ROOT)
        self._reader = asyncio.get_running_loop().create_task(self._read_logs())
        self._session = aiohttp.ClientSession()
        # READY_TIMEOUT: at a load of 10-13 on two cores the program's imports alone took more than 15 s (the chaos
        # run's first controller never got to "serving metrics" in time); a process that exits fails the wait at once.
        serving = await self.wait_log(lambda r: r.get("event") == "serving metrics", READY_TIMEOUT, "metrics address")
        self.url = f"http://{serving['address']}"
        started = await self.wait_log(lambda r: r.get("event") == "starting", READY_TIMEOUT)
        self.identity = started.get("identity") or ""
        if ready:
            await until(lambda: self.get_status("/readyz", 200), READY_TIMEOUT, "/readyz 200")

    async def close(self) -> None:
        await terminate(self.process)
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        if self._session is not None:
            await self._session.close()

    async def _read_logs(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        async for line in self.process.stderr:
            text = line.decode(errors="replace").rstrip("\n")
            self.raw.append(text)
            with contextlib.suppress(ValueError):
                record = json.loads(text)
                if isinstance(record, dict):
                    self.logs.append(record)

    async def wait_log(self, predicate, timeout: float = 15.0, what: str = "log line") -> dict:
        def found():
            if self.process is not None and self.process.returncode is not None and self._reader.done():
                pytest.fail(f"controller exited ({self.process.returncode}) before {what}; logs:\n"
                            + "\n".join(self.raw[-30:]))
            return next((r for r in self.logs if predicate(r)), None)

        return await until(found, timeout, what)

    async def exit_reason(self) -> str:
        """Wait for the process to exit; the reason its "stopped" line gives (manager.py), or what it died of."""
        assert self.process is not None
        code = await self.process.wait()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        stopped = next((r for r in reversed(self.logs) if r.get("event") == "stopped"), None)
        if stopped is not None:
            return str(stopped.get("reason", ""))
        return f"signal {-code}" if code < 0 else f"no 'stopped' line; last lines: {self.raw[-5:]}"

    async def get(self, path: str) -> tuple[int, str]:
        assert self._session is not None
        async with self._session.get(self.url + path) as answer:
            return answer.status, await answer.text()

    async def get_status(self, path: str, wanted: int) -> bool:
        with contextlib.suppress(aiohttp.ClientError):
            return (await self.get(path))[0] == wanted
        return False

    async def metrics(self) -> Samples:
        status, text = await self.get("/metrics")
        assert status == 200
        return Samples(text)

    async def leading(self) -> bool:
        with contextlib.suppress(aiohttp.ClientError):
            return (await self.metrics()).value("leader_election_master_status") == 1
        return False

    def send(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    async def exit_code(self, timeout: float = 15.0) -> int:
        assert self.process is not None
        async with asyncio.timeout(timeout):
            return await self.process.wait()


class Samples:
    """A /metrics page: sample values by name and labels."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
        self.names = {s.name for s in self.samples}

    def all(self, metric: str, /, **labels: str) -> list:
        return [s for s in self.samples if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items())]

    def value(self, metric: str, /, **labels: str) -> float:
        """The sum of the matching samples (0 if none)."""
        return sum(s.value for s in self.all(metric, **labels))


class LocalLines:
    """What `local` printed, read the same whether it runs as a process (LocalProcess) or in the test's
    (local_inprocess.LocalRun): `lines`, and the kubeconfig and port they name."""

    lines: list[str]

    @property
    def kubeconfig(self) -> Path:
        """The kubeconfig `local` said it wrote (its `export KUBECONFIG=...` line)."""
        found = next(line for line in self.lines if "export KUBECONFIG=" in line)
        return Path(found.partition("export KUBECONFIG=")[2].strip())

    @property
    def port(self) -> int:
        found = next(line for line in self.lines if line.startswith("localcluster listening on "))
        return int(found.split()[3].rpartition(":")[2])


class LocalProcess(LocalLines):
    """`genericjob-controller local FLAGS...` (the console script) in the background, as a user runs it; its
    output lines collected as they come.

        async with LocalProcess(tmp_path, "--logs") as local:
            kubectl = Kubectl(local.kubeconfig, tmp_path)
            await local.line(r"finished: .* Succeeded")
    """

    def __init__(self, cwd: Path, *flags: str, argv: list[str] | None = None, env: dict[str, str] | None = None,
                 ready: str = r"^ready: ") -> None:
        self.argv = argv or [str(CLI), "local", *flags]
        self.cwd = cwd
        self.env = {**os.environ, **(env or {})}
        self.ready = ready
        self.process: asyncio.subprocess.Process | None = None
        self.lines: list[str] = []
        self.err = b""
        self._reader: asyncio.Task | None = None
        self._new_line = asyncio.Event()

    async def __aenter__(self) -> LocalProcess:
        self.process = await asyncio.create_subprocess_exec(
            *self.argv, cwd=self.cwd, env=self.env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        self._reader = asyncio.get_running_loop().create_task(self._read())
        try:
            await self.line(self.ready, timeout=READY_TIMEOUT)
        except BaseException:  # (cancelled too: started beside another that failed) never a process left behind
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc) -> None:
        await terminate(self.process)
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None and self.process.stderr is not None

        async def out() -> None:
            async for raw in self.process.stdout:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self._new_line.set()

        async def err() -> None:  # read as it comes, so that a chatty stderr never blocks the program
            self.err = await self.process.stderr.read()

        await asyncio.gather(out(), err())
        self._new_line.set()

    async def line(self, pattern: str, timeout: float = LINE_TIMEOUT) -> re.Match:
        """The first output line (from the start) matching the regular expression."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    self._new_line.clear()
                    found = next((m for m in map(re.compile(pattern).search, self.lines) if m), None)
                    if found:
                        return found
                    if self._reader is not None and self._reader.done():
                        pytest.fail(f"local exited ({self.process.returncode}) before printing {pattern!r}:\n"
                                    + "\n".join(self.lines) + "\n" + self.err.decode(errors="replace"))
                    await self._new_line.wait()
        except TimeoutError:
            pytest.fail(f"local printed no line matching {pattern!r} in {timeout}s:\n" + "\n".join(self.lines))

    async def stop(self, signum: int = signal.SIGINT, timeout: float = 60.0) -> int:
        """Send the signal (Ctrl-C by default) and wait for the exit code."""
        assert self.process is not None
        self.process.send_signal(signum)
        async with asyncio.timeout(timeout):
            await asyncio.gather(self._reader, return_exceptions=True)
            return await self.process.wait()
