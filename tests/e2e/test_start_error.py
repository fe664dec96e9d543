"""A job whose command does not exist (issue 42), end to end: pods run as processes, as `local` runs them, and
localcluster's kubelet reports the StartError as a kubelet with containerd does. The job says why on itself, in the
runtime's words condensed: the Failed condition, its Warning Event, the Restarting Events, `kubectl describe`, and
`kubectl get -o wide`'s MESSAGE (the Failed condition's message); `kubectl get`'s REASON keeps the specification's
reason, and its columns without `-o wide` are those they were."""

from __future__ import annotations

import pytest

from tests.builders import JobBuilder

from .conftest import condition, status

MISSING = "no-such-train"  # a command on no PATH
EXEC = f'exec: "{MISSING}": executable file not found in $PATH'
TIMEOUT = 20.0  # seconds: real processes on a loaded machine


pytestmark = pytest.mark.runner("process")  # the cluster's pods run as real processes




def missing_command(name: str, restart: dict) -> dict:
    template = {"spec": {"containers": [{"name": "main", "image": "trainer:1", "command": [MISSING, "--epochs=1"]}]}}
    return JobBuilder(name).replica("worker", 1, template=template, restart_policy=restart).obj()


async def test_a_command_that_does_not_exist_fails_the_job_saying_why(cluster, controller, jobs, kubectl):
    await jobs.submit(missing_command("no-train", {"policy": "Never"}))
    done = await jobs.wait_phase("no-train", "Failed", timeout=TIMEOUT)
    message = ('The job is failed with rule: {"worker": [0]}: replica worker-0 failed with exit code 128 '
               f"(StartError: {EXEC}) under restart policy Never")
    failed = condition(done, "Failed")
    assert (failed["status"], failed["reason"], failed["message"]) == ("True", "ReplicaFailed", message)
    assert status(done)["reason"] == "ReplicaFailed"
    [event] = await jobs.wait_event("no-train", "Failed", timeout=TIMEOUT)
    assert (event.type, event.message) == ("Warning", message)

    # The pod says it as a kubelet with containerd does; the job, what runc said.
    [pod] = await jobs.pods("no-train")
    terminated = pod.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (128, "StartError")
    assert terminated.message.startswith("failed to create containerd task: ")
    assert terminated.message.endswith(f"unable to start container process: {EXEC}: unknown")

    table = (await kubectl.ok("get", "gj", "no-train")).table()
    assert list(table["no-train"].items()) == [("NAME", "no-train"), ("PHASE", "Failed"), ("READY", "0/1"),
                                               ("RESTARTS", "0"), ("REASON", "ReplicaFailed"),
                                               ("AGE", table["no-train"]["AGE"])]
    wide = (await kubectl.ok("get", "gj", "no-train", "-o", "wide")).table()["no-train"]
    assert list(wide) == ["NAME", "PHASE", "READY", "RESTARTS", "REASON", "AGE", "STARTED", "COMPLETED", "MESSAGE"]
    assert (wide["REASON"], wide["MESSAGE"]) == ("ReplicaFailed", message)
    assert EXEC in wide["MESSAGE"]
    described = (await kubectl.ok("describe", "gj", "no-train")).out
    assert f"    Message:               {message}\n    Reason:                ReplicaFailed\n" in described
    assert message in described[described.index("\nEvents:"):]


async def test_each_restart_of_a_command_that_does_not_exist_says_why(cluster, controller, jobs):
    await jobs.submit(missing_command("retry", {"policy": "OnFailure", "limit": 1}))
    done = await jobs.wait_phase("retry", "Failed", timeout=TIMEOUT)
    failed = condition(done, "Failed")
    assert (failed["reason"], failed["message"]) == (
        "BackoffLimitExceeded", 'The job is failed with rule: {"worker": [0]}: replica worker-0 failed with exit code '
        f"128 (StartError: {EXEC}) after 1 of 1 restarts")
    [restart] = await jobs.wait_event("retry", "Restarting", timeout=TIMEOUT)
    assert restart.message == ("Restarting replica retry-worker-0 (restart 1 of 1): pod exited with code 128 "
                               f"(StartError: {EXEC})")
    [event] = await jobs.wait_event("retry", "Failed", timeout=TIMEOUT)
    assert (event.type, event.message) == ("Warning", failed["message"])
