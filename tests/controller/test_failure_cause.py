"""Why a job failed, on the job itself (controller/jobs/decisions/cause.py): the Failed condition's reason, the cause
its message adds to the kind's seed message, the same message in the final Warning Event and in status.reason."""

from __future__ import annotations

from controller.jobs.decisions import plan as engine
from controller.jobs.schema.naming import replica_labels, replica_name
from controller.kinds.tensorflow.kind import TENSORFLOW

from .plan_support import JOB, Pods, at, condition, make_job, step
from .test_tensorflow_kind import parsed


def failed_with(result) -> tuple[str, str, str]:
    """(status.reason, the Failed condition's reason, its message), checked against the job's Failed Event."""
    failed = condition(result.status, "Failed")
    assert failed["status"] == "True" and result.terminal
    assert [e for e in result.events if e.type == "Warning"] == [("Warning", "Failed", failed["message"])]
    return result.status["reason"], failed["reason"], failed["message"]


def started(job, pods: Pods) -> dict:
    status = step(job, {}, pods, at(0)).status
    for pod in pods.list():
        labels = pod["metadata"]["labels"]
        pods.set(labels["genericjob.batch.tensorstack.dev/replica-type"],
                 int(labels["genericjob.batch.tensorstack.dev/rank"]), "Running")
    return step(job, status, pods, at(1)).status


def test_without_failure_rules_the_first_replica_by_rank_is_named_and_the_others_counted():
    job = make_job(("master", 1, "Never"), ("worker", 4, "Never"))
    pods = Pods()
    status = started(job, pods)
    for rank in (3, 1, 2):
        pods.set("worker", rank, "Failed", exit_code=2, container_reason="Error")
    assert failed_with(step(job, status, pods, at(5))) == (
        "ReplicaFailed", "ReplicaFailed",
        'The job is failed with rule: {"worker": [1]}: replica worker-1 failed with exit code 2 (Error) '
        "under restart policy Never, and 2 more replicas failed")


def test_an_evicted_pod_has_no_exit_code_and_says_why():
    job = make_job(("worker", 1, "Never"))
    pods = Pods()
    status = started(job, pods)
    pod = pods.set("worker", 0, "Failed", reason="Evicted")
    pod["status"]["containerStatuses"] = [{"name": "main", "state": {"running": {}}}]
    assert failed_with(step(job, status, pods, at(5)))[2] == (
        'The job is failed with rule: {"worker": [0]}: replica worker-0 failed without an exit code (Evicted) '
        "under restart policy Never")


def test_an_evicted_pod_whose_container_was_killed_gives_both_reasons():
    job = make_job(("worker", 1, "Never"))
    pods = Pods()
    status = started(job, pods)
    pods.set("worker", 0, "Failed", reason="Evicted", exit_code=137, container_reason="Error")
    assert failed_with(step(job, status, pods, at(5)))[2].endswith(
        "replica worker-0 failed with exit code 137 (Error, Evicted) under restart policy Never")


def test_a_failure_rule_names_its_first_replica_and_how_many_more_of_it_failed():
    job = make_job(("worker", 3, "OnFailure", 1), failure=[{"worker": [2, 0]}])
    pods = Pods()
    status = started(job, pods)
    for n, second in ((1, 5), (2, 10)):  # each replica's one restart, then its failure for good
        for rank in (0, 2):
            pods.set("worker", rank, "Failed", exit_code=137, container_reason="OOMKilled")
        result = step(job, status, pods, at(second))
        if n == 1:
            status = step(job, result.status, pods, at(second + 1)).status
            for rank in (0, 2):
                pods.set("worker", rank, "Running")
            status = step(job, status, pods, at(second + 2)).status
    assert failed_with(result) == (
        "BackoffLimitExceeded", "BackoffLimitExceeded",
        'The job is failed with rule: {"worker": [2, 0]}: replica worker-0 failed with exit code 137 (OOMKilled) '
        "after 1 of 1 restarts, and 1 more replica failed")


# --- TensorFlowTrainingJob -----------------------------------------------------------------------------


class TfPods(Pods):
    def set(self, replica_type: str, rank: int, phase: str, *, exit_code: int | None = None,
            container_reason: str | None = None, **kwargs) -> dict:
        pod = super().set(replica_type, rank, phase, exit_code=exit_code, container_reason=container_reason)
        pod["metadata"]["name"] = replica_name("tf", replica_type, rank)
        pod["metadata"]["labels"] = replica_labels(TENSORFLOW.api, "tf", "u", replica_type, rank)
        for status in pod["status"].get("containerStatuses") or ():
            status["name"] = "tensorflow"
        self.by_name.pop(replica_name(JOB, replica_type, rank), None)
        self.by_name[pod["metadata"]["name"]] = pod
        return pod

    def uid(self, replica_type: str, rank: int) -> str:
        return f"tf-{replica_type}-{rank}-{len(self.created)}"


def tf_plan(job, status: dict, pods: TfPods, second: int):
    return engine.plan(TENSORFLOW, job, status, pods.list(), at(second))


def test_a_tf_job_keeps_its_seed_message_and_adds_the_cause():
    job = parsed(("chief", 1), ("worker", 2))
    pods = TfPods()
    status = tf_plan(job, {}, pods, 0).status
    pods.set("chief", 0, "Running")
    pods.set("worker", 0, "Running")
    pods.set("worker", 1, "Failed", exit_code=1, container_reason="Error")
    assert failed_with(tf_plan(job, status, pods, 5)) == (
        "ReplicaFailed", "ReplicaFailed",
        "Replica tf-worker-1 has failed: replica worker-1 failed with exit code 1 (Error) under restart policy Never")


def test_a_tf_exit_code_that_is_not_retryable_is_named():
    job = parsed(("worker", 1))
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": [
        job.spec.replica_specs[0].model_copy(update={"restart_policy": "ExitCode"})]})})
    pods = TfPods()
    status = tf_plan(job, {}, pods, 0).status
    pods.set("worker", 0, "Failed", exit_code=3, container_reason="Error")
    assert failed_with(tf_plan(job, status, pods, 5))[1:] == (
        "ReplicaFailed", "Replica tf-worker-0 has failed: replica worker-0 failed with exit code 3 (Error) under "
        "restart policy ExitCode (its exit code is not retryable)")


def test_a_tf_job_whose_backoff_limit_ran_out_says_so():
    job = parsed(("worker", 2), runPolicy={"backoffLimit": 1})
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": [
        job.spec.replica_specs[0].model_copy(update={"restart_policy": "OnFailure"})]})})
    pods = TfPods()
    status = tf_plan(job, {}, pods, 0).status
    pods.set("worker", 0, "Running")
    pods.set("worker", 1, "Failed", exit_code=137, container_reason="OOMKilled")
    restarted = tf_plan(job, status, pods, 5)
    assert restarted.status["backoffCount"] == 1 and not restarted.terminal
    pods.set("worker", 0, "Failed", exit_code=137, container_reason="OOMKilled")
    assert failed_with(tf_plan(job, restarted.status, pods, 6)) == (
        "BackoffLimitExceeded", "BackoffLimitExceeded",
        "Replica tf-worker-0 has failed: replica worker-0 failed with exit code 137 (OOMKilled) after 1 of 1 "
        "restarts of the job (runPolicy.backoffLimit)")


def test_two_failures_in_one_reconcile_count_the_restart_the_first_was_granted():
    """A budget of one: the first failure judged takes the restart, the second fails the job; its message counts
    the restart granted in the same reconcile (the e2e test met this when both pods failed together)."""
    job = parsed(("worker", 2), runPolicy={"backoffLimit": 1})
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": [
        job.spec.replica_specs[0].model_copy(update={"restart_policy": "OnFailure"})]})})
    pods = TfPods()
    status = tf_plan(job, {}, pods, 0).status
    pods.set("worker", 0, "Failed", exit_code=1, container_reason="Error")
    pods.set("worker", 1, "Failed", exit_code=1, container_reason="Error")
    assert failed_with(tf_plan(job, status, pods, 5)) == (
        "BackoffLimitExceeded", "BackoffLimitExceeded",
        "Replica tf-worker-1 has failed: replica worker-1 failed with exit code 1 (Error) after 1 of 1 "
        "restarts of the job (runPolicy.backoffLimit)")


def test_a_deadline_keeps_its_own_reason_and_message():
    job = parsed(("worker", 1), runPolicy={"activeDeadlineSeconds": 10})
    pods = TfPods()
    status = tf_plan(job, {}, pods, 0).status
    pods.set("worker", 0, "Running")
    reason, _, message = failed_with(tf_plan(job, status, pods, 20))
    assert reason == "DeadlineExceeded" and message.startswith("The job was active longer than its deadline")
