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
skipped in silence, but shown in a ChildConflict condition and retried with back-off (conflicts.py).
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
import time

import structlog

from apimachinery.errors import ApiStatusError
from controller.jobs import held, oversize
from controller.jobs.actions import (
    CHILD_KINDS,
    WARNING,
    ChildAction,
    CreateChild,
    DeleteChild,
    created_event,
)
from controller.jobs.api import TERMINAL_PHASES
from controller.jobs.backoff import NO_BACKOFF, RestartBackoff
from controller.jobs.conflicts import Conflict, TakenNames, conflict_condition, holder_of
from controller.jobs.kind import JobKind, ParsedJob, SpecProblem
from controller.jobs.metrics import StatusLatency
from controller.jobs.naming import controller_uid, replica_name
from controller.jobs.plan import STUCK_TERMINATING_AFTER, Plan, WriteFailure, plan, plan_invalid
from controller.jobs.pods import desired_pod
from controller.runtime.client import KubeClient
from controller.runtime.events import EventRecorder
from controller.runtime.expectations import Expectations
from controller.runtime.result import DONE, Result, WritesFailed
from controller.runtime.timestamps import utc_stamp
from informers import Lister

log = structlog.get_logger("controller.reconciler")

__all__ = ["DONE", "STUCK_TERMINATING_AFTER", "Reconciler", "Result", "WriteFailure", "WritesFailed"]

# A create refused as AlreadyExists whose holder could not be found (gone meanwhile, or our own child not yet
# cached): no event of ours may announce it, so look again. (A holder found not ours: conflicts.py's back-off.)
NAME_TAKEN_RETRY = 1.0
FAILURE_CLEARED_RECHECK = 0.05  # seconds; see Reconciler.reconcile
# Jobs of this many replicas or more are planned on a worker thread. Planning costs ~30 µs a replica (a
# 1000-replica job, the cap, ~30 ms on a slow core): below this, a thread's hand-off costs more than it saves;
# above it, the GIL's switch interval (5 ms) gives the event loop its turn while the plan is made.
OFF_LOOP_REPLICAS = 200
# A status change that only says pods went on from Pending to Running waits this long for its siblings
# (the pods of one job start within milliseconds of each other), so one write reports them all: see
# `_coalesces`. Well under the 100 ms the status latency is held to.
START_COALESCE = 0.05
# Top-level status fields a pod's start may change: the replica records and the counts made from them.
PROGRESS_FIELDS = frozenset({"tasks", "aggregate", "ready", "readyReplicas"})


class Reconciler:
    def __init__(self, kind: JobKind, client: KubeClient, jobs: Lister, pods: Lister, services_lister: Lister,
                 podgroups: Lister | None, recorder: EventRecorder, *, now=utc_stamp, clock=time.time,
                 stuck_after: float = STUCK_TERMINATING_AFTER, latency: StatusLatency | None = None,
                 restart_backoff: RestartBackoff = NO_BACKOFF) -> None:
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
        # job uid -> (the resourceVersion our last status write replaced, the one it made): see _behind_own_write.
        self._wrote: dict[str, tuple[str, str]] = {}
        self.monotonic = time.monotonic  # the coalescing window's clock (tests set their own)

    def parsed(self, obj: dict) -> ParsedJob | list[SpecProblem]:
        """The job parsed, once per generation while it runs. A finished job is not kept parsed: it is rarely
        reconciled again (its clean-up, a deletion), and 2,000 finished jobs held ~6 MiB of parsed models."""
        meta = obj["metadata"]
        cached = self._parsed.get(meta["uid"])
        if cached is not None and cached[0] == meta.get("generation"):
            job = cached[1]
        else:
            job = self.kind.parse(obj)
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
        if self._behind_own_write(uid, obj["metadata"]["resourceVersion"]):
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
            planning = (plan, self.kind, job, status, pods, self.now())
            options = {"write_failure": self._failures.get(uid), "restart_backoff": self.restart_backoff,
                       "dependents": dependents, "creating": expected, **children}
            if sum(self.kind.replica_counts(job).values()) >= OFF_LOOP_REPLICAS:
                # Nothing it reads is changed meanwhile: cached objects are replaced, never modified, and the
                # lists here are this reconcile's own.
                the_plan = await asyncio.to_thread(*planning, **options)
            else:
                the_plan = plan(*planning[1:], **options)
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
        if the_plan.create and not gang_taken and not await self._create_pods(obj, job, the_plan, expected, failed):
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
        self._wrote.pop(uid, None)
        self._starting.pop(uid, None)
        self._parsed.pop(uid, None)
        self._failures.pop(uid, None)
        self.taken.forget(uid)
        self.expectations.forget(uid)

    def _refused(self, obj: dict, failed: list[tuple[str, str]], reason: str, message: str) -> None:
        """A write the server refused: a Warning Event now, a retry with backoff at the end of the reconcile."""
        log.info("write refused", job=_key(obj), reason=reason, message=message)
        self.recorder.record(obj, WARNING, reason, message)
        failed.append((reason, message))

    # --- names that are taken -------------------------------------------------------------

    def _with_conflicts(self, uid: str, job: ParsedJob | list, status: dict, the_plan: Plan) -> Plan:
        """The plan with the job's ChildConflict condition: the taken names it still wants to create. A job
        that finishes waits for no name (and a finished job's conditions never change)."""
        if the_plan.terminal or isinstance(job, list):
            self.taken.forget(uid)
        elif self.taken.conflicts(uid):  # (most jobs never meet a taken name: nothing to work out)
            self.taken.keep_only(uid, self._wanted(job, the_plan))
        if status.get("phase") in TERMINAL_PHASES:
            return the_plan
        conditions = the_plan.status.get("conditions") or []
        shown = conflict_condition(conditions, self.taken.conflicts(uid), self.now())
        return the_plan if shown is conditions else the_plan.but(status={**the_plan.status, "conditions": shown})

    def _wanted(self, job: ParsedJob, the_plan: Plan) -> set[str]:
        """The children the plan creates, as conflicts name them."""
        wanted = {f"pod {replica_name(job.name, replica_type, rank)}" for replica_type, rank, _ in the_plan.create}
        wanted.update(self._what(a) for a in (*the_plan.podgroup, *the_plan.services, *the_plan.dependents)
                      if isinstance(a, CreateChild))
        return wanted

    def _what(self, action: ChildAction) -> str:
        return f"{self.child_kinds.get(action.resource, action.resource)} {action.name}"

    def _conflict_wake_ups(self, uid: str, shown: list[Conflict]) -> list[float]:
        """When to look again: at the next retry of a taken name; and at once when the status just written no
        longer says which names are taken (one was found, or freed), so the condition follows."""
        wake_ups = []
        retry = self.taken.next_retry(uid)
        if retry is not None:
            wake_ups.append(retry)
        if set(self.taken.conflicts(uid)) != set(shown):
            wake_ups.append(FAILURE_CLEARED_RECHECK)
        return wake_ups

    def _name_taken(self, obj: dict, what: str, holder: dict) -> None:
        """A create refused because `holder`, not the job's, has the name: said, and retried with back-off."""
        conflict = Conflict(what, holder_of(holder))
        log.info("name taken", job=_key(obj), child=what, holder=conflict.holder)
        self.taken.found(obj["metadata"]["uid"], conflict)
        self.recorder.record(obj, WARNING, "FailedCreate", conflict.event_message())

    async def _holder(self, resource: str, namespace: str, name: str) -> dict | None:
        """The object that has a name a create was refused for (None: gone since)."""
        try:
            return await self.client.get(resource, namespace, name)
        except ApiStatusError as err:
            if err.code == 404:
                return None
            raise

    # --- status ---------------------------------------------------------------------------

    def _behind_own_write(self, uid: str, cached: str) -> bool:
        """Does the job cache still hold the very version our last status write replaced?

        Then the echo of that write is on its way through the watch, and a reconcile now would plan from
        a status the server no longer has: its status write could only lose (409, the cached
        resourceVersion is no longer the server's) and cost a request, and a plan whose status came out
        unchanged would act on the older one. Waiting for the echo (the key is parked until another
        version arrives, as after a lost write) gives the same outcome as the 409, without the request;
        and, unlike after a 409, without a retry besides: our write's version exists, so the watch (or the
        relist that replaces a broken one) certainly brings it, or the job's deletion, which unparks the key."""
        wrote = self._wrote.get(uid)
        if wrote is None:
            return False
        if wrote[0] == cached:
            return True
        del self._wrote[uid]  # the cache has moved on: our write's version, or a newer one
        return False

    def _coalesces(self, uid: str, status: dict, the_plan: Plan, confirm: bool) -> float | None:
        """Seconds to hold this reconcile's status write back (None: write now).

        Only a plan that does nothing but report pods going on from Pending to Running is held back, for
        at most START_COALESCE after the first such change: a job's pods start together, and one write
        then reports them all instead of one write each. Such a write guards nothing: no pod is created
        or deleted after it, no restart is counted in it (a record keeps its uid, restart count and
        last restarted pod), and no Event waits for it; a crash in the window loses nothing the next
        reconcile does not rebuild from the pods. Anything else in the plan (an action, an Event, a
        phase or condition change, a uid first recorded, a pod finished) is written at once."""
        if confirm or the_plan.create or the_plan.delete or the_plan.force_delete or the_plan.events or \
                the_plan.podgroup or the_plan.services or the_plan.dependents or the_plan.requeue_after is not None \
                or uid in self._failures or not self._starts_only(status, the_plan.status):
            self._starting.pop(uid, None)
            return None
        now = self.monotonic()
        due = self._starting.setdefault(uid, now + START_COALESCE)
        if now >= due:
            del self._starting[uid]
            return None
        return due - now

    def _starts_only(self, old: dict, new: dict) -> bool:
        """Does `new` differ from `old` only in records of known pods now Running (and the counts)?"""
        if any(old.get(key) != new.get(key) for key in old.keys() | new.keys() if key not in PROGRESS_FIELDS):
            return False
        before, after = self.kind.status.stored_records(old), self.kind.status.stored_records(new)
        if before.keys() != after.keys() or before == after:
            return False
        for name, record in after.items():
            was = before[name]
            if record == was:
                continue
            if not record.get("uid") or record.get("phase") != "Running" or was.get("phase") not in ("Pending",
                                                                                                      "Running"):
                return False
            if any(record.get(key) != was.get(key) for key in record.keys() | was.keys()
                   if key not in ("phase", "containers", "ready", "waiting")):
                return False
        return True

    @staticmethod
    def _sends_creates(job: ParsedJob | list, the_plan: Plan, expected: frozenset[str]) -> bool:
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
                log.debug("status write lost a race", job=_key(obj), code=err.code)
                return None
            raise
        made = written["metadata"].get("resourceVersion")
        if made and made != obj["metadata"]["resourceVersion"]:  # a no-op write makes no new version
            self._wrote[obj["metadata"]["uid"]] = (obj["metadata"]["resourceVersion"], made)
        if self.latency is not None:
            self.latency.status_written(written, time.monotonic())
        if new.get("phase") != status.get("phase"):
            # What operators grep for at the default level: one line per phase change, with its reason.
            log.info("job phase changed", job=_key(obj), kind=self.kind.api.kind, phase=new.get("phase"),
                     previous=status.get("phase"), **phase_reason(new))
        return written

    async def _status_too_large(self, obj: dict, the_plan: Plan, err: ApiStatusError) -> Result:
        """The server will not store the planned status: the job ends Failed with a compact one (oversize.py), or a
        smaller one when its spec leaves no room for that, and nothing of the plan is done (its pods would have no
        records). The Warning is recorded for the status the server took, never before."""
        log.warning("status too large", job=_key(obj), message=err.message)
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

    def _selected(self, pod: dict) -> bool:
        """Does the pod informer's selector (the kind's children selector) take this pod?"""
        return self.kind.api.children_selector in (pod["metadata"].get("labels") or {})

    async def _live_pod(self, namespace: str, name: str) -> dict | None:
        try:
            return await self.client.get("pods", namespace, name)
        except ApiStatusError as err:
            if err.code == 404:
                return None
            raise

    # --- pods -----------------------------------------------------------------------------

    async def _delete_pods(self, obj: dict, the_plan: Plan, failed: list[tuple[str, str]]) -> set[str]:
        """Deletes the planned pods; returns the names of those the server refused."""
        job_uid = obj["metadata"]["uid"]
        refused = set()
        for name, uid, _reason in the_plan.delete:
            if self.expectations.deleting(job_uid, uid):
                continue
            self.expectations.expect_delete(job_uid, uid)  # before the request: its watch event may come first
            try:
                await self.client.delete("pods", obj["metadata"]["namespace"], name, uid)
            except ApiStatusError as err:
                if err.code in (404, 409):  # gone already, or the name now holds a newer pod
                    continue  # observe() drops the expectation once the uid has left the cache
                self.expectations.deletion_observed(job_uid, uid)
                self._refused(obj, failed, "FailedDelete", f"Error deleting pod {name}: {err.message}")
                refused.add(name)
        return refused

    async def _create_pods(self, obj: dict, job: ParsedJob, the_plan: Plan, expected: frozenset[str],
                           failed: list[tuple[str, str]]) -> bool:
        """Creates the planned pods; False when a name is taken by a pod that is not (or not yet
        known to be) the job's, so the reconcile must look again later.

        `expected` are the creates in flight when the plan's pods were read: a pod whose add event
        lowers its expectation during this reconcile is still missing from those pods, and must not be
        asked for again (client-go checks expectations before it lists, for the same reason).

        After a refused create, the other pods of that replica type wait for the retry: they come
        from the same template (a 400 or 422 would repeat) and ask for the same quota."""
        job_uid = obj["metadata"]["uid"]
        all_made = True
        refused_types: set[str] = set()
        for replica_type, rank, mode in the_plan.create:
            name = replica_name(job.name, replica_type, rank)
            if name in expected or replica_type in refused_types or self.taken.waits(job_uid, f"pod {name}"):
                continue
            self.expectations.expect_create(job_uid, name)  # before the request: its watch event may come first
            try:
                await self.client.create("pods", desired_pod(self.kind, job, replica_type, rank, mode=mode),
                                         answer=False)
            except ApiStatusError as err:
                self.expectations.creation_observed(job_uid, name)
                if err.code == 409:
                    # The cache lags (our pod's event is on its way), or another owner holds the name:
                    # that pod is never touched, and only a retry notices when it has gone.
                    # The cache holds only the kind's children: another's pod is asked of the server.
                    holder = self.pods.get(f"{job.namespace}/{name}") or await self._live_pod(job.namespace, name)
                    if holder is None:
                        all_made = False
                    elif controller_uid(holder) != job_uid:
                        self._name_taken(obj, f"pod {name}", holder)
                    elif not self._selected(holder):
                        all_made = False
                        self.recorder.record(obj, WARNING, "FailedCreate", f"Error creating pod {name}: the job's "
                                             f"pod of that name has lost its label {self.kind.api.children_selector}"
                                             ", so the controller no longer sees it: restore the label or delete "
                                             "the pod")
                    continue
                refused_types.add(replica_type)
                self._refused(obj, failed, "FailedCreate", f"Error creating pod {name}: {err.message}")
                continue
            self.taken.freed(job_uid, f"pod {name}")
            self.recorder.record(obj, *created_event(name))
        return all_made

    async def _force_delete(self, obj: dict, the_plan: Plan, failed: list[tuple[str, str]]) -> None:
        for action in the_plan.force_delete:
            try:
                await self.client.force_delete("pods", obj["metadata"]["namespace"], action.name, action.uid)
            except ApiStatusError as err:
                if err.code not in (404, 409):  # 404/409: gone at last, or the name holds a newer pod
                    self._refused(obj, failed, "FailedDelete", f"Error force-deleting pod {action.name}: "
                                  f"{err.message}")
                continue
            self.recorder.record(obj, *action.event())

    # --- Services and the PodGroup --------------------------------------------------------

    async def _upkeep(self, obj: dict, actions: list[ChildAction], failed: list[tuple[str, str]],
                      wake_ups: list[float]) -> bool:
        """Executes the plan's Service or PodGroup actions in order; True when a create was held back because its
        name is taken (or its holder could not be told). After a refused create or patch the others wait for the
        retry: every Service is made from the same spec, and would be refused alike."""
        namespace, job_uid = obj["metadata"]["namespace"], obj["metadata"]["uid"]
        held_back = False
        for action in actions:
            what = self._what(action)
            if isinstance(action, CreateChild) and self.taken.waits(job_uid, what):
                held_back = True
                continue
            try:
                if isinstance(action, DeleteChild):
                    await self.client.delete(action.resource, namespace, action.name, action.uid)
                elif isinstance(action, CreateChild):
                    await self.client.create(action.resource, action.body, answer=False)
                    self.taken.freed(job_uid, what)
                else:
                    await self.client.patch(action.resource, namespace, action.name, action.changes, answer=False)
            except ApiStatusError as err:
                if isinstance(action, DeleteChild):
                    if err.code not in (404, 409):  # gone already, or the name now holds another object
                        self._refused(obj, failed, "FailedDelete", f"Error deleting {what}: {err.message}")
                    continue
                if isinstance(action, CreateChild) and err.code == 409:
                    if action.resource in CHILD_KINDS:  # a Service or PodGroup: whose is it?
                        held_back |= await self._already_exists(obj, action, what, wake_ups)
                    continue  # a kind's dependent (a TensorBoard): the cache has not seen it yet
                reason, doing = ("FailedCreate", "creating") if isinstance(action, CreateChild) else \
                    ("FailedUpdate", "updating")
                self._refused(obj, failed, reason, f"Error {doing} {what}: {err.message}")
                return held_back
        return held_back

    async def _already_exists(self, obj: dict, action: CreateChild, what: str, wake_ups: list[float]) -> bool:
        """A child's create refused as AlreadyExists: the job's own child the cache has not seen yet (fine), or
        another's (its name is taken: conflicts.py). True unless it is the job's own."""
        holder = await self._holder(action.resource, obj["metadata"]["namespace"], action.name)
        if holder is None:  # gone meanwhile: try again soon
            wake_ups.append(NAME_TAKEN_RETRY)
            return True
        if controller_uid(holder) == obj["metadata"]["uid"]:
            return False
        self._name_taken(obj, what, holder)
        return True


def phase_reason(status: dict) -> dict[str, str]:
    """Why the job is in its phase: the finished job's `reason`, else that of the condition that changed last to
    True (Running, Paused...), with its message."""
    true = [c for c in status.get("conditions") or () if c.get("status") == "True"]
    # The last True condition to change (of two in the same second, the later in the list).
    latest = max(true, key=lambda c: (c.get("lastTransitionTime") or "", true.index(c)), default={})
    reason = status.get("reason") or latest.get("reason") or ""
    message = next((c.get("message") for c in true if c.get("reason") == reason), latest.get("message")) or ""
    return {"reason": reason, "message": message} if message else {"reason": reason}


def _key(obj: dict) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
