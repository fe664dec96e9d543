"""The chaos run's checks once the faults stop: every job settles in the phase its scripts dictate, counts the
restarts they allow, agrees with its pods, and leaves nothing behind once deleted (pods, Services, PodGroups, and the
ConfigMaps and Secrets a job owns: an MPIJob's)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter

from kubernetes_asyncio.client.exceptions import ApiException

from controller.kinds.genericjob.models import GROUP, VERSION

from .audit import TERMINAL, job_of, job_plurals, uid_finished
from .jobs import DEBUG, PAUSE, JobPlan


class ChaosChecks:
    """Chaos's checks (a mixin: the plans, the report, the audit and the API calls are Chaos's)."""

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
                if plan.mode == DEBUG:
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
        self.report.phases[f"{plan.phase_key}/{phase}"] += 1
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
            if count > replica.limit or (plan.mode != PAUSE and count > replica.restarts):
                self.violate(plan.name, f"{replica.name} restarted {count} times: limit {replica.limit}, "
                                        f"scripts allow {replica.restarts}")
            for attempt, uid in enumerate(uids):  # a pod that finished by itself did what its script says
                finished = self.audit.natural.get(uid)
                wanted = "Succeeded" if replica.succeeds(attempt) else "Failed"
                if plan.mode != PAUSE and finished is not None and finished != wanted:
                    self.violate(plan.name, f"{replica.name} attempt {attempt} ({uid}) {finished}, script: {wanted}")
            if plan.mode in (PAUSE, DEBUG):
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
            jobs = [j for plural in sorted(job_plurals()) for j in (await self.call(
                self.cluster.jobs.custom.list_namespaced_custom_object, GROUP, VERSION, "default", plural))["items"]]
            core = self.cluster.jobs.core
            owned = [o.metadata.name for listing in (core.list_namespaced_config_map, core.list_namespaced_secret)
                     for o in (await self.call(listing, "default")).items if o.metadata.owner_references]
            return pods + services + groups + owned + [j["metadata"]["name"] for j in jobs]

        left: list[str] = []
        for _ in range(120):
            left = await leftovers()
            if not left:
                return
            await asyncio.sleep(0.25)
        self.violate("", f"after deleting every job, left behind: {sorted(left)[:20]}")


def agreement(plan: JobPlan, job: dict, live: dict, services: int) -> str | None:
    status = job.get("status") or {}
    records = plan.records(job)
    counts = Counter(r["phase"].lower() for r in records)
    aggregate = status.get("aggregate") or {}
    if any(aggregate.get(k, 0) != counts.get(k, 0) for k in set(aggregate) | set(counts)):
        return f"aggregate {aggregate} but replica phases {dict(counts)}"
    for task in status.get("tasks") or ():
        if task.get("restartCount", 0) != sum(r.get("restartCount", 0) for r in
                                              task.get(plan.contract.records) or ()):
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
