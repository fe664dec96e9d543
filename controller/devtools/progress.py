"""Follow submitted jobs (of every kind) through the status the controller writes, one printed line per change.

    14:02:11  generic-example  Running    worker-0 Running, worker-1 Running, worker-2 Pending, worker-3 Creating

Only what the API shows is used (an informer per job kind, like `kubectl get -w`), so what is
printed is what a user of the cluster would see. A line is printed when the job's phase or a
replica's phase or restart count changes, or why a replica failed or waits (reasons.py: its pod's
container states and Warning Events). Jobs with many replicas are shown as counts per type; the
summary then names the replicas that failed or wait, and why.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TextIO

from apimachinery.resource import PODS
from controller.devtools.colour import Paint, no_paint, palette
from controller.devtools.pod_logs import LogFollower
from controller.devtools.reasons import ReplicaReasons, pod_log_reader
from controller.kinds.registry import KINDS
from informers import InformerFactory
from kubeclient.rest import RestClient

FINISHED = frozenset({"Succeeded", "Failed"})
STARTED = frozenset({"Running", "Succeeded", "Failed"})  # a replica phase whose pod may have output
DELETED = "Deleted"  # a submitted job deleted before it finished (by kubectl, say)
LISTED_REPLICAS = 8  # more than this and replicas are counted by phase instead of listed
EXPLAINED_REPLICAS = 5  # replicas the summary explains per job, at most
REASON_WAIT = 2.0  # seconds the end waits for the pods of failed replicas, so their reasons are printed
LOG_DRAIN = 3.0  # seconds the end waits, with --logs, for the finished pods' output streams to reach their end
# Phases in the order counts are shown, so a line reads the same way as a job progresses.
PHASE_ORDER = ("Creating", "Pending", "Running", "Succeeded", "Failed", "Unknown", "Paused", "Resuming", DELETED)


def is_job(obj: dict) -> bool:
    """A job of a kind the controller serves (GenericJob, TensorFlowTrainingJob)."""
    kind = KINDS.get(obj.get("kind", ""))
    return kind is not None and obj.get("apiVersion") == kind.api.api_version


def job_key(obj: dict) -> str:
    return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


def display_name(key: str) -> str:
    namespace, _, name = key.partition("/")
    return name if namespace == "default" else key


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def replica_records(job: dict) -> list[tuple[str, dict]]:
    """(type, record) for every replica in the status, in the controller's order."""
    kind = KINDS.get(job.get("kind", ""))
    if kind is not None:  # where its kind keeps them (GenericJob: replicas; TensorFlowTrainingJob: replicaStatus)
        return [(replica_type, record) for replica_type, stored in kind.status.stored_types(job.get("status") or {})
                for record in stored]
    tasks = (job.get("status") or {}).get("tasks") or ()
    return [(t.get("type", ""), r) for t in tasks for r in t.get("replicas") or ()]


def replica_state(job: dict, record: dict, reason: str = "", paint: Paint = no_paint) -> str:
    """`worker-0 Failed (StartError: ..., exit 128, 1 restart)`: the replica, its phase, why, its restarts."""
    notes = [reason] if reason else []
    if record.get("restartCount"):
        notes.append(plural(int(record["restartCount"]), "restart"))
    name = record["name"].removeprefix(f"{job['metadata']['name']}-")
    return f"{name} {paint(record.get('phase', '?'))}" + (f" ({', '.join(notes)})" if notes else "")


def replica_states(job: dict, describe: Callable[[dict], str] | None = None, paint: Paint = no_paint) -> str:
    """`worker-0 Running, worker-1 Failed (exit 1, 1 restart)`, or `worker: 60 Running, 40 Pending` when many.
    `describe(record)` says why a replica fails or waits; `paint` colours the phase words (colour.py)."""
    records = replica_records(job)
    if len(records) <= LISTED_REPLICAS:
        return ", ".join(replica_state(job, r, describe(r) if describe else "", paint) for _, r in records)
    by_type: dict[str, Counter[str]] = {}
    restarts: Counter[str] = Counter()
    for replica_type, record in records:
        by_type.setdefault(replica_type, Counter())[record.get("phase", "?")] += 1
        restarts[replica_type] += int(record.get("restartCount") or 0)
    return "; ".join(f"{replica_type}: {_counts(counts, paint)}{_restarts(restarts[replica_type])}"
                     for replica_type, counts in by_type.items())


def _counts(counts: Counter[str], paint: Paint = no_paint) -> str:
    """`6 Running, 4 Pending` in PHASE_ORDER (phases it does not know last)."""
    ordered = sorted(counts, key=lambda p: PHASE_ORDER.index(p) if p in PHASE_ORDER else len(PHASE_ORDER))
    return ", ".join(f"{counts[phase]} {paint(phase)}" for phase in ordered)


def _restarts(count) -> str:
    return f" ({plural(int(count), 'restart')})" if count else ""


def phase_of(job: dict | None) -> str:
    return ((job or {}).get("status") or {}).get("phase") or "Pending"


def outcome_message(job: dict) -> str:
    """Why the job finished, from its Completed or Failed condition (`The job is succeeded with rule: ...`)."""
    wanted = "Failed" if phase_of(job) == "Failed" else "Completed"
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") == wanted and condition.get("status") == "True":
            return condition.get("message") or ""
    return ""


@dataclass
class Tracked:
    key: str
    uid: str
    submitted: float
    job: dict | None = None
    shown: str | None = None  # the state last printed
    finished: float | None = None
    deleted: bool = False

    @property
    def phase(self) -> str:
        return DELETED if self.deleted else phase_of(self.job)

    @property
    def done(self) -> bool:
        return self.deleted or self.phase in FINISHED


class JobProgress:
    """Prints the progress of the jobs it is told to `track` (with `follow_all`, of every job that appears, and
    a summary line as each finishes); `wait()` returns once every one tracked has finished."""

    def __init__(self, rest: RestClient, out: TextIO | None = None, follow_logs: bool = False,
                 follow_all: bool = False) -> None:
        self.out = out or sys.stdout
        self.paint = palette(self.out)  # phase words in colour, on a terminal that wants it
        self.follow_all = follow_all
        self.factory = InformerFactory(rest)
        for kind in KINDS.values():
            self.factory.informer(kind.api.resource).add_handler(
                on_add=self._seen, on_update=lambda _old, new: self._seen(new), on_delete=self._gone)
        self.logs = LogFollower(rest, self.emit) if follow_logs else None
        if self.logs is not None:  # a pod's output followed from its start, not from the job's next status
            self.factory.informer(PODS).add_handler(on_add=self._pod_seen,
                                                    on_update=lambda _old, new: self._pod_seen(new))
        self.reasons = ReplicaReasons(self.factory, self._reasons_changed, pod_log_reader(rest))
        self.tracked: dict[str, Tracked] = {}  # by job key, in the order submitted
        self._latest: dict[str, dict] = {}  # every job seen, by key: events may arrive before `track` is called
        self._expecting_more = True
        self._all_done = asyncio.Event()
        self._job_changed = asyncio.Event()

    async def start(self, timeout: float = 30.0) -> None:
        self.factory.start()
        await self.factory.wait_for_sync(timeout)

    async def stop(self) -> None:
        if self.logs is not None:
            await self.logs.stop()
        await self.factory.stop()

    def emit(self, text: str) -> None:
        print(f"{datetime.now():%H:%M:%S}  {text}", file=self.out, flush=True)

    # --- tracking -------------------------------------------------------------------------

    def track(self, created: dict) -> None:
        """Follow a job just created (the object the API returned)."""
        key = job_key(created)
        self.tracked[key] = Tracked(key, created["metadata"]["uid"], time.monotonic())
        latest = self._latest.get(key)
        if latest is not None:
            self._seen(latest)

    def submitted_all(self) -> None:
        """No more jobs will be tracked: `wait` may return once those tracked have finished."""
        self._expecting_more = False
        self._check_all_done()

    async def wait(self) -> None:
        """Until every job tracked has finished, and the pods of its failed replicas have been seen (a
        moment at most), so the last line and the summary can say why they failed."""
        await self._all_done.wait()
        started = time.monotonic()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(REASON_WAIT):
                while self._unseen_replicas():
                    self._job_changed.clear()
                    await self._job_changed.wait()
        await self.reasons.settle(self._failed_replicas, max(0.0, REASON_WAIT - (time.monotonic() - started)))
        if self.logs is not None:  # the finished pods' last lines before the summary
            await self.logs.drain(LOG_DRAIN)

    def _unseen_replicas(self) -> bool:
        """A job that finished while a pod it had just created was not seen yet records that replica Creating;
        its next status says what became of the pod."""
        return any(r.get("phase") == "Creating" for t in self.tracked.values() if t.job is not None and not t.deleted
                   for _, r in replica_records(t.job))

    def _failed_replicas(self) -> list[tuple[str, dict]]:
        return [(t.job["metadata"].get("namespace", ""), r) for t in self.tracked.values() if t.job is not None
                for _, r in replica_records(t.job) if r.get("phase") == "Failed"]

    def _reasons_changed(self, job_uid: str) -> None:
        """A pod of a job changed: its line may now say more about why a replica fails or waits."""
        tracked = next((t for t in self.tracked.values() if t.uid == job_uid and t.job is not None), None)
        if tracked is not None and not tracked.deleted:
            self._show(tracked)

    def _seen(self, job: dict) -> None:
        key = job_key(job)
        self._latest[key] = job
        tracked = self.tracked.get(key)
        if self.follow_all and (tracked is None or (tracked.done and tracked.uid != job["metadata"].get("uid"))):
            tracked = self.tracked[key] = Tracked(key, job["metadata"].get("uid"), time.monotonic())
        if tracked is None or tracked.uid != job["metadata"].get("uid"):
            return
        if tracked.done:
            if not tracked.deleted:  # a finished job's replicas settle (clean-up, pods seen late)
                tracked.job = job
                self._show(tracked)
                self._job_changed.set()
            return
        tracked.job = job
        self._show(tracked)
        if self.logs is not None:
            self._follow_logs(key, job)
        if tracked.done:
            tracked.finished = time.monotonic()
            if self.follow_all:  # nobody waits for the end to print the summary
                self.emit(f"finished: {self.job_summary(key)}")
                for line in self._explained(tracked):
                    self.emit(line)
            self._check_all_done()

    def _show(self, tracked: Tracked) -> None:
        """Print the job's line if it says something new (nothing until the controller has written a status)."""
        job = tracked.job
        if job is None or not job.get("status"):
            return
        state = f"{self.paint(f'{phase_of(job):<9}')}  {replica_states(job, self._describer(job), self.paint)}"
        if state != tracked.shown:
            tracked.shown = state
            self.emit(f"{self._name(tracked.key)}  {state}")

    def _describer(self, job: dict) -> Callable[[dict], str]:
        namespace = job["metadata"].get("namespace", "")
        return lambda record: self.reasons.describe(namespace, record)

    def _follow_logs(self, key: str, job: dict) -> None:
        """Stream the output of every replica's pod that has started (a restarted replica's new pod too)."""
        assert self.logs is not None
        prefix = f"{job['metadata']['name']}-"
        for _, record in replica_records(job):
            if record.get("uid") and record.get("phase") in STARTED:
                containers = [c.get("name") for c in record.get("containers") or ()]
                self.logs.follow(job["metadata"]["namespace"], record["name"], record["uid"], containers,
                                 f"{self._name(key)}  {record['name'].removeprefix(prefix)}")

    def _pod_seen(self, pod: dict) -> None:
        """Follow the output of a tracked job's pod whose container has started (running or already finished)."""
        assert self.logs is not None
        owner = next((o for o in pod["metadata"].get("ownerReferences") or () if o.get("controller")), None)
        if owner is None:
            return
        tracked = next((t for t in self.tracked.values() if t.uid == owner.get("uid")), None)
        statuses = (pod.get("status") or {}).get("containerStatuses") or ()
        if tracked is None or tracked.deleted or not any({"running", "terminated"} & set(c.get("state") or {})
                                                         for c in statuses):
            return
        name = pod["metadata"]["name"]
        containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or ()]
        self.logs.follow(pod["metadata"].get("namespace", ""), name, pod["metadata"]["uid"], containers,
                         f"{self._name(tracked.key)}  {name.removeprefix(owner.get('name', '') + '-')}")

    def _gone(self, job: dict) -> None:
        key = job_key(job)
        self._latest.pop(key, None)
        tracked = self.tracked.get(key)
        if tracked is not None and tracked.uid == job["metadata"].get("uid") and not tracked.done:
            tracked.deleted = True
            tracked.finished = time.monotonic()
            self.emit(f"{self._name(key)}  {DELETED} before it finished")
            self._check_all_done()

    def _check_all_done(self) -> None:
        if not self._expecting_more and all(t.done for t in self.tracked.values()):
            self._all_done.set()

    def _name(self, key: str) -> str:
        width = max(len(display_name(k)) for k in self.tracked)
        return f"{display_name(key):<{width}}"

    # --- the end --------------------------------------------------------------------------

    def _explained(self, tracked: Tracked) -> list[str]:
        """`    worker-0 Failed (StartError: ..., exit 128)` for each replica that failed or waits, and why."""
        if tracked.job is None or tracked.phase == "Succeeded":
            return []
        describe = self._describer(tracked.job)
        explained = [(r, replica_state(tracked.job, r, reason, self.paint)) for _, r in replica_records(tracked.job)
                     if (reason := describe(r))]
        lines = []
        for record, line in explained[:EXPLAINED_REPLICAS]:
            lines.append(f"    {line}")
            if self.logs is None:  # its output was not shown as it ran: its last lines say why it failed
                lines += [f"      | {output}" for output in self.reasons.output_tail(record)]
        more = len(explained) - EXPLAINED_REPLICAS
        return lines + ([f"    and {more} more"] if more > 0 else [])

    def succeeded(self) -> bool:
        return all(t.phase == "Succeeded" for t in self.tracked.values())

    def job_summary(self, key: str) -> str:
        """`generic-example  Succeeded  2.0s, 1 restart  The job is succeeded with rule: ...`"""
        tracked = self.tracked[key]
        took = (tracked.finished or time.monotonic()) - tracked.submitted
        restarts = sum(int(r.get("restartCount") or 0) for _, r in replica_records(tracked.job or {}))
        extra = [f"{took:.1f}s"] + ([plural(restarts, "restart")] if restarts else [])
        message = outcome_message(tracked.job) if tracked.job and tracked.done else ""
        return (f"{self._name(key)}  {self.paint(f'{tracked.phase:<9}')}  {', '.join(extra)}"
                + (f"  {message}" if message else ""))

    def summary(self) -> list[str]:
        """One line per job (phase, time taken, restarts, why it ended), then the totals."""
        lines = []
        for key, tracked in self.tracked.items():
            lines.append(f"  {self.job_summary(key)}")
            lines += self._explained(tracked)
        counts = Counter(t.phase for t in self.tracked.values())
        total = len(self.tracked)
        if counts["Succeeded"] == total:
            lines.append(f"{'all ' if total > 1 else ''}{plural(total, 'job')} succeeded")
        else:
            lines.append(f"{_counts(counts, self.paint)} of {plural(total, 'job')}")
        return lines
