"""A container that could not start (a command not found) is said on the job in the runtime's words, condensed
(controller/jobs/decisions/start_errors.py): in the Failed condition's message, the final Warning Event and the
Restarting Event, and, for a runtime that leaves it waiting (CRI-O), in ReplicasWaiting; the reasons stay those
of the specification."""

from __future__ import annotations

import pytest

from controller.jobs.decisions.start_errors import MESSAGE_MAX, condensed, container_state, said, waiting_start

from .plan_support import Pods, at, condition, make_job, restarts, start, step
from .test_failure_cause import TfPods, failed_with, tf_plan
from .test_tensorflow_kind import parsed

EXEC = 'exec: "train": executable file not found in $PATH'
# containerd 1.7 with runc 1.1, as the kubelet reports it in state.terminated.message.
CONTAINERD = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create "
              f"failed: unable to start container process: {EXEC}: unknown")


@pytest.mark.parametrize(("message", "said"), [
    (CONTAINERD, EXEC),
    # runc 1.2 under containerd 2 (no gRPC code appended).
    ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: "
     'unable to start container process: error during container init: exec: "/app": stat /app: no such file or '
     "directory", 'exec: "/app": stat /app: no such file or directory'),
    # containerd 1.5 with runc 1.0.
    ("failed to create containerd task: OCI runtime create failed: container_linux.go:380: starting container "
     f"process caused: {EXEC}: unknown", EXEC),
    # Docker (ContainerCannotRun): runc's words quoted.
    ('OCI runtime create failed: container_linux.go:349: starting container process caused "exec: \\"train\\": '
     'executable file not found in $PATH": unknown', EXEC),
    # CRI-O (CreateContainerError): runc's log line.
    ('container create failed: time="2024-01-01T00:00:00Z" level=error msg="runc create failed: unable to start '
     'container process: exec: \\"train\\": executable file not found in $PATH"\n', EXEC),
    ('chdir to cwd ("/work") set in config.json failed: no such file or directory',
     'chdir to cwd ("/work") set in config.json failed: no such file or directory'),
    # Docker, quoting a cause with no quotes of its own.
    ('OCI runtime create failed: starting container process caused "no such file or directory": unknown',
     "no such file or directory"),
    ("something no runtime step names", "something no runtime step names"),
    # Blanks before the gRPC code are not runc's words.
    ("runc create failed: unable to start container process: exec format error : unknown", "exec format error"),
    # A runc step followed by nothing: the whole message.
    ("runc create failed: unable to start container process: : unknown",
     "runc create failed: unable to start container process: : unknown"),
])
def test_the_runtimes_message_is_condensed_to_what_runc_said(message, said):
    assert condensed(message) == said


def test_a_long_message_is_bounded():
    bounded = condensed("x" * 1000)
    assert len(bounded) == MESSAGE_MAX and bounded.endswith("…")
    assert condensed("x" * MESSAGE_MAX) == "x" * MESSAGE_MAX


def test_only_a_start_failure_is_said():
    assert said({"terminated": {"reason": "StartError", "message": CONTAINERD}}) == f"StartError: {EXEC}"
    assert said({"terminated": {"reason": "StartError"}}) == "StartError"
    assert said({"waiting": {"reason": "RunContainerError", "message": EXEC}}) == f"RunContainerError: {EXEC}"
    for state in ({"terminated": {"reason": "Error", "message": "a log tail"}}, {"running": {}}, {"waiting": None},
                  {"waiting": {"reason": "ContainerCreating"}}, {}):
        assert said(state) == ""


def test_the_state_of_the_named_container_or_none():
    running, failed = {"running": {}}, {"terminated": {"reason": "StartError"}}
    pod = {"status": {"containerStatuses": [{"name": "sidecar", "state": running}, {"name": "main", "state": failed},
                                            {"name": "new"}]}}
    assert (container_state(pod, "main"), container_state(pod, "sidecar")) == (failed, running)
    for other, name in ((pod, "new"), (pod, "other"), ({"status": {}}, "main"), ({}, "main"), (None, "main")):
        assert container_state(other, name) == {}


def test_the_first_container_held_waiting_because_it_could_not_start():
    pod = {"status": {"containerStatuses": [
        {"name": "a", "state": {"waiting": {"reason": "ContainerCreating"}}}, {"name": "b"},
        {"name": "c", "state": {"waiting": {"reason": "CreateContainerError", "message": CONTAINERD}}}]}}
    assert waiting_start(pod) == f"CreateContainerError: {EXEC}"
    for other in ({"status": {"containerStatuses": [{"name": "a", "state": {"running": {}}}]}}, {"status": {}}, {},
                  None):
        assert waiting_start(other) == ""


def failed_to_start(pods: Pods, replica_type: str, rank: int, message: str = CONTAINERD,
                    reason: str = "StartError") -> dict:
    pod = pods.set(replica_type, rank, "Failed", exit_code=128, container_reason=reason)
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"] = message
    return pod


def test_a_command_not_found_is_said_in_the_failed_condition_and_the_warning_event():
    job = make_job(("worker", 2, "Never"))
    pods = Pods()
    status = start(job, pods)
    failed_to_start(pods, "worker", 1)
    assert failed_with(step(job, status, pods, at(5))) == (
        "ReplicaFailed", "ReplicaFailed",
        'The job is failed with rule: {"worker": [1]}: replica worker-1 failed with exit code 128 '
        f"(StartError: {EXEC}) under restart policy Never")


def test_the_container_that_could_not_start_is_said_beside_one_that_runs():
    job = make_job(("worker", 1, "Never"))
    pods = Pods()
    status = start(job, pods)
    pod = failed_to_start(pods, "worker", 0)
    pod["status"]["containerStatuses"].insert(0, {"name": "sidecar", "state": {"running": {}}})
    assert failed_with(step(job, status, pods, at(5)))[2].endswith(
        f"failed with exit code 128 (StartError: {EXEC}) under restart policy Never")


def test_dockers_container_cannot_run_is_said_too():
    job = make_job(("worker", 1, "Never"))
    pods = Pods()
    status = start(job, pods)
    failed_to_start(pods, "worker", 0, 'OCI runtime create failed: container_linux.go:349: starting container '
                    'process caused "exec: \\"train\\": executable file not found in $PATH": unknown',
                    reason="ContainerCannotRun")
    assert failed_with(step(job, status, pods, at(5)))[2].endswith(
        f"failed with exit code 128 (ContainerCannotRun: {EXEC}) under restart policy Never")


def test_each_restart_says_why_and_so_does_the_limit_that_ran_out():
    job = make_job(("worker", 1, "OnFailure", 1))
    pods = Pods()
    status = start(job, pods)
    failed_to_start(pods, "worker", 0)
    restarted = step(job, status, pods, at(5))
    assert restarts(restarted) == [
        f"Restarting replica job-worker-0 (restart 1 of 1): pod exited with code 128 (StartError: {EXEC})"]
    status = step(job, restarted.status, pods, at(6)).status  # the replacement is made
    failed_to_start(pods, "worker", 0)
    assert failed_with(step(job, status, pods, at(7))) == (
        "BackoffLimitExceeded", "BackoffLimitExceeded",
        'The job is failed with rule: {"worker": [0]}: replica worker-0 failed with exit code 128 '
        f"(StartError: {EXEC}) after 1 of 1 restarts")


def test_a_containers_own_termination_message_is_not_repeated():
    """A container that ran and failed may end with its own output as the message (FallbackToLogsOnError)."""
    job = make_job(("worker", 1, "Never"))
    pods = Pods()
    status = start(job, pods)
    failed_to_start(pods, "worker", 0, "Traceback (most recent call last): ...", reason="Error")
    assert failed_with(step(job, status, pods, at(5)))[2].endswith(
        "failed with exit code 128 (Error) under restart policy Never")


def test_a_container_that_could_not_be_made_is_said_when_its_pod_fails_for_another_reason():
    job = make_job(("worker", 1, "Never"))
    pods = Pods()
    status = start(job, pods, until_running=False)
    pod = pods.set("worker", 0, "Failed", reason="DeadlineExceeded")
    pod["status"]["containerStatuses"] = [{"name": "main", "state": {"waiting": {
        "reason": "CreateContainerError", "message": f"container create failed: {EXEC}"}}}]
    assert failed_with(step(job, status, pods, at(5)))[2].endswith(
        f"failed without an exit code (CreateContainerError: container create failed: {EXEC}, DeadlineExceeded) "
        "under restart policy Never")


@pytest.mark.parametrize("reason", ["CreateContainerError", "RunContainerError"])
def test_a_runtime_that_leaves_the_container_waiting_is_said_in_replicas_waiting(reason):
    job = make_job(("worker", 1, "Never"))
    pods = Pods()
    status = start(job, pods, until_running=False)
    pod = pods.set("worker", 0, "Pending")
    pod["status"]["containerStatuses"] = [{"name": "main", "state": {"waiting": {
        "reason": reason, "message": 'container create failed: time="2024-01-01T00:00:00Z" level=error msg="runc '
        'create failed: unable to start container process: exec: \\"train\\": executable file not found in $PATH"'}}}]
    result = step(job, status, pods, at(5))
    message = f'Replica job-worker-0 is waiting: {reason}: container "main": {EXEC}'
    waiting = condition(result.status, "ReplicasWaiting")
    assert (waiting["status"], waiting["reason"], waiting["message"]) == ("True", reason, message)
    assert ("Warning", reason, message) in result.events and not result.terminal


def test_a_tf_job_says_its_training_containers_start_error():
    job = parsed(("worker", 1))
    pods = TfPods()
    status = tf_plan(job, {}, pods, 0).status
    pod = pods.set("worker", 0, "Failed", exit_code=128, container_reason="StartError")
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"] = CONTAINERD
    assert failed_with(tf_plan(job, status, pods, 5)) == (
        "ReplicaFailed", "ReplicaFailed",
        f"Replica tf-worker-0 has failed: replica worker-0 failed with exit code 128 (StartError: {EXEC}) under "
        "restart policy Never")
