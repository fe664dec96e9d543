"""A replica that waits for what it cannot get (controller/jobs/decisions/waiting.py): its image, a Secret or
ConfigMap, a node. The job's status says so (the replica's `waiting`, the ReplicasWaiting condition) and one Warning
Event per cause per replica announces it, not one per reconcile."""

from __future__ import annotations

from .plan_support import Pods, at, condition, make_job, record, step

PULL = ('rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nope:1": failed to '
        'resolve reference "docker.io/library/nope:1": not found')


def waiting(pods: Pods, rank: int, reason: str, message: str, replica_type: str = "worker") -> None:
    pod = pods.set(replica_type, rank, "Pending")
    pod["status"]["containerStatuses"] = [{"name": "main", "state": {"waiting": {"reason": reason,
                                                                                 "message": message}}}]


def unschedulable(pods: Pods, rank: int, message: str) -> None:
    pod = pods.set("worker", rank, "Pending")
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                    "message": message}]


def warnings(result) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in result.events if e.type == "Warning"]


def test_an_image_that_cannot_be_pulled_is_said_once_and_cleared_when_the_pod_runs():
    job = make_job(("worker", 2))
    pods = Pods()
    status = step(job, {}, pods, at(0)).status
    assert "ReplicasWaiting" not in [c["type"] for c in status["conditions"]]  # never waited: no condition
    waiting(pods, 0, "ErrImagePull", PULL)
    result = step(job, status, pods, at(1))
    expected = f'Replica job-worker-0 is waiting: ErrImagePull: container "main": {PULL}'
    assert warnings(result) == [("ErrImagePull", expected)]
    assert record(result.status, "worker", 0)["waiting"] == {"reason": "ErrImagePull",
                                                             "message": f'container "main": {PULL}'}
    shown = condition(result.status, "ReplicasWaiting")
    assert (shown["status"], shown["reason"], shown["message"]) == ("True", "ErrImagePull", expected)

    # The kubelet backs off and tries again: ImagePullBackOff, then ErrImagePull. One cause: no Event, no write.
    waiting(pods, 0, "ImagePullBackOff", 'Back-off pulling image "nope:1"')
    again = step(job, result.status, pods, at(20))
    assert warnings(again) == [] and again.status == result.status

    pods.set("worker", 0, "Running")
    pods.set("worker", 1, "Running")
    running = step(job, again.status, pods, at(30))
    assert "waiting" not in record(running.status, "worker", 0)
    cleared = condition(running.status, "ReplicasWaiting")
    assert (cleared["status"], cleared["reason"], cleared["message"]) == ("False", "NoneWaiting",
                                                                          "No replica is waiting.")


def test_a_missing_secret_then_no_node_are_two_causes_and_each_is_announced():
    job = make_job(("worker", 1))
    pods = Pods()
    status = step(job, {}, pods, at(0)).status
    waiting(pods, 0, "CreateContainerConfigError", 'secret "creds" not found')
    result = step(job, status, pods, at(1))
    assert warnings(result) == [("CreateContainerConfigError", 'Replica job-worker-0 is waiting: '
                                 'CreateContainerConfigError: container "main": secret "creds" not found')]
    message = ("0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: "
               "1 No preemption victims found for incoming pod.")
    unschedulable(pods, 0, message)
    result = step(job, result.status, pods, at(2))
    assert warnings(result) == [("Unschedulable", f"Replica job-worker-0 is waiting: Unschedulable: {message}")]
    assert condition(result.status, "ReplicasWaiting")["reason"] == "Unschedulable"


def test_several_waiting_replicas_name_the_first_and_count_the_others():
    job = make_job(("worker", 3))
    pods = Pods()
    status = step(job, {}, pods, at(0)).status
    for rank in range(3):
        waiting(pods, rank, "ImagePullBackOff", 'Back-off pulling image "nope:1"')
    result = step(job, status, pods, at(1))
    assert len(warnings(result)) == 3  # one per replica
    assert condition(result.status, "ReplicasWaiting")["message"] == (
        'Replica job-worker-0 is waiting: ImagePullBackOff: container "main": Back-off pulling image "nope:1"; '
        "and 2 more replicas waiting")


def test_a_pause_ends_the_wait_and_a_running_or_failed_pod_never_waits():
    job = make_job(("worker", 1))
    pods = Pods()
    status = step(job, {}, pods, at(0)).status
    waiting(pods, 0, "ErrImagePull", PULL)
    status = step(job, status, pods, at(1)).status
    paused = step(make_job(("worker", 1), pause=True), status, pods, at(2))
    assert condition(paused.status, "ReplicasWaiting")["status"] == "False"
    assert "waiting" not in record(paused.status, "worker", 0)
    failed = Pods()
    status = step(job, {}, failed, at(0)).status
    pod = failed.set("worker", 0, "Failed")
    pod["status"]["initContainerStatuses"] = [{"name": "init", "state": {"waiting": {"reason": "ErrImagePull"}}}]
    assert warnings(step(job, status, failed, at(1))) == [("Failed", 'The job is failed with rule: {"worker": [0]}: '
                                                           "replica worker-0 failed with exit code 1 under restart "
                                                           "policy OnFailure with limit 0 (no restarts)")]
