"""Why a job failed, on the job itself, end to end against localcluster with the real kubectl: the Failed
condition's reason and message (the seed's form plus the replica, its exit code and container reason, and the
limit or budget that ran out), status.reason in `kubectl get`'s REASON column, and `kubectl describe` showing the
cause in the Failed condition and in the job's Warning Event, for GenericJob and TensorFlowTrainingJob."""

from __future__ import annotations

import pytest

from .conftest import FOREVER, condition, finish_pod, genericjob, scripts, status, until
from .test_tensorflow import tfjob

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

OOM = {"run_for": 0.05, "exit_code": 137, "exit_reason": "OOMKilled"}  # killed for its memory limit




async def failed_event(jobs, name: str) -> str:
    [event] = await jobs.wait_event(name, "Failed")
    assert event.type == "Warning"
    return event.message


async def test_an_oom_killed_replica_whose_restarts_ran_out(cluster, controller, jobs, kubectl):
    scripts(cluster, "oom", {"worker-1": OOM, "*": FOREVER})
    await jobs.submit(genericjob("oom", {"worker": 2}, restart={"policy": "OnFailure", "limit": 2}))
    done = await jobs.wait_phase("oom", "Failed")
    message = ('The job is failed with rule: {"worker": [1]}: replica worker-1 failed with exit code 137 (OOMKilled) '
               "after 2 of 2 restarts")
    failed = condition(done, "Failed")
    assert (failed["status"], failed["reason"], failed["message"]) == ("True", "BackoffLimitExceeded", message)
    assert status(done)["reason"] == "BackoffLimitExceeded"
    assert await failed_event(jobs, "oom") == message

    row = (await kubectl.ok("get", "gj", "oom")).table()["oom"]
    assert (row["PHASE"], row["RESTARTS"], row["REASON"]) == ("Failed", "2", "BackoffLimitExceeded")
    described = (await kubectl.ok("describe", "gj", "oom")).out
    assert f"    Message:               {message}\n    Reason:                BackoffLimitExceeded\n" in described
    events = described[described.index("\nEvents:"):]
    assert "Warning  Failed " in events and message in events, described


async def test_several_replicas_failing_at_once_name_the_first_by_rank(cluster, controllers, jobs, kubectl):
    await controllers.start()
    await jobs.submit(genericjob("many", {"worker": 4}, restart={"policy": "Never"}, script=FOREVER))
    await jobs.wait("many", lambda j: status(j).get("ready") == "4/4")
    await controllers.stop()  # the three failures are seen in one observation
    for rank in (3, 1, 2):
        await finish_pod(jobs, f"many-worker-{rank}", 1)
    await controllers.start()
    done = await jobs.wait_phase("many", "Failed")
    message = ('The job is failed with rule: {"worker": [1]}: replica worker-1 failed with exit code 1 (Error) '
               "under restart policy Never, and 2 more replicas failed")
    assert condition(done, "Failed")["message"] == message and status(done)["reason"] == "ReplicaFailed"
    assert await failed_event(jobs, "many") == message
    assert (await kubectl.ok("get", "gj", "many")).table()["many"]["REASON"] == "ReplicaFailed"


async def test_a_tf_job_says_which_replica_failed_and_that_its_budget_ran_out(cluster, tf_controller, tfjobs,
                                                                           kubectl):
    scripts(cluster, "tf", {"worker-1": OOM, "*": FOREVER})
    await tfjobs.submit(tfjob("tf", {"chief": 1, "worker": 2}, restart="OnFailure", run_policy={"backoffLimit": 1}))
    done = await tfjobs.wait_phase("tf", "Failed")
    message = ("Replica tf-worker-1 has failed: replica worker-1 failed with exit code 137 (OOMKilled) after 1 of 1 "
               "restarts of the job (runPolicy.backoffLimit)")
    failed = condition(done, "Failed")
    assert (failed["reason"], failed["message"]) == ("BackoffLimitExceeded", message)
    assert await failed_event(tfjobs, "tf") == message
    row = (await kubectl.ok("get", "tftj", "tf")).table()["tf"]
    assert (row["PHASE"], row["REASON"]) == ("Failed", "BackoffLimitExceeded")
    described = (await kubectl.ok("describe", "tftj", "tf")).out
    assert f"    Message:               {message}\n" in described
    assert message in described[described.index("\nEvents:"):]


async def test_a_tf_job_past_its_deadline_says_so_in_get(cluster, tf_controller, tfjobs, kubectl):
    scripts(cluster, "late", {"*": FOREVER})
    await tfjobs.submit(tfjob("late", {"worker": 1}, run_policy={"activeDeadlineSeconds": 1}))
    await tfjobs.wait_phase("late", "Failed")
    assert (await kubectl.ok("get", "tftj", "late")).table()["late"]["REASON"] == "DeadlineExceeded"


# --- replicas that wait ---------------------------------------------------------------------------------------


async def test_an_image_that_cannot_be_pulled_is_said_on_the_job_once(cluster, controllers, jobs, kubectl):
    await controllers.start()
    scripts(cluster, "pull", {"worker-1": {"fail_to_start": "ErrImagePull"}, "*": FOREVER})
    await jobs.submit(genericjob("pull", {"worker": 2}))
    seen = await jobs.wait("pull", lambda j: (condition(j, "ReplicasWaiting") or {}).get("status") == "True")
    waiting = condition(seen, "ReplicasWaiting")
    [pod] = [p for p in await jobs.pods("pull") if p.metadata.name == "pull-worker-1"]
    kubelet = pod.status.container_statuses[0].state.waiting.message
    message = f'Replica pull-worker-1 is waiting: ErrImagePull: container "main": {kubelet}'
    assert (waiting["reason"], waiting["message"]) == ("ErrImagePull", message)
    assert seen["status"]["phase"] == "Pending"
    [event] = await jobs.wait_event("pull", "ErrImagePull")
    assert (event.type, event.message) == ("Warning", message)

    # Reconciles that see nothing new say nothing new: one Event per cause per replica.
    before = controllers.reconciles["default/pull"]
    for round_ in range(4):
        await jobs.patch("pull", {"metadata": {"labels": {"round": str(round_)}}})
    await until(lambda: controllers.reconciles["default/pull"] >= before + 4 and controllers.idle(), what="reconciled")
    [event] = [e for e in await jobs.events("pull") if e.reason == "ErrImagePull"]
    assert event.count == 1

    described = (await kubectl.ok("describe", "gj", "pull")).out
    assert f"    Message:               {message}\n    Reason:                ErrImagePull\n" in described
    assert "Warning  ErrImagePull" in described[described.index("\nEvents:"):]


async def test_a_missing_secret_and_no_node_are_said_on_a_tf_job(cluster, tf_controller, tfjobs):
    scripts(cluster, "wait", {"worker-0": {"fail_to_start": "CreateContainerConfigError",
                                           "fail_message": 'secret "creds" not found'},
                              "worker-1": {"unschedulable": True}, "*": FOREVER})
    await tfjobs.submit(tfjob("wait", {"chief": 1, "worker": 2}))
    for reason, message in (
            ("CreateContainerConfigError", 'Replica wait-worker-0 is waiting: CreateContainerConfigError: container '
                                           '"tensorflow": secret "creds" not found'),
            ("Unschedulable", "Replica wait-worker-1 is waiting: Unschedulable: 0/1 nodes are available: 1 "
                              "Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: 1 No preemption "
                              "victims found for incoming pod.")):
        [event] = await tfjobs.wait_event("wait", reason)
        assert (event.type, event.message) == ("Warning", message)
    done = await tfjobs.get("wait")
    waiting = condition(done, "ReplicasWaiting")
    assert (waiting["status"], waiting["reason"]) == ("True", "CreateContainerConfigError")
    assert waiting["message"].endswith("; and 1 more replica waiting")
    records = {r["name"]: r for t in done["status"]["tasks"] for r in t["replicaStatus"]}
    assert records["wait-worker-1"]["waiting"]["reason"] == "Unschedulable"
