"""What a replica waits for (controller/jobs/decisions/waiting.py) at the edges of a pod's status. Written against the
mutants that survived the other tests (tests/mutation, RELIABILITY.md): each test names the behaviour a surviving
mutant broke."""

from __future__ import annotations

import pytest

from controller.jobs.decisions.waiting import cause

PULLING = {"name": "main", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}}}


def test_a_pod_without_a_status_waits_for_nothing_yet():
    assert cause({"metadata": {"name": "p"}}) is None


@pytest.mark.parametrize("phase", ["Running", "Succeeded", "Failed", "Unknown"])
def test_only_a_pending_pod_is_looked_at(phase):
    assert cause({"status": {"phase": phase, "containerStatuses": [PULLING]}}) is None
    assert cause({"status": {"phase": "Pending", "containerStatuses": [PULLING]}}) == {
        "reason": "ImagePullBackOff", "message": 'container "main": no such image'}


@pytest.mark.parametrize("condition", [
    {"type": "PodScheduled", "status": "True"},
    {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"},
    {"type": "Ready", "status": "False", "reason": "Unschedulable"},
    {"type": "PodScheduled", "status": "Unknown", "reason": "Unschedulable"},
])
def test_only_the_schedulers_unschedulable_verdict_is_waiting_for_a_node(condition):
    assert cause({"status": {"phase": "Pending", "conditions": [condition]}}) is None


def test_a_pod_no_node_takes_waits_unschedulable():
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}
    assert cause({"status": {"phase": "Pending", "conditions": [{"type": "Initialized", "status": "True"},
                                                                 unschedulable]}}) == {
        "reason": "Unschedulable", "message": "0/3 nodes"}


def test_no_cause_is_the_same_as_no_cause_and_not_as_a_cause():
    from controller.jobs.decisions.waiting import same

    image = {"reason": "ErrImagePull", "message": ""}
    assert same(None, None) is True and same({}, None) is True
    assert same(None, image) is False and same(image, {}) is False
    assert same(image, {"reason": "ImagePullBackOff", "message": "x"}) is True


def pending(*containers: dict, phase: str | None = "Pending") -> dict:
    status: dict = {"containerStatuses": list(containers)}
    if phase is not None:
        status["phase"] = phase
    return {"status": status}


def test_a_pod_with_no_phase_yet_is_pending():
    assert cause(pending(PULLING, phase=None))["reason"] == "ImagePullBackOff"


def test_a_container_waiting_for_its_turn_or_without_a_state_is_not_stuck():
    creating = {"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}}
    assert cause(pending({"name": "a"}, {"name": "b", "state": {}}, {"name": "c", "state": {"running": {}}},
                         creating)) is None


def test_a_cause_without_a_message_says_only_where():
    assert cause(pending({"name": "main", "state": {"waiting": {"reason": "ErrImagePull"}}})) == {
        "reason": "ErrImagePull", "message": 'container "main"'}
    assert cause({"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}) == {
        "reason": "Unschedulable", "message": ""}


def test_the_waiting_condition_names_the_first_replica_and_counts_the_others():
    from controller.jobs.decisions.replica_records import Replica
    from controller.jobs.decisions.waiting import condition

    def waiting(name):
        return Replica(name, waiting={"reason": "ErrImagePull", "message": f'container "{name}"'})

    first = 'Replica w-0 is waiting: ErrImagePull: container "w-0"'
    assert condition([Replica("idle"), waiting("w-0")]) == ("ErrImagePull", first)
    assert condition([waiting("w-0"), waiting("w-1")]) == ("ErrImagePull", first + "; and 1 more replica waiting")
    assert condition([waiting("w-0"), waiting("w-1"), waiting("w-2")]) == (
        "ErrImagePull", first + "; and 2 more replicas waiting")
    assert condition([Replica("idle")]) is None


def test_an_init_container_that_cannot_start_is_the_cause_before_the_main_containers():
    init = {"name": "setup", "state": {"waiting": {"reason": "ErrImagePull", "message": "no such image"}}}
    main = {"name": "main", "state": {"waiting": {"reason": "PodInitializing"}}}
    pod = {"status": {"phase": "Pending", "initContainerStatuses": [init], "containerStatuses": [main]}}
    assert cause(pod) == {"reason": "ErrImagePull", "message": 'container "setup": no such image'}


def test_only_a_start_failures_message_is_condensed_the_kubelets_others_kept_as_said():
    said = "pull failed: unable to start container process: x"  # (runc's step named, as condensed looks for)
    for reason, message in (("ErrImagePull", said), ("CreateContainerError", "x")):
        pod = {"status": {"phase": "Pending", "containerStatuses": [
            {"name": "main", "state": {"waiting": {"reason": reason, "message": said}}}]}}
        assert cause(pod) == {"reason": reason, "message": f'container "main": {message}'}, reason


def test_a_cause_without_a_message_is_said_without_a_trailing_colon():
    from controller.jobs.decisions.waiting import event_message

    assert event_message("job-worker-0", {"reason": "Unschedulable", "message": ""}) == \
        "Replica job-worker-0 is waiting: Unschedulable"


def test_the_event_ends_with_the_message_as_recorded_whatever_its_last_character():
    """The message is the kubelet's or scheduler's, cut at MESSAGE_MAX characters: it can end in any character. Only
    the separator left by an empty message is trimmed, not the message's own end."""
    from controller.jobs.decisions.waiting import MESSAGE_MAX, event_message

    image = "registry.example.com/team/TRAINER-X"
    pod = pending({"name": "main", "state": {"waiting": {"reason": "ErrImagePull",
                                                         "message": f"failed to pull image {image}"}}})
    assert event_message("a-worker-0", cause(pod)) == \
        f'Replica a-worker-0 is waiting: ErrImagePull: container "main": failed to pull image {image}'
    long = pending({"name": "main", "state": {"waiting": {"reason": "ErrImagePull", "message": "X" * 400}}})
    recorded = cause(long)
    assert len(recorded["message"]) == MESSAGE_MAX
    assert event_message("a-worker-0", recorded).endswith("X" * 10)
    assert event_message("a-worker-0", {"reason": "Unschedulable", "message": ""}) == \
        "Replica a-worker-0 is waiting: Unschedulable"
