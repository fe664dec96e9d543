"""One reconcile of one GenericJob: read the caches, plan, write the status once, act, then record events.

Level-triggered and idempotent. The plan (plan.py) is pure; this module does the I/O around it:
- the status goes first, through the status subresource with the cached resourceVersion, so a
  restart is counted before its pod is touched and a stale cache gets a quiet 409 and a requeue;
- then pod deletes (with uid preconditions), the PodGroup, pod creates, Service upkeep;
- then Events, which only ever describe writes that succeeded;
- last, pods stuck terminating past their grace period (a lost node) are force-deleted, since the
  replacement of a replica has the same name and cannot exist before the old pod is gone.
A reconcile asks for a timed wake-up only for what no watch event would announce: a stuck pod's
deadline, or a pod name held by another owner.
Expectations remember the creates and deletes in flight, so a cache that has not yet seen them does
not make the same request twice; they are raised before each request and lowered by the pod
informer's handlers (as client-go's ControllerExpectations), so a pod deleted just after it was
created is replaced at once.

A write the server refuses (any code: 400, 403 quota or admission, 422, 500...) does not stop the
reconcile: the other writes and the plan's Events still happen. Each refusal is a Warning Event
(FailedCreate / FailedDelete) with the server's message, and the reconcile then ends with
`WritesFailed`, so the key is retried with the rate limiter's backoff. While writes keep failing,
the job's ReplicaFailure condition says so: the status is written once, at the start of a
reconcile, so it shows the failure the previous attempt met (remembered here, not in the API).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import structlog

from controller.jobs import podgroup, services
from controller.jobs import status as st
from controller.jobs.naming import controller_uid, replica_name, replica_of
from controller.jobs.plan import NORMAL, WARNING, Plan, plan, plan_invalid
from controller.jobs.pods import desired_pod
from controller.kinds.genericjob.models import TERMINAL_PHASES, CleanUpPolicy, GenericJob
from controller.kinds.genericjob.validation import SpecError, invalid_spec_message, parse, validate
from controller.runtime.client import KubeClient
from controller.runtime.events import EventRecorder
from informers import ApiStatusError, Lister

log = structlog.get_logger("controller.jobs.reconciler")

EXPECTATION_TTL = 60.0  # seconds before an unobserved create/delete is assumed lost and retried
# A pod name held by a pod that is not the job's: no event of ours announces when it goes, so look again.
NAME_TAKEN_RETRY = 1.0
# Seconds a pod may stay terminating after its grace period ended before it is force-deleted.
STUCK_TERMINATING_AFTER = 60.0


@dataclass(frozen=True)
class Result:
    requeue_after: float | None = None  # None: done until something changes
    # The job's resourceVersion a status write lost with (409): the cache lagged, and the version
    # that won is on its way; the controller reconciles again when it arrives.
    lost_at: str | None = None

    @property
    def requeue(self) -> bool:
        return self.requeue_after is not None


DONE = Result()


class WritesFailed(Exception):
    """Writes of a reconcile the server refused: each was recorded as a Warning Event on the job,
    and the reconcile went on; raising this at its end retries the key with backoff."""

    def __init__(self, failures: list[tuple[str, str]], wake_up: float | None = None) -> None:
        super().__init__("; ".join(message for _, message in failures))
        self.failures = failures
        # A timed look the reconcile asked for besides (a stuck pod's deadline): the backoff must not
        # push it back.
        self.wake_up = wake_up


@dataclass(frozen=True)
class WriteFailure:
    """The first refused write of a job's last reconcile, shown in its ReplicaFailure condition."""

    reason: str  # FailedCreate or FailedDelete
    message: str


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Expectations:
    """Per job: pod names created and pod uids deleted that the cache has not reflected yet."""

    def __init__(self) -> None:
        self._creates: dict[str, dict[str, float]] = {}
        self._deletes: dict[str, dict[str, float]] = {}

    def observe(self, job_uid: str, pods: list[dict]) -> None:
        names = {p["metadata"]["name"] for p in pods}
        uids = {p["metadata"]["uid"] for p in pods}
        now = time.monotonic()
        creates = self._creates.get(job_uid)
        if creates:
            for name in [n for n, t in creates.items() if n in names or now - t > EXPECTATION_TTL]:
                del creates[name]
        deletes = self._deletes.get(job_uid)
        if deletes:
            for uid in [u for u, t in deletes.items() if u not in uids or now - t > EXPECTATION_TTL]:
                del deletes[uid]

    def creating(self, job_uid: str, name: str) -> bool:
        return name in self._creates.get(job_uid, ())

    def creating_now(self, job_uid: str) -> frozenset[str]:
        """The names expected at this moment: a reconcile takes this with its read of the cache, and
        decides from the two together (a pod observed later was not in the pods it planned from)."""
        return frozenset(self._creates.get(job_uid, ()))

    def deleting(self, job_uid: str, uid: str) -> bool:
        return uid in self._deletes.get(job_uid, ())

    def expect_create(self, job_uid: str, name: str) -> None:
        self._creates.setdefault(job_uid, {})[name] = time.monotonic()

    def expect_delete(self, job_uid: str, uid: str) -> None:
        self._deletes.setdefault(job_uid, {})[uid] = time.monotonic()

    def creation_observed(self, job_uid: str, name: str) -> None:
        """A pod of that name was seen (pod informer add or delete), or its create failed."""
        creates = self._creates.get(job_uid)
        if creates:
            creates.pop(name, None)

    def deletion_observed(self, job_uid: str, uid: str) -> None:
        """The pod is gone (pod informer delete, tombstones included), or its delete failed."""
        deletes = self._deletes.get(job_uid)
        if deletes:
            deletes.pop(uid, None)

    def forget(self, job_uid: str) -> None:
        self._creates.pop(job_uid, None)
        self._deletes.pop(job_uid, None)


class Reconciler:
    def __init__(self, client: KubeClient, jobs: Lister, pods: Lister, services_lister: Lister,
                 podgroups: Lister | None, recorder: EventRecorder, *, now=utc_now, clock=time.time,
                 stuck_after: float = STUCK_TERMINATING_AFTER) -> None:
        self.client = client
        self.jobs = jobs
        self.pods = pods
        self.services = services_lister
        self.podgroups = podgroups
        self.recorder = recorder
        self.now = now  # the timestamps written in the status
        self.clock = clock  # wall-clock seconds, to compare with deletionTimestamps
        self.stuck_after = stuck_after
        self.expectations = Expectations()
        # job uid -> the first write refused in its last reconcile, shown by the next status write.
        self._failures: dict[str, WriteFailure] = {}
        # uid -> (generation, parsed job or spec errors): a job is parsed once per generation.
        self._parsed: dict[str, tuple[int, GenericJob | list[SpecError]]] = {}

    def parsed(self, obj: dict) -> GenericJob | list[SpecError]:
        meta = obj["metadata"]
        cached = self._parsed.get(meta["uid"])
        if cached is not None and cached[0] == meta.get("generation"):
            return cached[1]
        job = parse(obj)
        if isinstance(job, GenericJob):
            problems = validate(job)
            job = problems or job
        self._parsed[meta["uid"]] = (meta.get("generation"), job)
        return job

    async def reconcile(self, key: str) -> Result:
        obj = self.jobs.get(key)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            # Deleted: the garbage collector removes what the job owned.
            return DONE
        uid = obj["metadata"]["uid"]
        pods = self.pods.controlled_by(uid)
        self.expectations.observe(uid, pods)
        expected = self.expectations.creating_now(uid)
        status = obj.get("status") or {}
        job = self.parsed(obj)
        now = self.now()
        if isinstance(job, list):
            the_plan = plan_invalid(status, pods, invalid_spec_message(job), now)
        else:
            the_plan = plan(job, status, pods, now)
            if await self._cache_lags(obj, status, pods):
                return Result(requeue_after=0.2)
            the_plan = self._show_write_failure(uid, status, the_plan, now)
        written = await self._write_status(obj, status, the_plan)
        if written is None:
            return Result(requeue_after=0.0, lost_at=obj["metadata"]["resourceVersion"])
        failed: list[tuple[str, str]] = []  # (reason, message) of every write the server refused
        refused_deletes = await self._delete_pods(obj, the_plan, failed)
        wake_ups: list[float] = []  # seconds until something not announced by any event needs a look
        if isinstance(job, GenericJob):
            # A paused job makes nothing new (a job created paused has no Services or PodGroup until
            # resumed); what it already has is kept for the resume.
            making = not the_plan.terminal and not job.spec.run_mode.paused
            # The PodGroup before the pods, so a gang scheduler never sees a pod of a group it does not
            # know; the pods before their Services (as training-operator), since pods are what a job waits on.
            await self._sync_podgroup(obj, job, the_plan, making, failed)
            if not the_plan.terminal and not await self._create_pods(obj, job, the_plan, expected, failed):
                wake_ups.append(NAME_TAKEN_RETRY)
            await self._sync_services(obj, job, the_plan, making, failed)
        else:
            await self._remove_services_and_podgroup(obj, failed)
        for event_type, reason, message in the_plan.events:
            if reason == "SuccessfulDelete" and message in refused_deletes:
                continue  # the server refused it: FailedDelete says so instead
            self.recorder.record(written, event_type, reason, message)
        stuck_check = await self._force_delete_stuck(obj, pods, failed)
        if stuck_check is not None:
            wake_ups.append(stuck_check)
        if failed:
            self._failures[uid] = WriteFailure(*failed[0])
            raise WritesFailed(failed, min(wake_ups) if wake_ups else None)
        if self._failures.pop(uid, None) is not None:
            # The status just written still shows the last attempt's failure: look again to clear it.
            wake_ups.append(FAILURE_CLEARED_RECHECK)
        return Result(requeue_after=min(wake_ups)) if wake_ups else DONE

    def forget(self, uid: str) -> None:
        self._parsed.pop(uid, None)
        self._failures.pop(uid, None)
        self.expectations.forget(uid)

    def _refused(self, obj: dict, failed: list[tuple[str, str]], reason: str, message: str) -> None:
        """A write the server refused: a Warning Event now, a retry with backoff at the end of the reconcile."""
        log.info("write refused", job=_key(obj), reason=reason, message=message)
        self.recorder.record(obj, WARNING, reason, message)
        failed.append((reason, message))

    def _show_write_failure(self, uid: str, status: dict, the_plan: Plan, now: str) -> Plan:
        """The plan with ReplicaFailure True for the write the previous reconcile saw refused (as a
        ReplicaSet shows its FailedCreate). A finished job's conditions never change."""
        failure = self._failures.get(uid)
        if failure is None or the_plan.terminal:
            return the_plan
        conditions = st.write_failure_condition(the_plan.status.get("conditions") or [],
                                                status.get("conditions") or [], failure.reason, failure.message, now)
        return replace(the_plan, status={**the_plan.status, "conditions": conditions})

    # --- status ---------------------------------------------------------------------------

    async def _write_status(self, obj: dict, status: dict, the_plan: Plan) -> dict | None:
        """The one status write of this reconcile; None when it lost a race (requeue)."""
        new = {**the_plan.status, "observedGeneration": obj["metadata"].get("generation")}
        if new == status:
            return obj
        try:
            return await self.client.replace_status(obj, new)
        except ApiStatusError as err:
            if err.code in (404, 409):  # stale cache or job gone: the next event brings it back
                log.debug("status write lost a race", job=_key(obj), code=err.code)
                return None
            raise

    async def _cache_lags(self, obj: dict, status: dict, pods: list[dict]) -> bool:
        """A replica whose recorded pod is missing from the cache may only be missing from the cache.

        Before the plan counts such a pod as lost (a restart), ask the server; if the pod is there,
        the pod cache is behind the job cache (e.g. just after a leader change): wait for it.
        """
        present = {p["metadata"]["uid"] for p in pods}
        for task in status.get("tasks") or ():
            for replica in task.get("replicas") or ():
                uid = replica.get("uid")
                if not uid or uid in present or replica.get("phase") in ("Deleted", "Creating", "Succeeded",
                                                                          "Failed"):
                    continue
                if uid == replica.get("lastRestartUid") or self.expectations.deleting(obj["metadata"]["uid"], uid):
                    continue
                try:
                    live = await self.client.get("pods", obj["metadata"]["namespace"], replica["name"])
                except ApiStatusError as err:
                    if err.code == 404:
                        continue
                    raise
                if live["metadata"]["uid"] == uid:
                    return True
        return False

    # --- pods -----------------------------------------------------------------------------

    async def _delete_pods(self, obj: dict, the_plan: Plan, failed: list[tuple[str, str]]) -> set[str]:
        """Deletes the planned pods; returns the plan's Event messages of those the server refused."""
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
                refused.add(f"Deleted pod: {name}")
        return refused

    async def _create_pods(self, obj: dict, job: GenericJob, the_plan: Plan, expected: frozenset[str],
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
            if name in expected or replica_type in refused_types:
                continue
            self.expectations.expect_create(job_uid, name)  # before the request: its watch event may come first
            try:
                await self.client.create("pods", desired_pod(job, replica_type, rank, mode=mode))
            except ApiStatusError as err:
                self.expectations.creation_observed(job_uid, name)
                if err.code == 409:
                    # The cache lags (our pod's event is on its way), or another owner holds the name:
                    # that pod is never touched, and only a retry notices when it has gone.
                    holder = self.pods.get(f"{job.namespace}/{name}")
                    if holder is None or controller_uid(holder) != job_uid:
                        all_made = False
                        if holder is not None:
                            self.recorder.record(obj, WARNING, "FailedCreate", f"Error creating pod {name}: a pod "
                                                 "of that name exists and is not controlled by this job")
                    continue
                refused_types.add(replica_type)
                self._refused(obj, failed, "FailedCreate", f"Error creating pod {name}: {err.message}")
                continue
            self.recorder.record(obj, NORMAL, "SuccessfulCreate", f"Created pod: {name}")
        return all_made

    async def _force_delete_stuck(self, obj: dict, pods: list[dict], failed: list[tuple[str, str]]) -> float | None:
        """Force-deletes pods still terminating `stuck_after` seconds past the end of their grace period.

        Such a pod is on a node that is gone or not answering, and it blocks its replica: the
        replacement has the same name, so it cannot be made while the old pod exists. Returns the
        seconds until the next terminating pod would be overdue (a wake-up, since its kubelet may
        never send another event), or None when no pod is terminating.
        """
        next_check = None
        now = self.clock()
        for pod in pods:
            meta = pod["metadata"]
            deadline = meta.get("deletionTimestamp")
            if not deadline:
                continue
            overdue = now - (_epoch(deadline) + self.stuck_after)
            if overdue < 0:
                next_check = -overdue if next_check is None else min(next_check, -overdue)
                continue
            try:
                await self.client.force_delete("pods", meta["namespace"], meta["name"], meta["uid"])
            except ApiStatusError as err:
                if err.code not in (404, 409):  # 404/409: gone at last, or the name holds a newer pod
                    self._refused(obj, failed, "FailedDelete", f"Error force-deleting pod {meta['name']}: "
                                  f"{err.message}")
                continue
            self.recorder.record(obj, WARNING, "ForceDeleted", f"Force-deleted pod {meta['name']}: still "
                                 f"terminating {overdue + self.stuck_after:.0f}s after its grace period ended "
                                 "(its node may be lost)")
        return next_check

    # --- services and the PodGroup --------------------------------------------------------

    async def _sync_services(self, obj: dict, job: GenericJob, the_plan: Plan, making: bool,
                             failed: list[tuple[str, str]]) -> None:
        namespace = obj["metadata"]["namespace"]
        existing = {s["metadata"]["name"]: s for s in self.services.controlled_by(job.uid)}
        wanted = self._wanted_services(job, the_plan)
        for name, svc in existing.items():
            if name not in wanted:
                await self._delete_child(obj, failed, "services", name, svc["metadata"]["uid"])
        ports = services.service_ports(job)
        for name, (replica_type, rank) in wanted.items():
            svc = existing.get(name)
            if svc is not None:
                if not the_plan.terminal and services.stored_ports(svc) != ports:
                    # spec.service.ports was edited: a merge patch replaces the port list whole.
                    if not await self._write_child(obj, failed, "FailedUpdate", "updating", "services", name,
                                                   self.client.patch("services", namespace, name,
                                                                     {"spec": {"ports": ports}})):
                        return  # every Service has the same ports: the others would be refused alike
                continue
            if not making:
                continue
            body = services.desired_service(job, replica_type, rank)
            if not await self._write_child(obj, failed, "FailedCreate", "creating", "services", name,
                                           self.client.create("services", body)):
                return  # every Service is made from the same spec.service: the others would be refused alike

    def _wanted_services(self, job: GenericJob, the_plan: Plan) -> dict[str, tuple[str, int]]:
        """One Service per replica while the job runs; after it ends, only for replicas not cleaned up."""
        if job.spec.service is None:
            return {}
        wanted = {replica_name(job.name, spec.type, rank): (spec.type, rank)
                  for spec in job.spec.replica_specs for rank in range(spec.replicas)}
        if the_plan.terminal and job.spec.clean_up_policy != CleanUpPolicy.NONE:
            deleted = {r["name"] for t in the_plan.status.get("tasks") or () for r in t.get("replicas") or ()
                       if r.get("phase") == "Deleted"}
            if job.spec.clean_up_policy == CleanUpPolicy.ALL:
                return {}
            wanted = {name: replica for name, replica in wanted.items() if name not in deleted}
        return wanted

    async def _sync_podgroup(self, obj: dict, job: GenericJob, the_plan: Plan, making: bool,
                             failed: list[tuple[str, str]]) -> None:
        if self.podgroups is None:
            return
        desired = podgroup.desired_podgroup(job)
        current = self.podgroups.controlled_by(job.uid)
        finished = the_plan.terminal and job.spec.clean_up_policy != CleanUpPolicy.NONE
        if desired is None or finished:
            for pg in current:
                await self._delete_child(obj, failed, "podgroups", pg["metadata"]["name"], pg["metadata"]["uid"])
            return
        name = desired["metadata"]["name"]
        if not current:
            if making:
                await self._write_child(obj, failed, "FailedCreate", "creating", "podgroups", name,
                                        self.client.create("podgroups", desired))
            return
        # Scale edits change the gang size; queue and priority follow the spec too.
        for pg in current:
            spec = pg.get("spec") or {}
            changes = {k: v for k, v in desired["spec"].items() if spec.get(k) != v}
            if changes and not the_plan.terminal:
                await self._write_child(obj, failed, "FailedUpdate", "updating", "podgroups", pg["metadata"]["name"],
                                        self.client.patch("podgroups", job.namespace, pg["metadata"]["name"],
                                                          {"spec": changes}))

    async def _remove_services_and_podgroup(self, obj: dict, failed: list[tuple[str, str]]) -> None:
        uid = obj["metadata"]["uid"]
        for svc in self.services.controlled_by(uid):
            await self._delete_child(obj, failed, "services", svc["metadata"]["name"], svc["metadata"]["uid"])
        for pg in self.podgroups.controlled_by(uid) if self.podgroups is not None else ():
            await self._delete_child(obj, failed, "podgroups", pg["metadata"]["name"], pg["metadata"]["uid"])

    async def _write_child(self, obj: dict, failed: list[tuple[str, str]], reason: str, doing: str, resource: str,
                           name: str, request) -> bool:
        """Awaits a create or patch of a Service or PodGroup; False when the server refused it (recorded).
        409 on a create is fine: the cache has not seen that child yet."""
        try:
            await request
        except ApiStatusError as err:
            if err.code == 409 and doing == "creating":
                return True
            self._refused(obj, failed, reason, f"Error {doing} {_KINDS[resource]} {name}: {err.message}")
            return False
        return True

    async def _delete_child(self, obj: dict, failed: list[tuple[str, str]], resource: str, name: str,
                            uid: str) -> None:
        try:
            await self.client.delete(resource, obj["metadata"]["namespace"], name, uid)
        except ApiStatusError as err:
            if err.code not in (404, 409):  # gone already, or the name now holds another object
                self._refused(obj, failed, "FailedDelete", f"Error deleting {_KINDS[resource]} {name}: {err.message}")


_KINDS = {"services": "Service", "podgroups": "PodGroup"}
FAILURE_CLEARED_RECHECK = 0.05  # seconds; see Reconciler.reconcile


def _epoch(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp).timestamp()


def _key(obj: dict) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def is_terminal(obj: dict) -> bool:
    return (obj.get("status") or {}).get("phase") in TERMINAL_PHASES


def owner_key(obj: dict) -> str | None:
    """The `namespace/name` of the GenericJob controlling a pod, Service or PodGroup."""
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "GenericJob" and ref.get("apiVersion", "").startswith(
                "batch.tensorstack.dev/"):
            return f"{obj['metadata'].get('namespace', '')}/{ref['name']}"
    return None


__all__ = ["DONE", "Reconciler", "Result", "WriteFailure", "WritesFailed", "is_terminal", "owner_key", "replica_of"]
