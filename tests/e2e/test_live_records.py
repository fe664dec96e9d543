"""Removed ranks and the counts messages print, end to end against localcluster (the spec's "Live jobs, settled
further": "Removed ranks" and "Messages count what they say"), for every kind: a rank scaled away keeps its record,
Deleted, with its restart count, under its type's task; restart counters never decrease; a rank scaled back resumes
from its record; the messages count the replica's restarts against its limit and the job's against backoffLimit."""

from __future__ import annotations

import pytest

from controller.jobs.execution.config import JobConfig
from controller.jobs.execution.controller import JobController
from controller.kinds.pytorch.kind import PYTORCH
from controller.kinds.tensorflow.kind import TENSORFLOW

from .conftest import (
    FAST,
    FOREVER,
    Jobs,
    condition,
    finish_pod,
    genericjob,
    phase,
    replicas,
    scripts,
    status,
    task,
    until,
)
from .test_pytorch import pjob
from .test_tensorflow import tfjob

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

STUCK = {"stuck_terminating": True}  # a pod that stays terminating once deleted (until force-deleted)


@pytest.fixture
def config() -> JobConfig:
    # Pods stuck terminating are force-deleted soon after their grace period, as a lost node's are.
    return JobConfig(workers=4, qps=0, informer_options=FAST, shutdown_timeout=5.0, restart_backoff=0,
                     stuck_terminating_after=0.5)




@pytest.fixture
async def kind_controllers(rest_client, config):
    made = [JobController(kind, rest_client, config) for kind in (TENSORFLOW, PYTORCH)]
    for controller in made:
        await controller.start(sync_timeout=10)
    yield made
    for controller in made:
        await controller.stop()


def records_of(job: dict, replica_type: str, key: str = "replicas") -> list[tuple[str, str, int]]:
    return [(r["name"], r["phase"], r["restartCount"]) for r in task(job, replica_type).get(key) or ()]


async def fail_when_running(jobs: Jobs, job: str, pod: str, seen: set[str], exit_code: int = 1) -> None:
    """Fail the next pod of `pod` not failed before, once it runs."""
    async def running():
        found = [p for p in await jobs.pods(job) if p.metadata.name == pod and p.metadata.uid not in seen
                 and p.status.phase == "Running"]
        return found[0] if found else None

    made = await until(running, what=f"a new {pod} running")
    seen.add(made.metadata.uid)
    await finish_pod(jobs, pod, exit_code)


async def scale(jobs: Jobs, job: str, counts: dict[str, int]) -> None:
    specs = (await jobs.get(job))["spec"]["replicaSpecs"]
    edited = await jobs.patch(job, {"spec": {"replicaSpecs": [
        {**spec, "replicas": counts.get(spec["type"], spec["replicas"])} for spec in specs]}})
    await jobs.wait(job, lambda j: status(j).get("observedGeneration") == edited["metadata"]["generation"])


async def restarting(jobs: Jobs, job: str, count: int) -> list[str]:
    events = await jobs.wait_event(job, "Restarting", count=count)
    return sorted(e.message for e in events)


async def test_genericjob_ranks_scaled_away_are_deleted_records_and_come_back_with_their_counts(
        cluster, controllers, jobs, history):
    scripts(cluster, "gj", {"*": FOREVER})
    await controllers.start()
    await jobs.submit(genericjob("gj", {"worker": 3}, restart={"policy": "OnFailure", "limit": 1}))
    seen: set[str] = set()
    await fail_when_running(jobs, "gj", "gj-worker-2", seen)
    await jobs.wait_replica("gj", "gj-worker-2", lambda r: r["restartCount"] == 1)
    await jobs.wait("gj", lambda j: status(j).get("ready") == "3/3")
    await scale(jobs, "gj", {"worker": 1})
    scaled = await jobs.wait("gj", lambda j: status(j)["aggregate"]["deleted"] == 2)
    # Every rank scaled away keeps its record after the spec's ranks, restarted or not; READY counts the spec.
    assert records_of(scaled, "worker") == [("gj-worker-0", "Running", 0), ("gj-worker-1", "Deleted", 0),
                                            ("gj-worker-2", "Deleted", 1)]
    assert status(scaled)["ready"] == "1/1" and "removedReplicas" not in status(scaled)
    assert task(scaled, "worker")["restartCount"] == status(scaled)["backoffCount"] == 1
    await jobs.wait_pods("gj", lambda pods: [p.metadata.name for p in pods] == ["gj-worker-0"])
    # Scaled back: worker-2 resumes from its record, its limit used: one more pod, whose failure is final.
    await scale(jobs, "gj", {"worker": 3})
    await jobs.wait("gj", lambda j: status(j).get("ready") == "3/3")
    assert replicas(await jobs.get("gj"))["gj-worker-2"]["restartCount"] == 1
    await fail_when_running(jobs, "gj", "gj-worker-2", seen)
    done = await jobs.wait_phase("gj", "Failed")
    assert status(done)["reason"] == "BackoffLimitExceeded"
    assert condition(done, "Failed")["message"] == ("The job is failed with rule: {\"worker\": [2]}: replica worker-2 "
                                                    "failed with exit code 1 (Error) after 1 of 1 restarts")
    assert len(history.uids("gj-worker-2")) == 3  # the first pod, its one restart, and the one after scaling back
    assert await restarting(jobs, "gj", 1) == ["Restarting replica gj-worker-2 (restart 1 of 1): "
                                               "pod exited with code 1"]


async def test_genericjob_type_removed_altogether_keeps_its_task(cluster, controllers, jobs):
    scripts(cluster, "types", {"*": FOREVER})
    await controllers.start()
    await jobs.submit(genericjob("types", {"worker": 1, "ps": 2}, restart={"policy": "OnFailure", "limit": 2}))
    await fail_when_running(jobs, "types", "types-ps-1", set())
    await jobs.wait("types", lambda j: status(j).get("backoffCount") == 1 and status(j).get("ready") == "3/3")
    specs = (await jobs.get("types"))["spec"]["replicaSpecs"]
    edited = await jobs.patch("types", {"spec": {"replicaSpecs": [s for s in specs if s["type"] == "worker"]}})
    done = await jobs.wait("types", lambda j: status(j).get("observedGeneration") == edited["metadata"]["generation"]
                           and status(j)["aggregate"]["deleted"] == 2)
    assert [t["type"] for t in status(done)["tasks"]] == ["worker", "ps"]
    assert records_of(done, "ps") == [("types-ps-0", "Deleted", 0), ("types-ps-1", "Deleted", 1)]
    assert task(done, "ps")["restartCount"] == status(done)["backoffCount"] == 1 and status(done)["ready"] == "1/1"


async def test_tensorflow_counts_never_decrease_and_messages_count_the_jobs_restarts(cluster, kind_controllers,
                                                                                    tfjobs):
    # Defects 8 and 10: after worker-2 used two of the job's three restarts and was scaled away, tasks[].restartCount
    # went down to 0, the Restarting Event printed worker-1's own count against the job's budget ("restart 1 of
    # 3"), and the Failed message "after 1 of 3 restarts of the job" while backoffCount was 3.
    scripts(cluster, "tf", {"*": FOREVER})
    await tfjobs.submit(tfjob("tf", {"worker": 3}, restart="OnFailure", run_policy={"backoffLimit": 3}))
    seen: set[str] = set()
    for restarts in (1, 2):
        await fail_when_running(tfjobs, "tf", "tf-worker-2", seen)
        await tfjobs.wait("tf", lambda j, n=restarts: status(j).get("backoffCount") == n)
    await tfjobs.wait("tf", lambda j: status(j).get("ready") == "3/3")
    await scale(tfjobs, "tf", {"worker": 2})
    scaled = await tfjobs.wait("tf", lambda j: status(j)["aggregate"]["deleted"] == 1)
    assert records_of(scaled, "worker", "replicaStatus")[-1] == ("tf-worker-2", "Deleted", 2)
    assert task(scaled, "worker")["restartCount"] == status(scaled)["backoffCount"] == 2
    assert status(scaled)["ready"] == "2/2"
    await fail_when_running(tfjobs, "tf", "tf-worker-1", seen)
    await tfjobs.wait("tf", lambda j: status(j).get("backoffCount") == 3)
    assert "Restarting replica tf-worker-1 (restart 3 of 3 of the job): pod exited with code 1" in \
        await restarting(tfjobs, "tf", 3)
    await fail_when_running(tfjobs, "tf", "tf-worker-1", seen)
    done = await tfjobs.wait_phase("tf", "Failed")
    assert status(done)["reason"] == "BackoffLimitExceeded" and status(done)["backoffCount"] == 3
    assert condition(done, "Failed")["message"].endswith(
        "replica worker-1 failed with exit code 1 (Error) after 3 of 3 restarts of the job (runPolicy.backoffLimit)")
    assert task(done, "worker")["restartCount"] == 3


async def test_pytorch_ranks_scaled_away_are_deleted_records(cluster, kind_controllers, pjobs):
    # Found on a real server: PyTorch ranks scaled away were dropped from the status instead of counting as Deleted.
    scripts(cluster, "pt", {"*": FOREVER})
    await pjobs.submit(pjob("pt", {"master": 1, "worker": 3}, restart="OnFailure"))
    await fail_when_running(pjobs, "pt", "pt-worker-2", set())
    await pjobs.wait("pt", lambda j: status(j).get("backoffCount") == 1 and status(j).get("ready") == "4/4")
    await scale(pjobs, "pt", {"worker": 1})
    scaled = await pjobs.wait("pt", lambda j: status(j)["aggregate"]["deleted"] == 2)
    assert records_of(scaled, "worker") == [("pt-worker-0", "Running", 0), ("pt-worker-1", "Deleted", 0),
                                            ("pt-worker-2", "Deleted", 1)]
    assert status(scaled)["ready"] == "2/2" and phase(scaled) == "Running"
    assert task(scaled, "worker")["restartCount"] == status(scaled)["backoffCount"] == 1
    await pjobs.wait_pods("pt", lambda pods: [p.metadata.name for p in pods] == ["pt-master-0", "pt-worker-0"])
    await scale(pjobs, "pt", {"worker": 2})
    back = await pjobs.wait("pt", lambda j: status(j).get("ready") == "3/3")
    assert records_of(back, "worker")[1:] == [("pt-worker-1", "Running", 0), ("pt-worker-2", "Deleted", 1)]
    assert status(back)["backoffCount"] == 1 and status(back)["aggregate"]["deleted"] == 1


async def test_a_policy_granting_no_restarts_fails_the_job_as_replica_failed(cluster, controllers, jobs,
                                                                           kind_controllers, tfjobs):
    scripts(cluster, "zero", {"*": FOREVER})
    await controllers.start()
    await jobs.submit(genericjob("zero", {"worker": 1}))  # the defaults: OnFailure, limit 0
    await fail_when_running(jobs, "zero", "zero-worker-0", set())
    done = await jobs.wait_phase("zero", "Failed")
    assert status(done)["reason"] == condition(done, "Failed")["reason"] == "ReplicaFailed"
    assert condition(done, "Failed")["message"] == ("The job is failed with rule: {\"worker\": [0]}: replica worker-0 "
                                                    "failed with exit code 1 (Error) under restart policy OnFailure "
                                                    "with limit 0 (no restarts)")
    scripts(cluster, "tfzero", {"*": FOREVER})
    await tfjobs.submit(tfjob("tfzero", {"worker": 1}, restart="OnFailure", run_policy={"backoffLimit": 0}))
    await fail_when_running(tfjobs, "tfzero", "tfzero-worker-0", set())
    done = await tfjobs.wait_phase("tfzero", "Failed")
    assert status(done)["reason"] == "ReplicaFailed"
    assert condition(done, "Failed")["message"].endswith(
        "failed with exit code 1 (Error) under restart policy OnFailure with runPolicy.backoffLimit 0 (no restarts)")


async def test_a_pod_deleted_by_a_person_is_said_deleted_not_exit_code_143(cluster, controllers, jobs):
    # As a kubelet does: the pod deleted by hand is terminating, and its container's SIGTERM shows as exit code 143
    # (phase Failed) before the pod is gone. Its restart, and the failure that ends the job, say "deleted".
    scripts(cluster, "del", {"*": STUCK})
    await controllers.start()
    job = genericjob("del", {"worker": 1}, restart={"policy": "OnFailure", "limit": 1})
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
    await jobs.submit(job)
    for _ in range(2):
        pod = (await jobs.wait_pods("del", lambda pods: len(pods) == 1 and pods[0].status.phase == "Running"
                                    and pods[0].metadata.deletion_timestamp is None))[0]
        await jobs.core.delete_namespaced_pod(pod.metadata.name, "default")
        await finish_pod(jobs, pod.metadata.name, 143)
        await jobs.wait("del", lambda j, uid=pod.metadata.uid: phase(j) == "Failed" or not any(
            r["uid"] == uid for r in replicas(j).values()))
    assert await restarting(jobs, "del", 1) == ["Restarting replica del-worker-0 (restart 1 of 1): pod was deleted"]
    done = await jobs.wait_phase("del", "Failed")
    assert condition(done, "Failed")["message"] == ("The job is failed with rule: {\"worker\": [0]}: replica "
                                                    "worker-0 failed because its pod was deleted after 1 of 1 restarts")
