"""Messages count what they say (the spec's "Live jobs, settled further"): "restart K of N" counts the replica's own
restarts against its own limit (GenericJob) and the job's, ranks scaled away included, against backoffLimit (the
training kinds); a policy granting no restarts fails ReplicaFailed; a pod someone deleted is "deleted"."""

from __future__ import annotations

from .plan_support import Pods, at, condition, make_job, step
from .test_failure_cause import TfPods, failed_with, started, tf_plan
from .test_tensorflow_kind import parsed


def tf_job(workers: int, backoff_limit: int):
    job = parsed(("worker", workers), runPolicy={"backoffLimit": backoff_limit})
    return job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": [
        job.spec.replica_specs[0].model_copy(update={"restart_policy": "OnFailure"})]})})


def restarts(result) -> list[str]:
    return [e.message for e in result.events if e.reason == "Restarting"]


def test_a_tf_restart_is_numbered_in_the_jobs_budget_with_the_ranks_scaled_away():
    job = tf_job(3, 3)
    pods = TfPods()
    status = tf_plan(job, {}, pods, 0).status
    for rank in range(3):
        pods.set("worker", rank, "Running")
    status = tf_plan(job, status, pods, 1).status
    pods.set("worker", 2, "Failed", exit_code=1)
    result = tf_plan(job, status, pods, 2)
    assert restarts(result) == ["Restarting replica tf-worker-2 (restart 1 of 3 of the job): pod exited with code 1"]
    pods.by_name.pop("tf-worker-2")
    status = tf_plan(tf_job(2, 3), result.status, pods, 3).status  # worker-2 scaled away, its restart kept
    assert status["tasks"][0]["restartCount"] == status["backoffCount"] == 1
    pods.set("worker", 1, "Failed", exit_code=1)
    result = tf_plan(tf_job(2, 3), status, pods, 4)
    assert restarts(result) == ["Restarting replica tf-worker-1 (restart 2 of 3 of the job): pod exited with code 1"]
    assert result.status["backoffCount"] == 2


def test_a_tf_failure_counts_the_restarts_of_ranks_scaled_away():
    # Defect 8: "after 1 of 2 restarts of the job" while backoffCount was 2.
    job = tf_job(2, 2)
    pods = TfPods()
    status = tf_plan(job, {}, pods, 0).status
    pods.set("worker", 0, "Running")
    pods.set("worker", 1, "Failed", exit_code=1)
    status = tf_plan(job, status, pods, 1).status  # worker-1: the job's restart 1
    pods.by_name.pop("tf-worker-1")
    status = tf_plan(tf_job(1, 2), status, pods, 2).status
    pods.set("worker", 0, "Failed", exit_code=1)
    status = tf_plan(tf_job(1, 2), status, pods, 3).status  # worker-0: restart 2
    pods.by_name.pop("tf-worker-0")
    status = tf_plan(tf_job(1, 2), status, pods, 4).status
    pods.created.append(("worker", 0, "immediate"))  # its replacement: a new uid
    pods.set("worker", 0, "Failed", exit_code=1)
    result = tf_plan(tf_job(1, 2), status, pods, 5)
    assert result.status["backoffCount"] == 2
    assert failed_with(result)[1:] == ("BackoffLimitExceeded", "Replica tf-worker-0 has failed: replica worker-0 "
                                       "failed with exit code 1 after 2 of 2 restarts of the job "
                                       "(runPolicy.backoffLimit)")


def test_no_restarts_granted_is_replica_failed_not_a_limit_run_out():
    job = make_job(("worker", 1, "OnFailure", 0))
    pods = Pods()
    status = started(job, pods)
    pods.set("worker", 0, "Failed", exit_code=1, container_reason="Error")
    assert failed_with(step(job, status, pods, at(5))) == (
        "ReplicaFailed", "ReplicaFailed", 'The job is failed with rule: {"worker": [0]}: replica worker-0 failed '
        "with exit code 1 (Error) under restart policy OnFailure with limit 0 (no restarts)")
    job = tf_job(1, 0)
    pods = TfPods()
    status = tf_plan(job, {}, pods, 0).status
    pods.set("worker", 0, "Failed", exit_code=1)
    assert failed_with(tf_plan(job, status, pods, 1))[:2] == ("ReplicaFailed", "ReplicaFailed")


def test_a_pod_deleted_by_someone_is_said_deleted():
    job = make_job(("worker", 1, "OnFailure", 1))
    pods = Pods()
    status = started(job, pods)
    pods.set("worker", 0, "Failed", exit_code=143, container_reason="Error")
    pods.get("worker", 0)["metadata"]["deletionTimestamp"] = at(4)
    result = step(job, status, pods, at(5))
    assert restarts(result) == ["Restarting replica job-worker-0 (restart 1 of 1): pod was deleted"]
    pods.remove("worker", 0)
    status = step(job, result.status, pods, at(6)).status
    pods.set("worker", 0, "Failed", exit_code=143, container_reason="Error")
    pods.get("worker", 0)["metadata"]["deletionTimestamp"] = at(7)
    result = step(job, status, pods, at(8))
    assert condition(result.status, "Failed")["message"] == (
        'The job is failed with rule: {"worker": [0]}: replica worker-0 failed because its pod was deleted '
        "after 1 of 1 restarts")
