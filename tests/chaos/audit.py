"""The chaos run's reading of localcluster's audit log: every pod and job write, folded per job and pod
and checked as it arrives (a pod made twice at once, or after its job finished; a finished job that changes)."""

from __future__ import annotations

from controller.kinds import registry

from .jobs import JobPlan


def job_of(labels: dict | None) -> str:
    """The job a pod or Service belongs to, whatever its kind (each kind labels its children its own way)."""
    labels = labels or {}
    return next((labels[kind.api.name_label] for kind in registry.KINDS.values() if kind.api.name_label in labels), "")


def job_plurals() -> set[str]:
    return {kind.api.plural for kind in registry.KINDS.values()}


TERMINAL = ("Succeeded", "Failed")


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
            elif r["resource"] in job_plurals():  # a job of any kind
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


def uid_finished(audit: Audit, uid: str) -> bool:
    return uid in audit.natural
