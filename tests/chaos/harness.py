"""The chaos run: localcluster and two `genericjob-controller run` processes (leader election) as
subprocesses, seeded jobs with scripted pods, a seeded fault loop, and invariants checked from
localcluster's audit log (every pod and custom-object write in resourceVersion order, which no
dropped watch or expired history can lose; it keeps the last --audit-size writes, and a gap in what
was read is a violation) and from the API once things settle.

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

from controller.kinds.genericjob.models import GROUP, PLURAL, VERSION
from tests.e2e.conftest import Jobs
from tests.program.subprocesses import ControllerProcess, LocalClusterProcess, terminate

from .jobs import DEBUG, GENERICJOB, LABELS, PAUSE, SHORT, TF_SHARE, JobPlan, make_jobs

LABEL_JOB = LABELS[PLURAL]


def job_of(labels: dict | None) -> str:
    """The job a pod or Service belongs to, whatever its kind (each kind labels its children its own way)."""
    labels = labels or {}
    return next((labels[key] for key in LABELS.values() if key in labels), "")
WRITES = ("create", "update", "patch", "delete", "deletecollection")
TERMINAL = ("Succeeded", "Failed")
LEASE = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.25}


@dataclass
class Settings:
    jobs: int = 50
    chaos_seconds: float = 40.0  # the fault loop runs this long; jobs are submitted in its first half
    seed: int = 1
    settle_timeout: float = 90.0  # after the faults stop, every job must have its phase within this
    fault_interval: tuple[float, float] = (0.4, 1.5)
    kill_spacing: float = 4.0  # at least this long between two leader kills
    tf_share: float = TF_SHARE  # of the normal jobs, the share that are TensorFlowTrainingJobs


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


class Audit:
    """What localcluster's audit log says so far, folded per job and pod, checked as it arrives."""

    def __init__(self, plans: dict[str, JobPlan], violate) -> None:
        self.plans = plans
        self.violate = violate
        self.next = 0
        self.by_name: dict[str, list[str]] = {}  # pod name -> uids in creation order
        self.live: dict[str, str] = {}  # pod name -> uid not yet deleted
        self.pod_job: dict[str, str] = {}  # pod name -> job
        self.phases: dict[str, list[tuple[int, str | None, bool]]] = {}  # uid -> (rv, phase, deleting)
        self.natural: dict[str, str] = {}  # uid -> phase it finished in by itself (not while deleting)
        self.job_terminal: dict[str, tuple[int, str]] = {}  # job -> (rv, phase)
        self.job_phases: dict[str, list[str]] = {}

    def read(self, answer: dict) -> None:
        """Take an answer of `GET audit?since=self.next`. The log is a ring: records older than its `first`
        are gone, and a gap means invariants went unchecked, which is a violation, never a silent miss."""
        first = answer.get("first", 0)
        if first > self.next:
            self.violate("", f"the audit log dropped records {self.next}..{first - 1} before they were read "
                             f"(raise localcluster's --audit-size): the invariants over them went unchecked")
        self.feed(answer["records"])
        self.next = answer["next"]

    def feed(self, records: list[dict]) -> None:
        for r in records:
            if r["resource"] == "pods":
                self._pod(r)
            elif r["resource"] in LABELS:  # a job of either kind
                self._job(r)

    def _job(self, r: dict) -> None:
        name, phase = r["name"], r["phase"]
        seen = self.job_phases.setdefault(name, [])
        if phase and (not seen or seen[-1] != phase):
            seen.append(phase)
        if name in self.job_terminal and r["type"] != "DELETED":
            _, was = self.job_terminal[name]
            if phase != was:
                self.violate(name, f"a finished job changed phase: {was} -> {phase} at rv {r['rv']}")
        elif phase in TERMINAL:
            self.job_terminal[name] = (r["rv"], phase)

    def _pod(self, r: dict) -> None:
        name, uid, job = r["name"], r["uid"], job_of(r["labels"])
        self.pod_job[name] = job
        if r["type"] == "ADDED":
            self.by_name.setdefault(name, []).append(uid)
            if name in self.live:
                self.violate(job, f"pod {name} uid {uid} created while uid {self.live[name]} still exists")
            self.live[name] = uid
            if job in self.job_terminal and r["rv"] > self.job_terminal[job][0]:
                self.violate(job, f"pod {name} uid {uid} created at rv {r['rv']}, after the job finished "
                                  f"({self.job_terminal[job][1]} at rv {self.job_terminal[job][0]})")
        self.phases.setdefault(uid, []).append((r["rv"], r["phase"], r["deleting"]))
        if r["phase"] in TERMINAL and not r["deleting"] and uid not in self.natural:
            self.natural[uid] = r["phase"]
        if r["type"] == "DELETED" and self.live.get(name) == uid:
            del self.live[name]

    def history(self, job: str) -> list[str]:
        lines = [f"job {job} phases: {' -> '.join(self.job_phases.get(job, []))}"]
        for name in sorted(n for n, j in self.pod_job.items() if j == job):
            for uid in self.by_name.get(name, []):
                steps = ", ".join(f"{p}{'(deleting)' if d else ''}@{rv}" for rv, p, d in self.phases.get(uid, []))
                lines.append(f"  {name} {uid[:8]}: {steps}")
        return lines


class Chaos:
    def __init__(self, settings: Settings, workdir: Path) -> None:
        self.settings = settings
        self.workdir = workdir
        self.plans = {p.name: p for p in make_jobs(settings.seed, settings.jobs, settings.tf_share)}
        self.report = Report(settings)
        self.audit = Audit(self.plans, self.violate)
        self.cluster: LocalClusterProcess
        self.controllers: list[ControllerProcess] = []  # running
        self.every: list[ControllerProcess] = []  # ever started
        self.scrapes: dict[int, list[tuple[bool, float]]] = {}  # id(process) -> (leading, writes)
        self.bad_jobs: set[str] = set()
        self.session: aiohttp.ClientSession
        self.starting: set[asyncio.Task] = set()
        self._kind_jobs: dict[str, Jobs] = {}  # the API of each training kind, by plural

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
        plural = self.plans[name].plural
        if plural == GENERICJOB:
            return self.cluster.jobs
        if plural not in self._kind_jobs:
            self._kind_jobs[plural] = Jobs(self.cluster.api, plural=plural, label_job_name=LABELS[plural])
        return self._kind_jobs[plural]

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
            if plan.kind == PAUSE:
                task = asyncio.get_running_loop().create_task(self.pause_resume(plan))
                self.starting.add(task)

    async def pause_resume(self, plan: JobPlan) -> None:
        await asyncio.sleep(plan.pause_at)
        await self.call(self.cluster.jobs.patch, plan.name, {"spec": {"runMode": {"pause": {"enabled": True}}}})
        self.report.faults["pause+resume"] += 1
        await asyncio.sleep(plan.resume_after)
        await self.call(self.cluster.jobs.patch, plan.name, {"spec": {"runMode": {"pause": {"enabled": False}}}})

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

    # --- the checks -----------------------------------------------------------------------------

    async def settle(self) -> dict[str, dict]:
        """Wait until every job shows the phase its scripts dictate; return the jobs as last read."""
        deadline = time.monotonic() + self.settings.settle_timeout
        pending = set(self.plans)
        last: dict[str, dict] = {}
        while pending and time.monotonic() < deadline:
            pods = await self.list_pods()
            for name in sorted(pending):
                job = last[name] = await self.get_job(name)
                phase = (job.get("status") or {}).get("phase")
                plan = self.plans[name]
                if plan.kind == DEBUG:
                    mine = [p for p in pods if job_of(p.metadata.labels) == name]
                    done = phase == "Running" and len(mine) == len(plan.replicas) and all(
                        p.status.phase == "Running" for p in mine)
                else:
                    done = phase in TERMINAL
                if done:
                    pending.discard(name)
            await asyncio.sleep(0.5)
        for name in sorted(pending):
            phase = (last[name].get("status") or {}).get("phase")
            self.violate(name, f"not settled within {self.settings.settle_timeout:.0f} s: phase {phase}, "
                               f"expected {self.plans[name].expected}")
        return last

    def check_phase(self, plan: JobPlan, job: dict) -> None:
        phase = (job.get("status") or {}).get("phase")
        self.report.phases[f"{plan.kind if plan.plural == GENERICJOB else SHORT[plan.plural]}/{phase}"] += 1
        if phase != plan.expected:
            self.violate(plan.name, f"phase {phase}, expected {plan.expected} (replicas: "
                         + ", ".join(f"{r.name} {r.policy}/{r.limit} {r.attempts} -> {r.outcome}"
                                     for r in plan.replicas) + ")")

    def check_restarts(self, plan: JobPlan, job: dict) -> None:
        records = {r["name"]: r for r in plan.records(job)}
        for replica in plan.replicas:
            record = records.get(replica.name)
            if record is None:
                self.violate(plan.name, f"no status record for {replica.name}")
                continue
            count = int(record.get("restartCount") or 0)
            self.report.restarts += count
            uids = self.audit.by_name.get(replica.name, [])
            self.report.pods += len(uids)
            if count > replica.limit or (plan.kind != PAUSE and count > replica.restarts):
                self.violate(plan.name, f"{replica.name} restarted {count} times: limit {replica.limit}, "
                                        f"scripts allow {replica.restarts}")
            for attempt, uid in enumerate(uids):  # a pod that finished by itself did what its script says
                finished = self.audit.natural.get(uid)
                wanted = "Succeeded" if replica.succeeds(attempt) else "Failed"
                if plan.kind != PAUSE and finished is not None and finished != wanted:
                    self.violate(plan.name, f"{replica.name} attempt {attempt} ({uid}) {finished}, script: {wanted}")
            if plan.kind in (PAUSE, DEBUG):
                if count:
                    self.violate(plan.name, f"{replica.name} restarted {count} times under policy Never/debug")
                continue
            # The retired pods: finished by themselves and followed by another, or named as retired last.
            retired = {uid for i, uid in enumerate(uids) if uid in self.audit.natural and i + 1 < len(uids)}
            last = record.get("lastRestartUid") or ""
            if last and uids and last == uids[-1] and uid_finished(self.audit, last):
                retired.add(last)
            eligible = ("Failed", "Succeeded") if replica.policy == "Always" else ("Failed",)
            wrong = [u for u in retired if self.audit.natural[u] not in eligible]
            if count != len(retired) or wrong or len(uids) > len(retired) + 1:
                self.violate(plan.name, f"{replica.name}: restartCount {count} but pods retired after finishing "
                                        f"{sorted(retired)} ({len(uids)} pods, not eligible: {wrong})")

    async def check_agreement(self, names: list[str]) -> None:
        """Once nothing moves, each job's status agrees with its pods; clean-up done as its policy says."""
        problems: dict[str, str] = {}
        for _ in range(40):
            problems = {}
            pods = await self.list_pods()
            live = {p.metadata.name: p for p in pods if p.metadata.deletion_timestamp is None}
            services = (await self.call(self.cluster.jobs.core.list_namespaced_service, "default")).items
            service_jobs = Counter(job_of(s.metadata.labels) for s in services)
            for name in names:
                plan, job = self.plans[name], await self.get_job(name)
                problem = agreement(plan, job, live, service_jobs[name])
                if problem:
                    problems[name] = problem
            if not problems:
                return
            await asyncio.sleep(0.25)
        for name, problem in problems.items():
            self.violate(name, problem)

    async def check_deletion(self) -> None:
        for name in self.plans:
            with contextlib.suppress(ApiException):
                await self.call(self.jobs(name).delete, name)

        async def leftovers() -> list[str]:
            pods = [p.metadata.name for p in await self.list_pods()]
            services = [s.metadata.name for s in
                        (await self.call(self.cluster.jobs.core.list_namespaced_service, "default")).items
                        if s.metadata.name != "kubernetes"]
            groups = [g["metadata"]["name"] for g in await self.call(self.cluster.jobs.podgroups)]
            jobs = [j for plural in LABELS for j in (await self.call(
                self.cluster.jobs.custom.list_namespaced_custom_object, GROUP, VERSION, "default", plural))["items"]]
            return pods + services + groups + [j["metadata"]["name"] for j in jobs]

        left: list[str] = []
        for _ in range(120):
            left = await leftovers()
            if not left:
                return
            await asyncio.sleep(0.25)
        self.violate("", f"after deleting every job, left behind: {sorted(left)[:20]}")

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


def uid_finished(audit: Audit, uid: str) -> bool:
    return uid in audit.natural


def agreement(plan: JobPlan, job: dict, live: dict, services: int) -> str | None:
    status = job.get("status") or {}
    records = plan.records(job)
    counts = Counter(r["phase"].lower() for r in records)
    aggregate = status.get("aggregate") or {}
    if any(aggregate.get(k, 0) != counts.get(k, 0) for k in set(aggregate) | set(counts)):
        return f"aggregate {aggregate} but replica phases {dict(counts)}"
    for task in status.get("tasks") or ():
        if task.get("restartCount", 0) != sum(r.get("restartCount", 0) for r in
                                              task.get("replicas") or task.get("replicaStatus") or ()):
            return f"task {task['type']} restartCount disagrees with its replicas"
    for record in records:
        pod = live.get(record["name"])
        if pod is not None and (pod.metadata.uid != record.get("uid") or pod.status.phase != record["phase"]):
            return (f"{record['name']}: status says {record.get('uid')} {record['phase']}, pod is {pod.metadata.uid} "
                    f"{pod.status.phase}")
        if pod is None and record["phase"] in ("Pending", "Running", "Creating"):
            return f"{record['name']}: status says {record['phase']} but there is no pod"
    if status.get("phase") in TERMINAL:
        mine = [p for p in live.values() if job_of(p.metadata.labels) == plan.name]
        if plan.cleanup == "All" and (mine or services):
            return f"clean-up All left {len(mine)} pods and {services} services"
        if plan.cleanup == "Unfinished" and any(p.status.phase not in TERMINAL for p in mine):
            return "clean-up Unfinished left unfinished pods"
    return None


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
