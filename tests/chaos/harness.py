"""The chaos run: localcluster and two `genericjob-controller run` processes (leader election) as
subprocesses, seeded jobs with scripted pods, a seeded fault loop, and invariants checked from
localcluster's audit log (every pod and custom-object write in resourceVersion order, which no
dropped watch or expired history can lose; it keeps the last --audit-size writes, and a gap in what
was read is a violation: audit.py) and from the API once things settle (checks.py).

    report = await run_chaos(Settings(jobs=50, chaos_seconds=40, seed=7), workdir)
    assert not report.violations, report.describe()
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from kubernetes_asyncio.client.exceptions import ApiException

from controller.kinds.genericjob.kind import GENERICJOB
from tests.e2e.conftest import Jobs
from tests.program.subprocesses import ControllerProcess, LocalClusterProcess, terminate

from .audit import TERMINAL, Audit, job_of, uid_finished
from .checks import ChaosChecks, agreement
from .jobs import PAUSE, SHARE, JobPlan, make_jobs

LABEL_JOB = GENERICJOB.api.name_label
WRITES = ("create", "update", "patch", "delete", "deletecollection")
LEASE = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.25}


@dataclass
class Settings:
    jobs: int = 50
    chaos_seconds: float = 40.0  # the fault loop runs this long; jobs are submitted in its first half
    seed: int = 1
    settle_timeout: float = 90.0  # after the faults stop, every job must have its phase within this
    fault_interval: tuple[float, float] = (0.4, 1.5)
    kill_spacing: float = 4.0  # at least this long between two leader kills
    share: float = SHARE  # of the normal jobs, the share of the kinds other than GenericJob (jobs.py)


@dataclass
class Report:
    settings: Settings
    faults: Counter = field(default_factory=Counter)
    failovers: int = 0
    pods: int = 0
    restarts: int = 0
    phases: Counter = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    seconds: float = 0.0
    details: list[str] = field(default_factory=list)

    def describe(self) -> str:
        lines = [f"chaos run: seed {self.settings.seed}, {self.settings.jobs} jobs, {self.seconds:.0f} s, "
                 f"{self.pods} pods, {self.restarts} restarts, {self.failovers} lease transitions",
                 "phases: " + ", ".join(f"{k} {v}" for k, v in sorted(self.phases.items())),
                 "faults: " + ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())),
                 f"invariant violations: {len(self.violations)}"]
        lines += [f"  - {v}" for v in self.violations]
        return "\n".join(lines + self.details)


class Chaos(ChaosChecks):
    def __init__(self, settings: Settings, workdir: Path) -> None:
        self.settings = settings
        self.workdir = workdir
        self.plans = {p.name: p for p in make_jobs(settings.seed, settings.jobs, settings.share)}
        self.report = Report(settings)
        self.audit = Audit(self.plans, self.violate)
        self.cluster: LocalClusterProcess
        self.controllers: list[ControllerProcess] = []  # running
        self.every: list[ControllerProcess] = []  # ever started
        self.scrapes: dict[int, list[tuple[bool, float]]] = {}  # id(process) -> (leading, writes)
        self.bad_jobs: set[str] = set()
        self.session: aiohttp.ClientSession
        self.starting: set[asyncio.Task] = set()
        self._kind_jobs: dict[str, Jobs] = {}  # the API of each kind, by plural

    def violate(self, job: str, message: str) -> None:
        text = f"{job}: {message}" if job else message
        if text not in self.report.violations:
            self.report.violations.append(text)
            if job:
                self.bad_jobs.add(job)

    # --- API access that rides out the faults ---------------------------------------------------

    async def admin(self, method: str, action: str, body: dict | None = None) -> dict:
        for _ in range(200):
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with self.session.request(method, f"{self.cluster.url}/_localcluster/{action}",
                                                json=body) as answer:
                    if answer.status == 200:
                        return await answer.json()
            await asyncio.sleep(0.05)
        raise RuntimeError(f"localcluster admin {action} unreachable")

    async def call(self, fn, *args, **kwargs):
        """An API call retried through injected 500s/429s and restarts (404 raises)."""
        for attempt in range(400):
            try:
                return await fn(*args, **kwargs)
            except ApiException as err:
                if err.status not in (0, 409, 429, 500, 503) or attempt == 399:
                    raise
            except (aiohttp.ClientError, OSError, TimeoutError):
                if attempt == 399:
                    raise
            await asyncio.sleep(0.05)

    async def list_pods(self) -> list:
        return (await self.call(self.cluster.jobs.core.list_namespaced_pod, "default")).items

    def jobs(self, name: str) -> Jobs:
        """The API of the job's kind."""
        plan = self.plans[name]
        if plan.plural not in self._kind_jobs:
            self._kind_jobs[plan.plural] = Jobs(self.cluster.api, plural=plan.plural, label_job_name=plan.label)
        return self._kind_jobs[plan.plural]

    async def get_job(self, name: str) -> dict:
        return await self.call(self.jobs(name).get, name)

    # --- processes ------------------------------------------------------------------------------

    async def start_controller(self) -> ControllerProcess:
        made = ControllerProcess(self.cluster, "--qps", "0", "--workers", "4", lease=LEASE)
        self.every.append(made)
        self.controllers.append(made)
        await made.start(ready=False)
        return made

    async def leader(self) -> ControllerProcess | None:
        for c in list(self.controllers):
            if c.process.returncode is None and await c.leading():
                return c
        return None

    async def scrape(self) -> None:
        for c in list(self.every):
            if c.process is None or c.process.returncode is not None or not c.url:
                continue
            with contextlib.suppress(aiohttp.ClientError, OSError, AssertionError, ValueError):
                samples = await c.metrics()
                leading = samples.value("leader_election_master_status") == 1
                writes = sum(s.value for s in samples.all("rest_client_requests_total")
                             if s.labels.get("verb") in WRITES and s.labels.get("resource") != "leases")
                seen = self.scrapes.setdefault(id(c), [])
                ever_led = any(led for led, _ in seen) or leading
                if not ever_led and writes:
                    self.violate("", f"controller {c.identity} made {writes:.0f} writes without ever leading")
                if seen and not seen[-1][0] and not leading and ever_led and writes > seen[-1][1]:
                    self.violate("", f"controller {c.identity} wrote after it stopped leading")
                seen.append((leading, writes))

    # --- the loops ------------------------------------------------------------------------------

    async def observe(self, stop: asyncio.Event) -> None:
        while True:
            self.audit.read(await self.admin("GET", f"audit?since={self.audit.next}"))
            await self.scrape()
            if stop.is_set():
                return
            await asyncio.sleep(0.25)

    async def submit(self, rng: random.Random) -> None:
        start = time.monotonic()
        plans = list(self.plans.values())
        window = self.settings.chaos_seconds / 2
        for index, plan in enumerate(plans):
            await asyncio.sleep(max(0.0, start + window * index / len(plans) - time.monotonic()))
            await self.admin("POST", "scripts", plan.scripts)
            await self.call(self.jobs(plan.name).submit, plan.body)
            if plan.mode == PAUSE:
                task = asyncio.get_running_loop().create_task(self.pause_resume(plan))
                self.starting.add(task)

    async def pause_resume(self, plan: JobPlan) -> None:
        await asyncio.sleep(plan.pause_at)
        await self.call(self.jobs(plan.name).patch, plan.name, {"spec": {"runMode": {"pause": {"enabled": True}}}})
        self.report.faults["pause+resume"] += 1
        await asyncio.sleep(plan.resume_after)
        await self.call(self.jobs(plan.name).patch, plan.name, {"spec": {"runMode": {"pause": {"enabled": False}}}})

    async def faults(self, rng: random.Random, until: float) -> None:
        last_kill = time.monotonic()
        kinds = ["drop-watches", "expire-history", "500", "429", "latency", "restart", "kill-leader"]
        while time.monotonic() < until:
            await asyncio.sleep(rng.uniform(*self.settings.fault_interval))
            kind = rng.choices(kinds, weights=[3, 2, 2, 2, 2, 1, 2])[0]
            if kind == "drop-watches":
                await self.admin("POST", "drop-watches")
            elif kind == "expire-history":
                await self.admin("POST", "expire-history")
            elif kind in ("500", "429"):
                await self.admin("POST", "faults", {"error_rate": rng.uniform(0.05, 0.2), "error_code": int(kind),
                                                    "retry_after": 1})
                await asyncio.sleep(rng.uniform(0.3, 1.5))
                await self.admin("POST", "faults", {})
            elif kind == "latency":
                await self.admin("POST", "faults", {"latency": rng.uniform(0.02, 0.2)})
                await asyncio.sleep(rng.uniform(0.5, 1.5))
                await self.admin("POST", "faults", {})
            elif kind == "restart":
                await self.admin("POST", "restart", {"downtime": rng.uniform(0.1, 0.6)})
                await asyncio.sleep(0.7)
            elif kind == "kill-leader":
                if time.monotonic() - last_kill < self.settings.kill_spacing:
                    continue
                leader = await self.leader()
                if leader is None:
                    continue
                leader.send(signal.SIGKILL)
                await leader.exit_code()
                self.controllers.remove(leader)
                last_kill = time.monotonic()
                await self.start_controller()  # two are always running
            self.report.faults[kind] += 1
        await self.admin("POST", "faults", {})

    # --- the run --------------------------------------------------------------------------------

    async def run(self) -> Report:
        began = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        rng = random.Random(self.settings.seed * 7919 + 1)
        async with LocalClusterProcess(self.workdir) as cluster, cluster.session() as session:
            self.cluster, self.session = cluster, session
            try:
                await asyncio.gather(self.start_controller(), self.start_controller())
                stop = asyncio.Event()
                observer = asyncio.get_running_loop().create_task(self.observe(stop))
                chaos_end = time.monotonic() + self.settings.chaos_seconds
                await asyncio.gather(self.submit(rng), self.faults(random.Random(self.settings.seed), chaos_end))
                await asyncio.gather(*self.starting)
                last = await self.settle()
                for name, plan in self.plans.items():
                    self.check_phase(plan, last[name])
                stop.set()
                await observer
                settled = [n for n in self.plans if n not in self.bad_jobs]
                await self.check_agreement(settled)
                self.audit.read(await self.admin("GET", f"audit?since={self.audit.next}"))
                for name in settled:
                    self.check_restarts(self.plans[name], await self.get_job(name))
                lease = await cluster.lease()
                self.report.failovers = (lease or {}).get("spec", {}).get("leaseTransitions", 0)
                await self.scrape()
                await self.check_deletion()
                for c in self.controllers:
                    if not await c.get_status("/healthz", 200):
                        self.violate("", f"controller {c.identity} unhealthy at the end")
            finally:
                self.report.seconds = time.monotonic() - began
                self.explain()
                for c in self.every:
                    await c.close()
        return self.report

    def explain(self) -> None:
        """For each job that broke an invariant: its pods' history and the controllers' log lines."""
        logs = self.workdir / "controllers.log"
        with logs.open("w") as out:
            for index, c in enumerate(self.every):
                for line in c.raw:
                    out.write(f"[{index} {c.identity}] {line}\n")
        for job in sorted(self.bad_jobs)[:10]:
            self.report.details.append("")
            self.report.details += self.audit.history(job)
            key = f"default/{job}"
            for index, c in enumerate(self.every):
                for record in c.logs:
                    if record.get("job") in (key, job) or job in json.dumps(record.get("key", "")):
                        self.report.details.append(f"  [controller {index}] {json.dumps(record)[:400]}")
        if self.bad_jobs or self.report.violations:
            self.report.details.append(f"controller logs: {logs}")


async def run_chaos(settings: Settings, workdir: Path, hard_timeout: float | None = None) -> Report:
    chaos = Chaos(settings, workdir)
    limit = hard_timeout or settings.chaos_seconds + settings.settle_timeout + 120
    try:
        async with asyncio.timeout(limit):
            return await chaos.run()
    except TimeoutError:
        chaos.violate("", f"the run exceeded its hard timeout of {limit:.0f} s")
        return chaos.report
    finally:
        for c in chaos.every:
            await terminate(c.process, timeout=2)


__all__ = ["LABEL_JOB", "TERMINAL", "Audit", "Chaos", "Report", "Settings", "agreement", "job_of", "run_chaos",
           "uid_finished"]
