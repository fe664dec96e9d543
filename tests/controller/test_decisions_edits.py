"""Live edits (controller/jobs/edits.py): which pods are of the other run mode and are replaced when debug mode is
turned on or off, which records of ranks scaled away are kept, when a template change is announced. Written
against the mutants that survived the other tests (tests/mutation, RELIABILITY.md): each test names the
behaviour a surviving mutant broke."""

from __future__ import annotations

import pytest

from controller.jobs.actions import DEBUG
from controller.jobs.api import Outcome
from controller.jobs.edits import judged, other_mode, removed, removed_records, template_changes, with_removed
from controller.jobs.pods import PodMode, mode_annotation
from controller.jobs.restart import Observation, Seen, Slot
from controller.jobs.status import Replica
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.genericjob.models import RestartPolicy

from .plan_support import make_job

WORKLOAD = PodMode.IMMEDIATE  # (and resume: any mode but debug)


def observed(mode: str | None, phase: str = "Running", seen: Seen = Seen.CURRENT, terminating: bool = False,
             outcome: Outcome | None = None):
    metadata: dict = {"name": "job-worker-0", "uid": "u1"}
    if mode is not None:
        metadata["annotations"] = {mode_annotation(GENERICJOB.api): mode}
    if terminating:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    pod = {"metadata": metadata, "status": {"phase": phase}}
    record = Replica("job-worker-0", "u1", phase)
    return Observation(Slot("worker", 0, "job-worker-0", RestartPolicy(), record, pod), seen, record, outcome)


@pytest.mark.parametrize("phase", ["Pending", "Running", "Succeeded", "Failed"])
def test_a_debug_pod_is_replaced_once_debug_mode_is_off_whatever_its_phase(phase):
    assert other_mode(GENERICJOB, observed(DEBUG, phase), debugging=False) is True
    assert other_mode(GENERICJOB, observed(DEBUG, phase), debugging=True) is False


@pytest.mark.parametrize("phase", ["Pending", "Running"])
def test_a_workload_pod_not_finished_is_replaced_once_debug_mode_is_on(phase):
    assert other_mode(GENERICJOB, observed(WORKLOAD, phase), debugging=True) is True
    assert other_mode(GENERICJOB, observed(WORKLOAD, phase), debugging=False) is False


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_workload_pod_is_judged_not_replaced_when_debug_mode_is_on(phase):
    assert other_mode(GENERICJOB, observed(WORKLOAD, phase), debugging=True) is False


def test_a_pod_made_before_pods_said_their_mode_is_not_replaced():
    assert other_mode(GENERICJOB, observed(None), debugging=True) is False
    assert other_mode(GENERICJOB, observed(None), debugging=False) is False


def test_a_pod_terminating_or_not_the_replicas_own_is_left_to_go():
    assert other_mode(GENERICJOB, observed(DEBUG, terminating=True), debugging=False) is False
    assert other_mode(GENERICJOB, observed(DEBUG, seen=Seen.RETIRED), debugging=False) is False


def test_of_the_ranks_scaled_away_only_those_that_restarted_or_whose_pod_remains_are_kept():
    slot = observed(WORKLOAD).slot  # job-worker-0, still in the spec
    old = {"removedReplicas": [{"name": "job-worker-0", "restartCount": 2}, {"name": "job-worker-1", "restartCount": 1},
                               {"name": "job-worker-2"}, {"name": "job-worker-3"}]}
    pods = [{"metadata": {"name": "job-worker-3"}}]
    kept = removed(GENERICJOB, old, [slot], pods)
    assert [(r.name, r.restart_count, r.phase) for r in kept] == [("job-worker-1", 1, "Deleted"),
                                                                   ("job-worker-3", 0, "Deleted")]


def test_a_template_change_is_announced_once_and_a_first_or_unreadable_record_announces_nothing():
    job = make_job(("worker", 1))
    hashes, events = template_changes(job, {})
    assert events == []
    assert template_changes(job, {"templateHashes": hashes}) == (hashes, [])
    assert template_changes(job, {"templateHashes": "garbage"}) == (hashes, [])
    _, [event] = template_changes(job, {"templateHashes": {"worker": "an older hash"}})
    assert (event.type, event.reason) == ("Normal", "TemplateChanged")
    assert event.message.startswith("spec.replicaSpecs[0].template (worker) changed")


def test_in_debug_mode_a_workload_pods_end_is_judged_and_a_debug_pods_is_not():
    def outcome(mode, debugging):
        return judged(GENERICJOB, [observed(mode, "Failed", outcome=Outcome.FAILED)], debugging)[("worker", 0)]

    assert outcome(WORKLOAD, debugging=True) == Outcome.FAILED
    assert outcome(WORKLOAD, debugging=False) == Outcome.FAILED
    assert outcome(DEBUG, debugging=True) is None
    assert outcome(None, debugging=True) is None  # made before pods said their mode: debug decided nothing
    assert outcome(None, debugging=False) == Outcome.FAILED


def test_unreadable_records_of_ranks_scaled_away_are_skipped():
    status = {"removedReplicas": ["garbage", None, {"restartCount": 1}, {"name": ""}, {"name": "job-worker-1"}]}
    assert removed_records(status) == {"job-worker-1": {"name": "job-worker-1"}}


def test_restarts_of_ranks_scaled_away_add_to_the_backoff_count():
    gone = [Replica("job-worker-1", restart_count=2)]
    assert with_removed({"backoffCount": 3}, gone)["backoffCount"] == 5
    assert with_removed({}, gone)["backoffCount"] == 2
    assert with_removed({"backoffCount": 3, "removedReplicas": []}, []) == {"backoffCount": 3}
