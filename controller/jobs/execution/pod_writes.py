"""A plan's pod writes: deletes with uid preconditions, creates (each expected before its request, so a cache
that has not seen it yet does not make it twice), and force deletes of pods stuck terminating. A refused write is a
Warning Event and a retry (refusals.py); a name held by another owner's pod is a conflict, never touched. The
reconciler (reconciler.py) is given one, as Kubernetes' controllers are given a PodControlInterface."""

from __future__ import annotations

from apimachinery.errors import ApiStatusError
from controller.jobs.children.pods import desired_pod
from controller.jobs.decisions.actions import WARNING, Plan, created_event
from controller.jobs.execution.refusals import Refusals
from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.schema.naming import controller_uid, replica_name
from controller.runtime.client import KubeClient
from controller.runtime.events import EventRecorder
from controller.runtime.expectations import Expectations
from informers import CacheReader


class PodWrites:
    """The pod deletes, creates and force deletes of a plan; a pod asked of the server."""

    def __init__(self, kind: JobKind, client: KubeClient, pods: CacheReader, recorder: EventRecorder,
                 expectations: Expectations, refusals: Refusals) -> None:
        """`pods`: the pod cache (the kind's children); `expectations`: the creates and deletes in flight, which the
        pod informer's handlers lower (the reconciler's, shared)."""
        self.kind = kind
        self.client = client
        self.pods = pods
        self.recorder = recorder
        self.expectations = expectations
        self.refusals = refusals

    async def delete(self, obj: dict, the_plan: Plan, failed: list[tuple[str, str]]) -> set[str]:
        """Deletes the planned pods; returns the names of those the server refused."""
        job_uid = obj["metadata"]["uid"]
        refused = set()
        for name, uid, _reason in the_plan.delete:
            if self.expectations.deleting(job_uid, uid):
                continue
            self.expectations.expect_delete(job_uid, uid)  # before the request: its watch event may come first
            try:
                await self.client.delete("pods", obj["metadata"]["namespace"], name, uid)
            except (ApiStatusError, OSError, TimeoutError) as err:
                if not isinstance(err, ApiStatusError):
                    # Lost on the way (a broken connection, a timeout): whether it was done is unknown, so it is
                    # not awaited (client-go lowers the expectation on any error); the retry asks again, and a
                    # delete already done answers 404.
                    self.expectations.deletion_observed(job_uid, uid)
                    raise
                if err.code in (404, 409):  # gone already, or the name now holds a newer pod
                    continue  # observe() drops the expectation once the uid has left the cache
                self.expectations.deletion_observed(job_uid, uid)
                self.refusals.refused(obj, failed, "FailedDelete", f"Error deleting pod {name}: {err.message}")
                refused.add(name)
        return refused

    async def create(self, obj: dict, job: ParsedJob, the_plan: Plan, expected: frozenset[str],
                     failed: list[tuple[str, str]]) -> bool:
        """Creates the planned pods; False when a name is taken by a pod that is not (or not yet
        known to be) the job's, so the reconcile must look again later.

        `expected` are the creates in flight when the plan's pods were read: a pod whose add event
        lowers its expectation during this reconcile is still missing from those pods, and must not be
        asked for again (client-go checks expectations before it lists, for the same reason).

        After a refused create, the other pods of that replica type wait for the retry: they come
        from the same template (a 400 or 422 would repeat) and ask for the same quota."""
        job_uid = obj["metadata"]["uid"]
        taken = self.refusals.taken
        all_made = True
        refused_types: set[str] = set()
        for replica_type, rank, mode in the_plan.create:
            name = replica_name(job.name, replica_type, rank)
            if name in expected or replica_type in refused_types or taken.waits(job_uid, f"pod {name}"):
                continue
            self.expectations.expect_create(job_uid, name)  # before the request: its watch event may come first
            try:
                await self.client.create("pods", desired_pod(self.kind, job, replica_type, rank, mode=mode),
                                         answer=False)
            except (ApiStatusError, OSError, TimeoutError) as err:
                self.expectations.creation_observed(job_uid, name)
                if not isinstance(err, ApiStatusError):
                    # Lost on the way: the pod may or may not exist, so it is not awaited (client-go lowers the
                    # expectation on any error) and the retry asks again; a pod made after all answers 409, and
                    # its holder is this job.
                    raise
                if err.code == 409:
                    # The cache lags (our pod's event is on its way), or another owner holds the name:
                    # that pod is never touched, and only a retry notices when it has gone.
                    # The cache holds only the kind's children: another's pod is asked of the server.
                    holder = self.pods.get(f"{job.namespace}/{name}") or await self.live(job.namespace, name)
                    if holder is None:
                        all_made = False
                    elif controller_uid(holder) != job_uid:
                        self.refusals.name_taken(obj, f"pod {name}", holder)
                    elif not self.selected(holder):
                        all_made = False
                        self.recorder.record(obj, WARNING, "FailedCreate", f"Error creating pod {name}: the job's "
                                             f"pod of that name has lost its label {self.kind.api.children_selector}"
                                             ", so the controller no longer sees it: restore the label or delete "
                                             "the pod")
                    continue
                refused_types.add(replica_type)
                self.refusals.refused(obj, failed, "FailedCreate", f"Error creating pod {name}: {err.message}")
                continue
            taken.freed(job_uid, f"pod {name}")
            self.recorder.record(obj, *created_event(name))
        return all_made

    async def force_delete(self, obj: dict, the_plan: Plan, failed: list[tuple[str, str]]) -> None:
        for action in the_plan.force_delete:
            try:
                await self.client.force_delete("pods", obj["metadata"]["namespace"], action.name, action.uid)
            except ApiStatusError as err:
                if err.code not in (404, 409):  # 404/409: gone at last, or the name holds a newer pod
                    self.refusals.refused(obj, failed, "FailedDelete", f"Error force-deleting pod {action.name}: "
                                          f"{err.message}")
                continue
            self.recorder.record(obj, *action.event())

    async def live(self, namespace: str, name: str) -> dict | None:
        """The pod as the server has it now (None: there is none)."""
        try:
            return await self.client.get("pods", namespace, name)
        except ApiStatusError as err:
            if err.code == 404:
                return None
            raise

    def selected(self, pod: dict) -> bool:
        """Does the pod informer's selector (the kind's children selector) take this pod?"""
        return self.kind.api.children_selector in (pod["metadata"].get("labels") or {})
