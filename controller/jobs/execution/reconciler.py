"""One reconcile of one job: read the caches, decide, then carry the plan out.

Level-triggered and idempotent. Every decision is the plan's (decide.py, pure, the one door of the decisions: the
hold of an invalid edit and its release, the names taken, whether the status write may wait); this module only
reads and writes, in the order that keeps the crash-safety guarantees:
- the status goes first (status_writer.py), so a restart is counted before its pod is touched and a stale cache
  gets a quiet 409 and a requeue;
- then pod deletes (with uid preconditions), the PodGroup, pod creates, Service upkeep (pod_writes.py,
  child_writes.py);
- then the plan's Events, only for writes that succeeded;
- last, force deletes of pods stuck terminating (a lost node).
The writers are parts given to the reconciler (`job_reconciler` puts them together), as Kubernetes' controllers
are given a PodControlInterface; they share a `Refusals` (refusals.py) for the writes the server refuses.
The plan of a large job is made on a worker thread (`OFF_LOOP_REPLICAS`): it is pure and reads only
what the reconcile handed it, and the event loop meanwhile keeps renewing the Lease and serving the other jobs.
A reconcile asks for a timed wake-up when the plan does (a stuck pod's deadline), or when a child's
name is held by another owner (no event of ours announces when it goes): such a name is never adopted nor
skipped in silence, but shown in a ChildConflict condition and retried with back-off (conflicts.py, refusals.py).
Expectations remember the creates and deletes in flight, so a cache that has not yet seen them does
not make the same request twice; they are raised before each request and lowered by the pod
informer's handlers (as client-go's ControllerExpectations), so a pod deleted just after it was
created is replaced at once.

A write the server refuses (any code: 400, 403 quota or admission, 422, 500...) does not stop the
reconcile: the other writes and the plan's Events still happen. Each refusal is a Warning Event
(FailedCreate / FailedDelete / FailedUpdate) with the server's message, and the reconcile then ends
with `WritesFailed`, so the key is retried with the rate limiter's backoff. While writes keep failing,
the job's ReplicaFailure condition says so: the next plan is given the first refusal (remembered
here, not in the API) and shows it in the status it writes.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Sequence

from apimachinery.errors import ApiStatusError
from controller.jobs.decisions.actions import WriteFailure
from controller.jobs.decisions.backoff import NO_BACKOFF, RestartBackoff
from controller.jobs.decisions.conflicts import TakenNames
from controller.jobs.decisions.decide import decide, plans_replicas
from controller.jobs.decisions.stuck import STUCK_TERMINATING_AFTER
from controller.jobs.execution.child_writes import ChildWrites
from controller.jobs.execution.metrics import StatusLatency
from controller.jobs.execution.pod_writes import PodWrites
from controller.jobs.execution.refusals import FAILURE_CLEARED_RECHECK, NAME_TAKEN_RETRY, Refusals
from controller.jobs.execution.status_writer import StatusWriter
from controller.jobs.kind import JobKind, ParsedJob, SpecProblem
from controller.jobs.schema.api import TERMINAL_PHASES
from controller.runtime.client import KubeClient
from controller.runtime.echoes import Echoes
from controller.runtime.events import EventRecorder
from controller.runtime.expectations import Expectations
from controller.runtime.result import DONE, Result, WritesFailed
from controller.runtime.timestamps import utc_stamp
from informers import CacheReader

__all__ = ["DONE", "STUCK_TERMINATING_AFTER", "Reconciler", "Result", "WriteFailure", "WritesFailed",
           "job_reconciler"]

# Jobs of this many replicas or more are planned on a worker thread. Planning costs ~30 µs a replica (a
# 1000-replica job, the cap, ~30 ms on a slow core): below this, a thread's hand-off costs more than it saves;
# above it, the GIL's switch interval (5 ms) gives the event loop its turn while the plan is made.
OFF_LOOP_REPLICAS = 200


class Reconciler:
    """One job kind's reconciles: reads the caches, asks decide.py for the plan, and has its parts carry it out."""

    def __init__(self, kind: JobKind, jobs: CacheReader, pods: CacheReader, services_lister: CacheReader,
                 podgroups: CacheReader | None, recorder: EventRecorder, *, status_writer: StatusWriter,
                 pod_writes: PodWrites, child_writes: ChildWrites, refusals: Refusals, expectations: Expectations,
                 now=utc_stamp, clock=time.time, stuck_after: float = STUCK_TERMINATING_AFTER,
                 restart_backoff: RestartBackoff = NO_BACKOFF) -> None:
        """`expectations`: the creates and deletes in flight, shared with `pod_writes` (the pod informer's handlers
        lower them); `refusals`: shared with the writers, with the names found taken."""
        self.kind = kind
        self.jobs = jobs
        self.pods = pods
        self.services = services_lister
        self.podgroups = podgroups
        self.recorder = recorder  # the plan's Events
        self.status_writer = status_writer
        self.pod_writes = pod_writes
        self.child_writes = child_writes
        self.refusals = refusals
        self.expectations = expectations
        self.now = now  # the timestamps written in the status
        self.clock = clock  # wall-clock seconds, to compare with deletionTimestamps
        self.stuck_after = stuck_after
        self.restart_backoff = restart_backoff
        # The kind's dependent resources the cluster serves, by resource: a lister once its informer has synced.
        self.dependent_listers: dict = {}
        # job uid -> the first write refused in its last reconcile, shown by the next status write.
        self._failures: dict[str, WriteFailure] = {}
        # uid -> (generation, parsed job or spec problems): a job is parsed once per generation.
        self._parsed: dict[str, tuple[int, ParsedJob | list[SpecProblem]]] = {}

    @property
    def taken(self) -> TakenNames:
        """The names of children found held by objects the job does not control."""
        return self.refusals.taken

    def parsed(self, obj: dict) -> ParsedJob | list[SpecProblem]:
        """The job parsed, once per generation while it runs. A finished job is not kept parsed: it is rarely
        reconciled again (its clean-up, a deletion), and 2,000 finished jobs held ~6 MiB of parsed models."""
        meta = obj["metadata"]
        cached = self._parsed.get(meta["uid"])
        if cached is not None and cached[0] == meta.get("generation"):
            job = cached[1]
        else:
            parsed = self.kind.parse(obj)
            # Problems as a list (a kind may give any sequence): the engine tells a job from its problems by it.
            job = list(parsed) if isinstance(parsed, Sequence) else parsed
        if (obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
            self._parsed.pop(meta["uid"], None)
        else:
            self._parsed[meta["uid"]] = (meta.get("generation"), job)
        return job

    async def reconcile(self, key: str) -> Result:
        obj = self.jobs.get(key)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            # Deleted: the garbage collector removes what the job owned.
            return DONE
        uid = obj["metadata"]["uid"]
        if self.status_writer.echoes.behind_own_write(key, obj["metadata"]["resourceVersion"]):
            return Result(lost_at=obj["metadata"]["resourceVersion"])  # the echo is certain: no retry besides
        pods = self.pods.controlled_by(uid)
        self.expectations.observe(uid, pods)
        expected = self.expectations.creating_now(uid)
        status = obj.get("status") or {}
        job = self.parsed(obj)
        if plans_replicas(job, status) and await self._cache_lags(obj, status, pods):
            return Result(requeue_after=0.2)
        deciding = functools.partial(
            decide, self.kind, obj, job, pods, self.now(), services=self.services.controlled_by(uid),
            podgroups=self.podgroups.controlled_by(uid) if self.podgroups is not None else None, clock=self.clock(),
            stuck_after=self.stuck_after, write_failure=self._failures.get(uid), restart_backoff=self.restart_backoff,
            dependents={resource: lister.controlled_by(uid) for resource, lister in self.dependent_listers.items()},
            creating=expected, taken=self.taken.conflicts(uid))
        if not isinstance(job, list) and sum(self.kind.replica_counts(job).values()) >= OFF_LOOP_REPLICAS:
            # Nothing it reads is changed meanwhile: cached objects are replaced, never modified, and the
            # lists here are this reconcile's own.
            the_plan = await asyncio.to_thread(deciding)
        else:
            the_plan = deciding()
        self.taken.keep_only(uid, {conflict.what for conflict in the_plan.taken})
        wait = self.status_writer.holds_back(uid, the_plan)
        if wait is not None:
            return Result(requeue_after=wait)
        try:
            written = await self.status_writer.write(obj, status, the_plan)
        except ApiStatusError as err:
            if not err.too_large:
                raise
            return await self.status_writer.too_large(obj, the_plan, err, self.now())
        if written is None:
            return Result(requeue_after=0.0, lost_at=obj["metadata"]["resourceVersion"])
        failed: list[tuple[str, str]] = []  # (reason, message) of every write the server refused
        # (Each step only when the plan has something for it: most plans have nothing for most steps, and a
        # coroutine made and run for nothing costs about a microsecond.)
        refused_deletes = await self.pod_writes.delete(obj, the_plan, failed) if the_plan.delete else set()
        # The PodGroup before the pods, so a gang scheduler never sees a pod of a group it does not
        # know; the pods before their Services (as training-operator), since pods are what a job waits on.
        wake_ups: list[float] = []  # seconds until something not announced by any event needs a look
        # A PodGroup whose name is taken holds the pods back: they would join the other job's gang.
        gang_taken = bool(the_plan.podgroup) and await self.child_writes.upkeep(obj, the_plan.podgroup, failed,
                                                                                wake_ups)
        # (An invalid job, a list of problems, is planned no creates.)
        if the_plan.create and not isinstance(job, list) and not gang_taken \
                and not await self.pod_writes.create(obj, job, the_plan, expected, failed):
            wake_ups.append(NAME_TAKEN_RETRY)
        if the_plan.services:
            await self.child_writes.upkeep(obj, the_plan.services, failed, wake_ups)
        if the_plan.dependents:
            await self.child_writes.upkeep(obj, the_plan.dependents, failed, wake_ups)
        wake_ups.extend(self.refusals.wake_ups(uid, the_plan.taken))
        for event in the_plan.events_after(refused_deletes) if the_plan.events else ():
            self.recorder.record(written, *event)
        if the_plan.force_delete:
            await self.pod_writes.force_delete(obj, the_plan, failed)
        if the_plan.requeue_after is not None:
            wake_ups.append(the_plan.requeue_after)
        if failed:
            self._failures[uid] = WriteFailure(*failed[0])
            raise WritesFailed(failed, min(wake_ups) if wake_ups else None)
        if self._failures.pop(uid, None) is not None:
            # The status just written still shows the last attempt's failure: look again to clear it.
            wake_ups.append(FAILURE_CLEARED_RECHECK)
        return Result(requeue_after=min(wake_ups)) if wake_ups else DONE

    def current_version(self, key: str) -> str | None:
        """The job's resourceVersion in the cache (None: not there): the runtime's worker asks it (Reconciling)."""
        cached = self.jobs.get(key)
        return cached["metadata"].get("resourceVersion") if cached is not None else None

    def forget(self, uid: str) -> None:
        self.status_writer.forget(uid)
        self._parsed.pop(uid, None)
        self._failures.pop(uid, None)
        self.taken.forget(uid)
        self.expectations.forget(uid)

    async def _cache_lags(self, obj: dict, status: dict, pods: list[dict]) -> bool:
        """A replica whose recorded pod is missing from the cache may only be missing from the cache.

        Before the plan counts such a pod as lost (a restart), ask the server; if the pod is there,
        the pod cache is behind the job cache (e.g. just after a leader change): wait for it.
        """
        present = {p["metadata"]["uid"] for p in pods}
        for replica in self.kind.status.stored_records(status).values():
            uid = replica.get("uid")
            if not uid or uid in present or replica.get("phase") in ("Deleted", "Creating", "Succeeded",
                                                                      "Failed"):
                continue
            if uid == replica.get("lastRestartUid") or self.expectations.deleting(obj["metadata"]["uid"], uid):
                continue
            live = await self.pod_writes.live(obj["metadata"]["namespace"], replica["name"])
            if live is not None and live["metadata"]["uid"] == uid and self.pod_writes.selected(live):
                return True
            # Not a lag: its label was removed by hand, so the pod informer no longer selects it; the plan
            # counts it lost, and the create of its replacement reports the pod holding the name.
        return False


def job_reconciler(kind: JobKind, client: KubeClient, jobs: CacheReader, pods: CacheReader,
                   services_lister: CacheReader, podgroups: CacheReader | None, recorder: EventRecorder, *,
                   now=utc_stamp, clock=time.time, stuck_after: float = STUCK_TERMINATING_AFTER,
                   latency: StatusLatency | None = None, restart_backoff: RestartBackoff = NO_BACKOFF,
                   echoes: Echoes | None = None, taken: TakenNames | None = None) -> Reconciler:
    """A kind's Reconciler with its parts: the status writer, the pod and child writes, sharing one client, one
    recorder, the refusals and names taken (`taken`, by default new) and the expectations. `echoes`: the
    controller's (controller/runtime/echoes.py), told of each status write so that a reconcile behind its own write
    waits for the echo."""
    refusals = Refusals(recorder, taken if taken is not None else TakenNames())
    expectations = Expectations()
    return Reconciler(kind, jobs, pods, services_lister, podgroups, recorder,
                      status_writer=StatusWriter(kind, client, recorder, echoes=echoes, latency=latency),
                      pod_writes=PodWrites(kind, client, pods, recorder, expectations, refusals),
                      child_writes=ChildWrites(kind, client, refusals), refusals=refusals, expectations=expectations,
                      now=now, clock=clock, stuck_after=stuck_after, restart_backoff=restart_backoff)
