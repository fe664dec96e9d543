"""Every outcome is judged, and debug pods count nothing (issue 33's defects 1, 2 and 7), for every kind, end to
end against localcluster. Most tests stop the controller, make a pod fail (or delete it), edit the job, and
start the controller again: it sees the outcome and the edit in the same reconcile, as a lagging or restarted
controller does. The spec's "Every outcome is judged" and "Debug pods decide nothing and count nothing"."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from controller.jobs.execution.controller import JobController
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.pytorch.kind import PYTORCH
from controller.kinds.pytorch.models import PLURAL as PT_PLURAL
from controller.kinds.tensorflow.kind import TENSORFLOW
from controller.kinds.tensorflow.models import PLURAL as TF_PLURAL

from .conftest import FOREVER, Jobs, condition, finish_pod, genericjob, phase, scripts
from .test_pytorch import LABEL as PT_LABEL
from .test_pytorch import pjob
from .test_tensorflow import LABEL as TF_LABEL
from .test_tensorflow import tfjob

pytestmark = pytest.mark.servers("local", "real", once_on_real=True)  # each kind here, one on the real server

GJ_LABEL = "genericjob.batch.tensorstack.dev/name"


@dataclass
class Kind:
    """One kind as these tests use it: its engine kind, its API, how to build a job of `{type: count}` replicas
    under one restart policy and limit, and how its run-mode switches are spelled."""

    name: str
    engine: object
    plural: str | None
    label: str
    switch: str  # "enabled" (GenericJob, TensorFlow) or "enable" (PyTorch, as T9k's manual spells it)

    def job(self, name: str, replicas: dict[str, int], policy: str, limit: int | None, **spec) -> dict:
        if self.engine is GENERICJOB:
            restart = {"policy": policy} if limit is None else {"policy": policy, "limit": limit}
            return genericjob(name, replicas, restart=restart, **spec)
        run_policy = {} if limit is None else {"backoffLimit": limit}
        if self.engine is TENSORFLOW:
            return tfjob(name, replicas, restart=policy, run_policy=run_policy or None, **spec)
        return pjob(name, replicas, restart=policy, **({"runPolicy": run_policy} if run_policy else {}), **spec)

    def mode(self, which: str, on: bool) -> dict:
        return {"spec": {"runMode": {which: {self.switch: on}}}}


GJ = Kind("GenericJob", GENERICJOB, None, GJ_LABEL, "enabled")
TF = Kind("TensorFlowTrainingJob", TENSORFLOW, TF_PLURAL, TF_LABEL, "enabled")
PT = Kind("PyTorchTrainingJob", PYTORCH, PT_PLURAL, PT_LABEL, "enable")
KINDS = [pytest.param(GJ, id="gj"), pytest.param(TF, id="tf"), pytest.param(PT, id="pt")]


class Running:
    """The controller of one kind, stopped and started again as a crash or an upgrade would."""

    def __init__(self, kind: Kind, rest_client, config) -> None:
        self.kind, self.rest_client, self.config = kind, rest_client, config
        self.current: JobController | None = None

    async def start(self) -> None:
        self.current = JobController(self.kind.engine, self.rest_client, self.config)
        await self.current.start(sync_timeout=10)

    async def stop(self) -> None:
        if self.current is not None:
            made, self.current = self.current, None
            await made.stop()


@pytest.fixture(params=KINDS)
def kind(request) -> Kind:
    return request.param


@pytest.fixture
async def running(kind, rest_client, config):
    made = Running(kind, rest_client, config)
    yield made
    await made.stop()


@pytest.fixture
def kjobs(kind, api_client) -> Jobs:
    return Jobs(api_client, plural=kind.plural, label_job_name=kind.label) if kind.plural else Jobs(api_client)


def records(job: dict) -> dict[str, dict]:
    """The replica records by pod name, wherever the kind keeps them."""
    return {r["name"]: r for t in (job.get("status") or {}).get("tasks") or ()
            for r in t.get("replicas") or t.get("replicaStatus") or ()}


def removed(job: dict) -> dict[str, dict]:
    """The records of ranks scaled away: kept in their type's task, Deleted (never in status.removedReplicas)."""
    assert "removedReplicas" not in (job.get("status") or {}), job["status"]
    return {name: r for name, r in records(job).items() if r.get("phase") == "Deleted"}


def backoff(job: dict) -> int:
    return int((job.get("status") or {}).get("backoffCount") or 0)


async def _running_pods(jobs: Jobs, job: str, count: int, old: set[str] = frozenset()) -> list:
    return await jobs.wait_pods(job, lambda pods: len(pods) == count and all(
        p.status.phase == "Running" and p.metadata.uid not in old and p.metadata.deletion_timestamp is None
        for p in pods))


async def _delete_pod(jobs: Jobs, name: str) -> None:
    await jobs.core.delete_namespaced_pod(name, "default")
    await jobs.wait_pods(name.rsplit("-", 2)[0], lambda pods: name not in {p.metadata.name for p in pods})


# --- defect 1: debug pods use the workload's budget ---------------------------------------------------------------


@pytest.mark.parametrize("limit", [None, 1])
async def test_a_debug_pod_deleted_or_ended_is_replaced_and_counts_nothing(cluster, kind, running, kjobs, limit):
    # Debug mode under OnFailure (GenericJob's default limit is 0): a debug pod deleted by hand, and one that
    # ends, are replaced as they were, no restart counted; leaving debug runs the workload with every budget.
    scripts(cluster, "dbg", {"*": FOREVER})
    await running.start()
    await kjobs.submit(kind.job("dbg", {"worker": 1}, "OnFailure", limit, runMode={"debug": {kind.switch: True}}))
    [first] = await _running_pods(kjobs, "dbg", 1)
    assert first.spec.containers[0].command == ["sleep", "inf"]
    await kjobs.core.delete_namespaced_pod("dbg-worker-0", "default")
    [second] = await _running_pods(kjobs, "dbg", 1, {first.metadata.uid})
    assert second.spec.containers[0].command == ["sleep", "inf"]  # a debug pod again
    await finish_pod(kjobs, "dbg-worker-0", 1)  # a debug session that ends (its shell exited 1)
    [third] = await _running_pods(kjobs, "dbg", 1, {first.metadata.uid, second.metadata.uid})
    job = await kjobs.wait("dbg", lambda j: records(j).get("dbg-worker-0", {}).get("uid") == third.metadata.uid)
    assert phase(job) not in ("Failed", "Succeeded"), job["status"]
    assert backoff(job) == 0 and records(job)["dbg-worker-0"]["restartCount"] == 0
    await kjobs.patch("dbg", kind.mode("debug", False))
    [workload] = await _running_pods(kjobs, "dbg", 1, {third.metadata.uid})
    assert workload.spec.containers[0].command != ["sleep", "inf"]
    job = await kjobs.wait("dbg", lambda j: phase(j) == "Running"
                           and records(j)["dbg-worker-0"]["uid"] == workload.metadata.uid)
    assert backoff(job) == 0 and records(job)["dbg-worker-0"]["restartCount"] == 0


async def test_a_debug_pod_deleted_as_debug_is_turned_off_counts_nothing(cluster, kind, running, kjobs):
    scripts(cluster, "off", {"*": FOREVER})
    await running.start()
    await kjobs.submit(kind.job("off", {"worker": 1}, "OnFailure", 1, runMode={"debug": {kind.switch: True}}))
    [debug] = await _running_pods(kjobs, "off", 1)
    await kjobs.wait("off", lambda j: records(j).get("off-worker-0", {}).get("phase") == "Running")
    await running.stop()
    await _delete_pod(kjobs, "off-worker-0")
    await kjobs.patch("off", kind.mode("debug", False))
    await running.start()
    [workload] = await _running_pods(kjobs, "off", 1, {debug.metadata.uid})
    assert workload.spec.containers[0].command != ["sleep", "inf"]
    job = await kjobs.wait("off", lambda j: records(j)["off-worker-0"]["uid"] == workload.metadata.uid)
    assert phase(job) == "Running" and backoff(job) == 0 and records(job)["off-worker-0"]["restartCount"] == 0


async def test_a_failure_seen_as_debug_is_turned_on_is_judged_first(cluster, kind, running, kjobs):
    # The workload's pod failed (retryable) and debug mode was turned on before a controller saw it: the
    # failure is the workload's, so its restart is counted; the replacement is a debug pod.
    scripts(cluster, "on", {"*": FOREVER})
    await running.start()
    await kjobs.submit(kind.job("on", {"worker": 1}, "OnFailure", 2))
    await kjobs.wait_phase("on", "Running")
    await running.stop()
    await finish_pod(kjobs, "on-worker-0", 1)
    await kjobs.patch("on", kind.mode("debug", True))
    await running.start()
    [pod] = await _running_pods(kjobs, "on", 1)
    job = await kjobs.wait("on", lambda j: records(j)["on-worker-0"]["uid"] == pod.metadata.uid)
    assert pod.spec.containers[0].command == ["sleep", "inf"]
    assert backoff(job) == 1 and records(job)["on-worker-0"]["restartCount"] == 1


async def test_a_debug_pod_that_ended_as_debug_is_turned_off_counts_nothing(cluster, kind, running, kjobs):
    scripts(cluster, "end", {"*": FOREVER})
    await running.start()
    await kjobs.submit(kind.job("end", {"worker": 1}, "Never", None, runMode={"debug": {kind.switch: True}}))
    [debug] = await _running_pods(kjobs, "end", 1)
    await kjobs.wait("end", lambda j: records(j).get("end-worker-0", {}).get("phase") == "Running")
    await running.stop()
    await finish_pod(kjobs, "end-worker-0", 1)  # under Never: the workload's failure would be final
    await kjobs.patch("end", kind.mode("debug", False))
    await running.start()
    [workload] = await _running_pods(kjobs, "end", 1, {debug.metadata.uid})
    job = await kjobs.wait("end", lambda j: records(j)["end-worker-0"]["uid"] == workload.metadata.uid)
    assert phase(job) == "Running" and backoff(job) == 0


async def test_a_final_failure_seen_as_debug_is_turned_on_fails_the_job(cluster, kind, running, kjobs):
    scripts(cluster, "last", {"*": FOREVER})
    await running.start()
    await kjobs.submit(kind.job("last", {"worker": 1}, "Never", None))
    await kjobs.wait_phase("last", "Running")
    await running.stop()
    await finish_pod(kjobs, "last-worker-0", 1)
    await kjobs.patch("last", kind.mode("debug", True))
    await running.start()
    done = await kjobs.wait("last", lambda j: phase(j) == "Failed")
    assert condition(done, "Failed")["reason"] == "ReplicaFailed"
    assert [p.spec.containers[0].command for p in await kjobs.pods("last")] != [["sleep", "inf"]]


# --- defect 2: a failure that arrives with a scale-down --------------------------------------------------------


async def test_a_final_failure_that_arrives_with_a_scale_down_fails_the_job(cluster, kind, running, kjobs):
    scripts(cluster, "down", {"*": FOREVER})
    await running.start()
    await kjobs.submit(kind.job("down", {"worker": 3}, "Never", None))
    await kjobs.wait_phase("down", "Running")
    await running.stop()
    await finish_pod(kjobs, "down-worker-2", 1)
    await _scale(kjobs, "down", 2)
    await running.start()
    done = await kjobs.wait("down", lambda j: phase(j) == "Failed", timeout=10)
    failed = condition(done, "Failed")
    assert failed["reason"] == "ReplicaFailed", failed
    assert "worker-2 failed with exit code 1" in failed["message"], failed["message"]


async def test_a_retryable_failure_that_arrives_with_a_scale_down_is_counted(cluster, kind, running, kjobs, history):
    scripts(cluster, "cut", {"*": FOREVER})
    await running.start()
    await kjobs.submit(kind.job("cut", {"worker": 3}, "OnFailure", 3))
    await kjobs.wait_phase("cut", "Running")
    await running.stop()
    await finish_pod(kjobs, "cut-worker-2", 1)
    await _scale(kjobs, "cut", 2)
    await running.start()
    job = await kjobs.wait("cut", lambda j: "cut-worker-2" in removed(j) and backoff(j) == 1)
    assert removed(job)["cut-worker-2"]["restartCount"] == 1
    await kjobs.wait_pods("cut", lambda pods: sorted(p.metadata.name for p in pods) == ["cut-worker-0",
                                                                                           "cut-worker-1"])
    assert len(history.uids("cut-worker-2")) == 1  # counted, never recreated
    assert phase(await kjobs.get("cut")) == "Running"


async def _scale(jobs: Jobs, job: str, count: int) -> None:
    """Scale the worker type while no controller runs (observedGeneration cannot follow)."""
    specs = (await jobs.get(job))["spec"]["replicaSpecs"]
    await jobs.patch(job, {"spec": {"replicaSpecs": [
        {**spec, "replicas": count} if spec["type"] == "worker" else spec for spec in specs]}})


# --- defect 7: a retryable failure seen with a pause -----------------------------------------------------------


async def test_a_retryable_failure_seen_with_a_pause_is_counted(cluster, kind, running, kjobs):
    scripts(cluster, "nap", {"*": FOREVER})
    await running.start()
    await kjobs.submit(kind.job("nap", {"worker": 2}, "OnFailure", 2))
    await kjobs.wait_phase("nap", "Running")
    await running.stop()
    await finish_pod(kjobs, "nap-worker-1", 1)
    await kjobs.patch("nap", kind.mode("pause", True))
    await running.start()
    paused = await kjobs.wait("nap", lambda j: phase(j) in ("Paused", "Failed") and backoff(j) >= 1, timeout=10)
    assert phase(paused) == "Paused" and backoff(paused) == 1
    assert records(paused)["nap-worker-1"]["restartCount"] == 1
    await kjobs.wait_pods("nap", lambda pods: pods == [])
    await kjobs.patch("nap", kind.mode("pause", False))
    resumed = await kjobs.wait("nap", lambda j: phase(j) == "Running")
    assert backoff(resumed) == 1  # resuming refunds nothing


async def test_a_retryable_failure_seen_with_a_pause_past_the_budget_fails_the_job(cluster, kind, running, kjobs):
    # The budget is used up: the failure seen with the pause is final, and ends the job.
    scripts(cluster, "spent", {"*": FOREVER})
    await running.start()
    await kjobs.submit(kind.job("spent", {"worker": 2}, "OnFailure", 1))
    [pod, _] = await _running_pods(kjobs, "spent", 2)
    await finish_pod(kjobs, "spent-worker-0", 1)
    await kjobs.wait("spent", lambda j: backoff(j) == 1)
    await _running_pods(kjobs, "spent", 2, {pod.metadata.uid})
    await kjobs.wait("spent", lambda j: phase(j) == "Running"
                     and records(j)["spent-worker-0"]["uid"] not in ("", pod.metadata.uid))
    await running.stop()
    await finish_pod(kjobs, "spent-worker-0", 1)
    await kjobs.patch("spent", kind.mode("pause", True))
    await running.start()
    done = await kjobs.wait("spent", lambda j: phase(j) in ("Paused", "Failed"), timeout=10)
    assert phase(done) == "Failed", done["status"]
    assert condition(done, "Failed")["reason"] == "BackoffLimitExceeded"
