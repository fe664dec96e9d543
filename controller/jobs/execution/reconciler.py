"""One reconcile of one job: read the caches, plan, then execute the plan.

Level-triggered and idempotent. Every decision is the plan's (plan.py, pure); this module only does
the I/O, in the order that keeps the crash-safety guarantees:
- the status goes first, through the status subresource with the cached resourceVersion, so a
  restart is counted before its pod is touched and a stale cache gets a quiet 409 and a requeue;
- then pod deletes (with uid preconditions), the PodGroup, pod creates, Service upkeep;
- then the plan's Events, only for writes that succeeded;
- last, force deletes of pods stuck terminating (a lost node).
A status the server refuses as too large (oversize.py) ends the job Failed with a compact status and a Warning
Event: retrying the same write could only fail again.
The plan of a large job is made on a worker thread (`OFF_LOOP_REPLICAS`): it is pure and reads only
what the reconcile handed it, and the event loop meanwhile keeps renewing the Lease and serving the other jobs.
A reconcile asks for a timed wake-up when the plan does (a stuck pod's deadline), or when a child's
name is held by another owner (no event of ours announces when it goes): such a name is never adopted nor
skipped in silence, but shown in a ChildConflict condition and retried with back-off (conflicts.py, refusals.py).
The pod writes are pod_writes.py's, the Service, PodGroup and dependent writes child_writes.py's, the holding back
of a status write that only reports pods starting coalesce.py's; a reconcile behind its own status write waits
for the echo (controller/runtime/echoes.py).
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

import structlog

from apimachinery.errors import ApiStatusError
from controller.jobs.decisions import held, oversize
from controller.jobs.decisions.actions import CHILD_KINDS, WARNING, Plan, WriteFailure
from controller.jobs.decisions.backoff import NO_BACKOFF, RestartBackoff
from controller.jobs.decisions.conflicts import TakenNames
from controller.jobs.decisions.invalid import plan_invalid
from controller.jobs.decisions.plan import plan
from controller.jobs.decisions.stuck import STUCK_TERMINATING_AFTER
from controller.jobs.execution.child_writes import ChildWrites
from controller.jobs.execution.coalesce import StartCoalescing
from controller.jobs.execution.metrics import StatusLatency
from controller.jobs.execution.pod_writes import PodWrites
from controller.jobs.execution.refusals import FAILURE_CLEARED_RECHECK, NAME_TAKEN_RETRY, job_key
from controller.jobs.kind import JobKind, ParsedJob, SpecProblem
from controller.jobs.schema.api import TERMINAL_PHASES
from controller.jobs.schema.naming import replica_name
from controller.runtime.client import KubeClient
from controller.runtime.echoes import Echoes
from controller.runtime.events import EventRecorder
from controller.runtime.expectations import Expectations
from controller.runtime.result import DONE, Result, WritesFailed
from controller.runtime.timestamps import utc_stamp
from informers import CacheReader

log = structlog.get_logger("controller.reconciler")

__all__ = ["DONE", "STUCK_TERMINATING_AFTER", "Reconciler", "Result", "WriteFailure", "WritesFailed"]

# Jobs of this many replicas or more are planned on a worker thread. Planning costs ~30 µs a replica (a
# 1000-replica job, the cap, ~30 ms on a slow core): below this, a thread's hand-off costs more than it saves;
# above it, the GIL's switch interval (5 ms) gives the event loop its turn while the plan is made.
OFF_LOOP_REPLICAS = 200


class Reconciler(PodWrites, ChildWrites, StartCoalescing):
    """One job kind's reconciles. The writes of a plan are its mixins' (pod_writes.py, child_writes.py, with
    refusals.py for the writes refused and the names taken), and so is the start coalescing (coalesce.py)."""

    def __init__(self, kind: JobKind, client: KubeClient, jobs: CacheReader, pods: CacheReader,
                 services_lister: CacheReader, podgroups: CacheReader | None, recorder: EventRecorder, *,
                 now=utc_stamp, clock=time.time,
                 stuck_after: float = STUCK_TERMINATING_AFTER, latency: StatusLatency | None = None,
                 restart_backoff: RestartBackoff = NO_BACKOFF, echoes: Echoes | None = None) -> None:
        """`echoes`: the controller's (controller/runtime/echoes.py), told of each status write so that a reconcile
        behind its own write waits for the echo."""
        self.kind = kind
        self.client = client
        self.jobs = jobs
        self.pods = pods
        self.services = services_lister
        self.podgroups = podgroups
        self.recorder = recorder
        self.now = now  # the timestamps written in the status
        self.clock = clock  # wall-clock seconds, to compare with deletionTimestamps
        self.stuck_after = stuck_after
        self.restart_backoff = restart_backoff
        self.latency = latency if latency is not None and latency.enabled else None
        self.echoes = echoes if echoes is not None else Echoes()
        self.expectations = Expectations()
        self.taken = TakenNames()  # names of children held by objects the job does not control
        # The kind's dependent resources the cluster serves, by resource: a lister once its informer has synced.
        self.dependent_listers: dict = {}
        self.child_kinds = {**CHILD_KINDS, **{d.resource.plural: d.kind for d in kind.dependent_resources}}
        # job uid -> the first write refused in its last reconcile, shown by the next status write.
        self._failures: dict[str, WriteFailure] = {}
        # uid -> (generation, parsed job or spec problems): a job is parsed once per generation.
        self._parsed: dict[str, tuple[int, ParsedJob | list[SpecProblem]]] = {}
        # job uid -> when its pending start-only status write is due (monotonic seconds): see _coalesces.
        self._starting: dict[str, float] = {}
        self.monotonic = time.monotonic  # the coalescing window's clock (tests set their own)

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
        if self.echoes.behind_own_write(key, obj["metadata"]["resourceVersion"]):
            return Result(lost_at=obj["metadata"]["resourceVersion"])  # the echo is certain: no retry besides
        pods = self.pods.controlled_by(uid)
        self.expectations.observe(uid, pods)
        expected = self.expectations.creating_now(uid)
        status = obj.get("status") or {}
        job = self.parsed(obj)
        children = {"services": self.services.controlled_by(uid),
                    "podgroups": self.podgroups.controlled_by(uid) if self.podgroups is not None else None,
                    "clock": self.clock(), "stuck_after": self.stuck_after}
        if isinstance(job, list) and held.is_edit(status):
            # An invalid edit of a running job is not applied: the job is held until a valid one (held.py).
            the_plan = held.plan_held(self.kind, status, pods, self.kind.invalid_spec_message(job),
                                      obj["metadata"].get("generation"), self.now(), deadline=held.raw_deadline(obj),
                                      **children)
        elif isinstance(job, list):
            the_plan = plan_invalid(self.kind, status, pods, self.kind.invalid_spec_message(job), self.now(),
                                    **children)
        elif oversize.failed_too_large(status):  # its records are gone for good: never rebuilt
            the_plan = plan_invalid(self.kind, status, pods, "", self.now(), reason=oversize.STATUS_TOO_LARGE,
                                    **children)
        else:
            if await self._cache_lags(obj, status, pods):
                return Result(requeue_after=0.2)
            dependents = {resource: lister.controlled_by(uid) for resource, lister in self.dependent_listers.items()}
            planning = functools.partial(plan, self.kind, job, status, pods, self.now(),
                                         write_failure=self._failures.get(uid), restart_backoff=self.restart_backoff,
                                         dependents=dependents, creating=expected, **children)
            if sum(self.kind.replica_counts(job).values()) >= OFF_LOOP_REPLICAS:
                # Nothing it reads is changed meanwhile: cached objects are replaced, never modified, and the
                # lists here are this reconcile's own.
                the_plan = await asyncio.to_thread(planning)
            else:
                the_plan = planning()
            the_plan = held.release(the_plan, status, obj["metadata"].get("generation"), self.now())
        the_plan = self._with_conflicts(uid, job, status, the_plan)
        shown = self.taken.conflicts(uid)
        confirm = not isinstance(job, list) and self._sends_creates(job, the_plan, expected)
        wait = self._coalesces(uid, status, the_plan, confirm)
        if wait is not None:
            return Result(requeue_after=wait)
        try:
            written = await self._write_status(obj, status, the_plan, confirm=confirm)
        except ApiStatusError as err:
            if not err.too_large:
                raise
            return await self._status_too_large(obj, the_plan, err)
        if written is None:
            return Result(requeue_after=0.0, lost_at=obj["metadata"]["resourceVersion"])
        failed: list[tuple[str, str]] = []  # (reason, message) of every write the server refused
        # (Each step only when the plan has something for it: most plans have nothing for most steps, and a
        # coroutine made and run for nothing costs about a microsecond.)
        refused_deletes = await self._delete_pods(obj, the_plan, failed) if the_plan.delete else set()
        # The PodGroup before the pods, so a gang scheduler never sees a pod of a group it does not
        # know; the pods before their Services (as training-operator), since pods are what a job waits on.
        wake_ups: list[float] = []  # seconds until something not announced by any event needs a look
        # A PodGroup whose name is taken holds the pods back: they would join the other job's gang.
        gang_taken = bool(the_plan.podgroup) and await self._upkeep(obj, the_plan.podgroup, failed, wake_ups)
        # (An invalid job, a list of problems, is planned no creates.)
        if the_plan.create and not isinstance(job, list) and not gang_taken \
                and not await self._create_pods(obj, job, the_plan, expected, failed):
            wake_ups.append(NAME_TAKEN_RETRY)
        if the_plan.services:
            await self._upkeep(obj, the_plan.services, failed, wake_ups)
        if the_plan.dependents:
            await self._upkeep(obj, the_plan.dependents, failed, wake_ups)
        wake_ups.extend(self._conflict_wake_ups(uid, shown))
        for event in the_plan.events_after(refused_deletes) if the_plan.events else ():
            self.recorder.record(written, *event)
        if the_plan.force_delete:
            await self._force_delete(obj, the_plan, failed)
        if the_plan.requeue_after is not None:
            wake_ups.append(the_plan.requeue_after)
        if failed:
            self._failures[uid] = WriteFailure(*failed[0])
            raise WritesFailed(failed, min(wake_ups) if wake_ups else None)
        if self._failures.pop(uid, None) is not None:
            # The status just written still shows the last attempt's failure: look again to clear it.
            wake_ups.append(FAILURE_CLEARED_RECHECK)
        return Result(requeue_after=min(wake_ups)) if wake_ups else DONE

    def forget(self, uid: str) -> None:
        self._starting.pop(uid, None)
        self._parsed.pop(uid, None)
        self._failures.pop(uid, None)
        self.taken.forget(uid)
        self.expectations.forget(uid)


    # --- status ---------------------------------------------------------------------------

    @staticmethod
    def _sends_creates(job: ParsedJob, the_plan: Plan, expected: frozenset[str]) -> bool:
        return any(replica_name(job.name, replica_type, rank) not in expected
                   for replica_type, rank, _mode in the_plan.create)

    async def _write_status(self, obj: dict, status: dict, the_plan: Plan, confirm: bool) -> dict | None:
        """The one status write of this reconcile; None when it lost a race (requeue).

        An unchanged status is written anyway when `confirm` (the plan sends pod creates): the PUT carries the cached
        resourceVersion, so it proves the cached job current (a no-op write the server stores nothing
        for). Without it, a job cache lagging behind the pod cache (a relist after a failover) could
        re-create the pods of a job that has since finished and been cleaned up."""
        new = {**the_plan.status, "observedGeneration": obj["metadata"].get("generation")}
        if new == status and not confirm:
            return obj
        try:
            written = await self.client.replace_status(self.kind.api.resource, obj, new)
        except ApiStatusError as err:
            if err.code in (404, 409):  # stale cache or job gone: the next event brings it back
                log.debug("status write lost a race", job=job_key(obj), code=err.code)
                return None
            raise
        # Until the cache has this write's version, a reconcile would plan from the replaced one: it waits instead.
        assert written is not None  # (the API server answers a status write with the object)
        self.echoes.wrote(job_key(obj), obj["metadata"]["resourceVersion"], written["metadata"].get("resourceVersion"))
        if self.latency is not None:
            self.latency.status_written(written, time.monotonic())
        if new.get("phase") != status.get("phase"):
            # What operators grep for at the default level: one line per phase change, with its reason.
            log.info("job phase changed", job=job_key(obj), kind=self.kind.api.kind, phase=new.get("phase"),
                     previous=status.get("phase"), **phase_reason(new))
        return written

    async def _status_too_large(self, obj: dict, the_plan: Plan, err: ApiStatusError) -> Result:
        """The server will not store the planned status: the job ends Failed with a compact one (oversize.py), or a
        smaller one when its spec leaves no room for that, and nothing of the plan is done (its pods would have no
        records). The Warning is recorded for the status the server took, never before."""
        log.warning("status too large", job=job_key(obj), message=err.message)
        for text, smaller in oversize.fallbacks(self.kind.status, the_plan.status, err.message, self.now(),
                                                obj["metadata"].get("generation")):
            try:
                await self.client.replace_status(self.kind.api.resource, obj, smaller)
            except ApiStatusError as again:
                if again.code in (404, 409):
                    return Result(requeue_after=0.0, lost_at=obj["metadata"]["resourceVersion"])
                if not again.too_large:
                    raise
                err = again
                continue
            self.recorder.record(obj, WARNING, oversize.STATUS_TOO_LARGE, text)
            # Look again once the cache has it (a status-only change queues nothing by itself): the job's
            # unfinished pods are then deleted, as a failed job's.
            return Result(requeue_after=0.0, lost_at=obj["metadata"]["resourceVersion"])
        self.recorder.record(obj, WARNING, oversize.STATUS_TOO_LARGE, oversize.nothing_fits(err.message))
        return DONE

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
            live = await self._live_pod(obj["metadata"]["namespace"], replica["name"])
            if live is not None and live["metadata"]["uid"] == uid and self._selected(live):
                return True
            # Not a lag: its label was removed by hand, so the pod informer no longer selects it; the plan
            # counts it lost, and the create of its replacement reports the pod holding the name.
        return False


def phase_reason(status: dict) -> dict[str, str]:
    """Why the job is in its phase: the finished job's `reason`, else that of the condition that changed last to
    True (Running, Paused...), with its message."""
    true = [c for c in status.get("conditions") or () if c.get("status") == "True"]
    # The last True condition to change (of two in the same second, the later in the list).
    latest: dict = max(true, key=lambda c: (c.get("lastTransitionTime") or "", true.index(c)), default={})
    reason = status.get("reason") or latest.get("reason") or ""
    message = next((c.get("message") for c in true if c.get("reason") == reason), latest.get("message")) or ""
    return {"reason": reason, "message": message} if message else {"reason": reason}

