"""What a replica waits for (controller/jobs/waiting.py) at the edges of a pod's status. Written against the
mutants that survived the other tests (tests/mutation, RELIABILITY.md): each test names the behaviour a surviving
mutant broke."""

from __future__ import annotations

import pytest

from controller.jobs.waiting import cause

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
    from controller.jobs.waiting import same

    image = {"reason": "ErrImagePull", "message": ""}
    assert same(None, None) is True and same({}, None) is True
    assert same(None, image) is False and same(image, {}) is False
    assert same(image, {"reason": "ImagePullBackOff", "message": "x"}) is True
