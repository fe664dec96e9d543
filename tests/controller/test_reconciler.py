"""The reconciler against a fake write client, as the Kubernetes Job controller tests with its fake pod
control: the order of its writes (status before pods), Events only for writes that succeeded, no
duplicate creates while the cache lags, and what a lost status write or a refused write leads to.
No server: the caches are informers' stores filled by hand."""

from __future__ import annotations

import pytest

from apimachinery.errors import ApiStatusError
from controller.jobs.decisions.conflicts import TakenNames
from controller.jobs.execution.reconciler import WritesFailed, job_reconciler
from controller.kinds.genericjob.kind import GENERICJOB
from informers import Lister, Store, object_key
from tests.builders import JobBuilder

from .plan_support import make_pod

NOW = "2030-01-01T00:00:00Z"


class FakeClient:
    """The write client's verbs, each recorded as (verb, resource, name); `refuse` makes one fail."""

    def __init__(self, echo=None) -> None:
        self.echo = echo  # called with each status written, as the job informer would deliver it (None: never)
        self.calls: list[tuple[str, str, str]] = []
        self.statuses: list[dict] = []  # every status written
        self.refuse: dict[tuple[str, str, str], ApiStatusError] = {}

    def _do(self, verb: str, resource: str, name: str) -> None:
        self.calls.append((verb, resource, name))
        error = self.refuse.get((verb, resource, name))
        if error is not None:
            raise error

    async def replace_status(self, resource, job: dict, status: dict) -> dict:
        self._do("update", f"{resource.plural}/status", job["metadata"]["name"])
        self.statuses.append(status)
        version = f"w{len(self.statuses)}"
        written = {**job, "status": status, "metadata": {**job["metadata"], "resourceVersion": version}}
        if self.echo is not None:
            self.echo(written)
        return written

    async def create(self, resource: str, obj: dict, *, answer: bool = True) -> dict:
        self._do("create", resource, obj["metadata"]["name"])
        return obj

    async def delete(self, resource: str, namespace: str, name: str, uid: str | None = None) -> None:
        self._do("delete", resource, name)

    async def force_delete(self, resource: str, namespace: str, name: str, uid: str) -> None:
        self._do("force-delete", resource, name)

    async def patch(self, resource: str, namespace: str, name: str, changes: dict, *, answer: bool = True) -> dict:
        self._do("patch", resource, name)
        return {}

    async def get(self, resource: str, namespace: str, name: str) -> dict:
        self._do("get", resource, name)
        raise ApiStatusError(404, "NotFound", f'{resource} "{name}" not found')


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, obj: dict, event_type: str, reason: str, message: str) -> None:
        self.events.append((event_type, reason, message))


def job_object(workers: int = 2, *, service: bool = False, status: dict | None = None) -> dict:
    job = JobBuilder("job", namespace="ns", uid="job-uid", generation=1).meta(resourceVersion="10").replica(
        "worker", workers, restart_policy={"policy": "OnFailure", "limit": 3},
        template={"spec": {"containers": [{"name": "main", "image": "busybox"}]}})
    if service:
        job = job.spec(service={"ports": [{"name": "http", "port": 80}]})
    return {**job.obj(), "status": status or {}}


class Harness:
    def __init__(self, job: dict, *pods: dict, clock: float = 0.0, client_type: type[FakeClient] | None = None,
                 taken: TakenNames | None = None) -> None:
        self.stores = {name: Store() for name in ("jobs", "pods", "services", "podgroups")}
        self.put("jobs", job)
        for pod in pods:
            self.put("pods", pod)
        # The job cache has each status written at once (its echo), unless a test holds it back.
        self.client = (client_type or FakeClient)(echo=lambda job: self.put("jobs", job))
        self.recorder = FakeRecorder()
        listers = {name: Lister(store) for name, store in self.stores.items()}
        self.reconciler = job_reconciler(GENERICJOB, self.client, listers["jobs"], listers["pods"], listers["services"],
                                         listers["podgroups"], self.recorder, now=lambda: NOW, clock=lambda: clock,
                                         taken=taken)

    def put(self, cache: str, obj: dict) -> None:
        obj["metadata"].setdefault("ownerReferences", [{"apiVersion": "batch.tensorstack.dev/v1beta1",
                                                        "kind": "GenericJob", "name": "job", "uid": "job-uid",
                                                        "controller": True}])
        self.stores[cache].upsert(object_key(obj), obj)

    async def reconcile(self):
        return await self.reconciler.reconcile("ns/job")


def pod_of(rank: int, uid: str, phase: str = "Running", **kwargs) -> dict:
    pod = make_pod("worker", rank, uid, phase, **kwargs)
    pod["metadata"]["namespace"] = "ns"
    return pod


async def test_the_status_is_written_before_any_pod_and_each_pod_is_created_once():
    harness = Harness(job_object(workers=2, service=True))
    assert await harness.reconcile() is not None
    assert harness.client.calls == [("update", "genericjobs/status", "job"),
                                    ("create", "pods", "job-worker-0"), ("create", "pods", "job-worker-1"),
                                    ("create", "services", "job-worker-0"), ("create", "services", "job-worker-1")]
    assert harness.recorder.events == [("Normal", "SuccessfulCreate", "Created pod: job-worker-0"),
                                       ("Normal", "SuccessfulCreate", "Created pod: job-worker-1")]
    # The cache has seen neither the status nor the pods: a second reconcile writes the same status
    # again (from the stale job) but asks for no pod twice, since both creates are still expected.
    harness.client.calls.clear()
    await harness.reconcile()
    assert [call for call in harness.client.calls if call[1] == "pods"] == []


async def test_a_job_is_parsed_once_per_generation_while_it_runs_and_not_kept_once_finished():
    harness = Harness(job_object(workers=1))
    parses = []

    class Counting:  # the kind, counting its parses
        def __getattr__(self, name):
            return getattr(GENERICJOB, name)

        def parse(self, obj):
            parses.append(obj)
            return GENERICJOB.parse(obj)

    harness.reconciler.kind = Counting()
    await harness.reconcile()
    await harness.reconcile()
    assert len(parses) == 1  # the status write changed the job, not its generation
    harness.put("jobs", {**harness.stores["jobs"].get("ns/job"), "status": {"phase": "Succeeded"}})
    harness.reconciler.parsed(harness.stores["jobs"].get("ns/job"))
    harness.reconciler.parsed(harness.stores["jobs"].get("ns/job"))
    assert len(parses) == 2  # the first finished read used the memo and dropped it; the second parsed afresh
    assert harness.reconciler._parsed == {}


async def test_a_refused_create_is_a_warning_and_never_a_successful_create():
    harness = Harness(job_object(workers=2))
    harness.client.refuse[("create", "pods", "job-worker-0")] = ApiStatusError(403, "Forbidden", "exceeded quota")
    with pytest.raises(WritesFailed) as failed:
        await harness.reconcile()
    assert failed.value.failures == [("FailedCreate", "Error creating pod job-worker-0: exceeded quota")]
    # The other pod of the type waits for the retry (same template, same quota): no second request.
    assert harness.client.calls == [("update", "genericjobs/status", "job"), ("create", "pods", "job-worker-0")]
    assert harness.recorder.events == [("Warning", "FailedCreate", "Error creating pod job-worker-0: exceeded quota")]
    # The next reconcile's status shows the refusal in ReplicaFailure, before anything else is tried.
    harness.client.refuse.clear()
    harness.client.calls.clear()
    await harness.reconcile()
    failure = next(c for c in harness.client.statuses[1]["conditions"] if c["type"] == "ReplicaFailure")
    assert (failure["status"], failure["reason"]) == ("True", "FailedCreate")
    assert harness.client.calls[0] == ("update", "genericjobs/status", "job")


async def test_a_refused_delete_records_failed_delete_and_not_successful_delete():
    status = {"phase": "Running", "tasks": [{"type": "worker", "replicas": [
        {"name": "job-worker-0", "uid": "u0", "phase": "Running"}, {"name": "job-worker-1", "uid": "u1",
                                                                   "phase": "Running"}]}]}
    harness = Harness(job_object(workers=1, status=status), pod_of(0, "u0"), pod_of(1, "u1"))
    harness.client.refuse[("delete", "pods", "job-worker-1")] = ApiStatusError(500, "InternalError", "etcd is down")
    with pytest.raises(WritesFailed):
        await harness.reconcile()  # worker 1 is no longer in the spec: scaled down
    assert harness.client.calls == [("update", "genericjobs/status", "job"), ("delete", "pods", "job-worker-1")]
    assert ("Normal", "SuccessfulDelete", "Deleted pod: job-worker-1") not in harness.recorder.events
    assert ("Warning", "FailedDelete", "Error deleting pod job-worker-1: etcd is down") in harness.recorder.events


async def test_a_successful_delete_is_reported_after_it_was_made():
    status = {"phase": "Running", "tasks": [{"type": "worker", "replicas": [
        {"name": "job-worker-0", "uid": "u0", "phase": "Running"}, {"name": "job-worker-1", "uid": "u1",
                                                                   "phase": "Running"}]}]}
    harness = Harness(job_object(workers=1, status=status), pod_of(0, "u0"), pod_of(1, "u1"))
    await harness.reconcile()
    assert harness.client.calls == [("update", "genericjobs/status", "job"), ("delete", "pods", "job-worker-1")]
    assert harness.recorder.events == [("Normal", "SuccessfulDelete", "Deleted pod: job-worker-1")]


async def test_a_lost_status_write_touches_nothing_else():
    harness = Harness(job_object(workers=2))
    harness.client.refuse[("update", "genericjobs/status", "job")] = ApiStatusError(409, "Conflict", "stale")
    result = await harness.reconcile()
    assert result.requeue_after == 0.0 and result.lost_at == "10"
    assert harness.client.calls == [("update", "genericjobs/status", "job")]
    assert harness.recorder.events == []


async def test_a_cache_still_behind_our_own_status_write_waits_for_its_echo_without_a_request():
    harness = Harness(job_object(workers=2))
    harness.client.echo = None  # the echo of a write is late
    await harness.reconcile()  # writes the status (version "10" -> "w1"), creates both pods
    harness.client.calls.clear()
    # A pod event queues the job again before the echo of that write has reached the job cache: a write from
    # the cached version "10" could only lose, so the reconcile sends nothing and waits for the newer version.
    harness.put("pods", pod_of(0, "p0", "Pending"))
    result = await harness.reconcile()
    assert result.requeue_after is None and result.lost_at == "10"  # waits for the echo only: no retry
    assert harness.client.calls == []
    # The echo arrives: the job is reconciled from it as usual (the new pod's uid is recorded at once).
    written = harness.stores["jobs"].get("ns/job")
    harness.put("jobs", {**written, "status": harness.client.statuses[-1],
                         "metadata": {**written["metadata"], "resourceVersion": "w1"}})
    result = await harness.reconcile()
    assert result.lost_at is None and harness.client.calls == [("update", "genericjobs/status", "job")]


async def test_a_restart_is_counted_in_the_status_before_the_pod_is_deleted():
    status = {"phase": "Running", "tasks": [{"type": "worker", "replicas": [
        {"name": "job-worker-0", "uid": "u0", "phase": "Running"}]}]}
    harness = Harness(job_object(workers=1, status=status), pod_of(0, "u0", "Failed"))
    statuses = []
    write = harness.client.replace_status

    async def keep(resource, job, new):
        statuses.append(new)
        return await write(resource, job, new)

    harness.client.replace_status = keep
    await harness.reconcile()
    assert harness.client.calls == [("update", "genericjobs/status", "job"), ("delete", "pods", "job-worker-0")]
    [record] = statuses[0]["tasks"][0]["replicas"]
    assert (record["restartCount"], record["lastRestartUid"]) == (1, "u0")
    assert [e[1] for e in harness.recorder.events] == ["Restarting"]


async def test_a_stuck_pod_is_force_deleted_last_and_the_next_one_wakes_the_job():
    status = {"phase": "Running", "tasks": [{"type": "worker", "replicas": [
        {"name": "job-worker-0", "uid": "u0", "phase": "Running"},
        {"name": "job-worker-1", "uid": "u1", "phase": "Running"}]}]}
    stuck, going = pod_of(0, "u0"), pod_of(1, "u1")
    stuck["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00+00:00"
    going["metadata"]["deletionTimestamp"] = "2030-01-01T00:01:00+00:00"
    epoch = 1893456000.0  # 2030-01-01T00:00:00Z
    harness = Harness(job_object(workers=2, status=status), stuck, going, clock=epoch + 90)
    result = await harness.reconcile()
    assert harness.client.calls[-1] == ("force-delete", "pods", "job-worker-0")
    assert harness.recorder.events[-1][1] == "ForceDeleted"
    assert result.requeue_after == pytest.approx(30.0)  # worker 1 is overdue at 60 + 60 s


async def test_an_invalid_job_loses_its_services_and_keeps_its_finished_pods():
    job = job_object(workers=1, service=True)
    job["spec"]["successRules"] = [{"ghost": [0]}]
    harness = Harness(job, pod_of(0, "u0", "Succeeded"))
    harness.put("services", {"metadata": {"name": "job-worker-0", "namespace": "ns", "uid": "s0"}})
    await harness.reconcile()
    assert harness.client.calls == [("update", "genericjobs/status", "job"), ("delete", "services", "job-worker-0")]
    assert [e[1] for e in harness.recorder.events] == ["InvalidSpec"]


async def test_a_pod_created_just_before_the_job_fails_is_not_reported_deleted():
    # Both creates are sent; worker-0's pod shows up Failed (the job fails by the default rule) while the
    # cache has not seen worker-1's yet. worker-1 is unseen, not Deleted: its pod exists (issue 16).
    job = job_object(workers=2)
    job["spec"]["replicaSpecs"][0]["restartPolicy"] = {"policy": "Never", "limit": 0}
    harness = Harness(job)
    await harness.reconcile()
    statuses = harness.client.statuses
    harness.put("pods", pod_of(0, "u0", "Failed"))
    await harness.reconcile()
    replicas = {r["name"]: r["phase"] for r in statuses[-1]["tasks"][0]["replicas"]}
    assert statuses[-1]["phase"] == "Failed"
    assert replicas == {"job-worker-0": "Failed", "job-worker-1": "Creating"}
    # Once seen, the policy decides: a pod that already failed stays and is reported Failed.
    harness.put("jobs", {**job, "status": statuses[-1]})
    harness.put("pods", pod_of(1, "u1", "Failed"))
    await harness.reconcile()
    replicas = {r["name"]: r["phase"] for r in statuses[-1]["tasks"][0]["replicas"]}
    assert replicas == {"job-worker-0": "Failed", "job-worker-1": "Failed"}
    assert not [call for call in harness.client.calls if call[0] == "delete"]


async def test_creates_with_an_unchanged_status_first_prove_the_cached_job_current():
    # A new leader whose job cache lags behind its pod cache: the cached job still shows its replicas
    # Creating (the status of a reconcile that was about to create them), while the job has since
    # finished and its pods were cleaned up. The plan's status is unchanged, so nothing else would
    # stop it re-creating every pod: the status is written anyway, with the cached resourceVersion.
    first = Harness(job_object(workers=2))
    written = first.client.statuses
    first.client.refuse[("create", "pods", "job-worker-0")] = ApiStatusError(500, "InternalError", "boom")
    with pytest.raises(WritesFailed):
        await first.reconcile()
    stale = job_object(workers=2, status={**written[0], "observedGeneration": 1})
    harness = Harness(stale)
    harness.client.refuse[("update", "genericjobs/status", "job")] = ApiStatusError(409, "Conflict", "stale")
    result = await harness.reconcile()
    assert harness.client.calls == [("update", "genericjobs/status", "job")]
    assert result.lost_at == "10"
    # With a current cache the same no-op write goes through, and the pods are made.
    harness.client.refuse.clear()
    harness.client.calls.clear()
    await harness.reconcile()
    assert harness.client.calls == [("update", "genericjobs/status", "job"),
                                    ("create", "pods", "job-worker-0"), ("create", "pods", "job-worker-1")]


async def test_pods_starting_are_reported_together_and_anything_else_at_once():
    """A plan that only reports recorded pods going on from Pending to Running waits up to START_COALESCE for the
    job's other pods (one status write for all of them); a pod first seen (its uid recorded) or finished is
    written at once, and the held-back write is made once the window has passed."""
    from controller.jobs.decisions.coalesce import START_COALESCE

    harness = Harness(job_object(workers=2))
    clock = [100.0]
    harness.reconciler.status_writer.monotonic = lambda: clock[0]
    await harness.reconcile()  # creates both pods
    job = harness.stores["jobs"].get("ns/job")

    versions = iter(range(11, 100))

    def cached_status(status: dict) -> None:  # the job cache at a newer version, holding `status`
        harness.put("jobs", {**job, "status": status,
                             "metadata": {**job["metadata"], "resourceVersion": str(next(versions))}})

    cached_status(harness.client.statuses[-1])
    harness.put("pods", pod_of(0, "u0", "Pending"))
    harness.put("pods", pod_of(1, "u1", "Pending"))
    harness.client.calls.clear()
    await harness.reconcile()  # the uids are recorded at once
    assert harness.client.calls == [("update", "genericjobs/status", "job")]
    cached_status(harness.client.statuses[-1])
    harness.client.calls.clear()
    harness.put("pods", pod_of(0, "u0", "Running"))
    result = await harness.reconcile()
    assert harness.client.calls == [] and 0 < result.requeue_after <= START_COALESCE
    clock[0] += START_COALESCE / 2
    harness.put("pods", pod_of(1, "u1", "Failed"))
    await harness.reconcile()  # a pod failed (a restart): written at once, with the other's start, before the delete
    assert harness.client.calls == [("update", "genericjobs/status", "job"), ("delete", "pods", "job-worker-1")]
    records = {r["name"]: r for r in harness.client.statuses[-1]["tasks"][0]["replicas"]}
    assert records["job-worker-0"]["phase"] == "Running" and records["job-worker-1"]["restartCount"] == 1

    # Alone: held back once, then written when the window has passed.
    harness = Harness(job_object(workers=2))
    harness.reconciler.status_writer.monotonic = lambda: clock[0]
    await harness.reconcile()
    job = harness.stores["jobs"].get("ns/job")
    cached_status(harness.client.statuses[-1])
    harness.put("pods", pod_of(0, "u0", "Pending"))
    harness.put("pods", pod_of(1, "u1", "Pending"))
    await harness.reconcile()
    cached_status(harness.client.statuses[-1])
    harness.client.calls.clear()
    harness.put("pods", pod_of(0, "u0", "Running"))
    assert (await harness.reconcile()).requeue_after > 0 and harness.client.calls == []
    clock[0] += START_COALESCE
    await harness.reconcile()
    assert harness.client.calls == [("update", "genericjobs/status", "job")]
    assert harness.client.statuses[-1]["ready"] == "1/2"


async def test_a_create_or_delete_lost_on_the_way_is_not_awaited_by_the_retry():
    # A create whose connection broke after it was written (never resent: the write path repeats no create) may or
    # may not have made the pod. Its expectation is dropped, as client-go drops it on any error, so the retry asks
    # again at once instead of waiting out the expectation's minute; a pod made after all would answer 409.
    harness = Harness(job_object(workers=1))
    lost = ConnectionResetError("the API server closed the connection")
    original = harness.client.create

    async def create_once_lost(resource, obj, *, answer=True):
        if resource == "pods" and not harness.client.calls.count(("create", "pods", obj["metadata"]["name"])):
            harness.client.calls.append(("create", "pods", obj["metadata"]["name"]))
            raise lost
        return await original(resource, obj, answer=answer)

    harness.client.create = create_once_lost
    with pytest.raises(ConnectionResetError):
        await harness.reconcile()
    await harness.reconcile()
    assert harness.client.calls.count(("create", "pods", "job-worker-0")) == 2

    harness = Harness(job_object(workers=1), pod_of(0, "u0", "Failed"))
    harness.client.refuse[("delete", "pods", "job-worker-0")] = lost
    with pytest.raises(ConnectionResetError):
        await harness.reconcile()
    del harness.client.refuse[("delete", "pods", "job-worker-0")]
    await harness.reconcile()
    assert harness.client.calls.count(("delete", "pods", "job-worker-0")) == 2
