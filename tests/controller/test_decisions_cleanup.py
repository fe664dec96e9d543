"""The clean-up policy a job is judged by (controller/jobs/cleanup.py). Written against the mutants that survived
the other tests (tests/mutation, RELIABILITY.md): each test names the behaviour a surviving mutant broke."""

from __future__ import annotations

import pytest

from controller.jobs.api import CleanUpPolicy
from controller.jobs.cleanup import finished_policy, settle
from controller.jobs.status import CREATING, DELETED, Replica

from .plan_support import make_job


@pytest.mark.parametrize("phase", ["", "Pending", "Running", "Paused"])
def test_a_job_not_finished_is_judged_by_its_spec(phase):
    job = make_job(("worker", 1), cleanup="All")
    assert finished_policy(job, {"phase": phase, "cleanUpPolicy": "None"}) == CleanUpPolicy.ALL


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_job_keeps_the_policy_it_finished_with_whatever_the_spec_says_now(phase):
    job = make_job(("worker", 1), cleanup="All")
    assert finished_policy(job, {"phase": phase, "cleanUpPolicy": "None"}) == CleanUpPolicy.NONE
    assert finished_policy(job, {"phase": phase, "cleanUpPolicy": "Unfinished"}) == CleanUpPolicy.UNFINISHED


def test_a_job_finished_without_a_stored_policy_or_a_bad_one_is_judged_by_its_spec():
    job = make_job(("worker", 1), cleanup="Unfinished")
    assert finished_policy(job, {"phase": "Succeeded"}) == CleanUpPolicy.UNFINISHED
    assert finished_policy(job, {"phase": "Failed", "cleanUpPolicy": "Sometimes"}) == CleanUpPolicy.UNFINISHED


def pod(uid: str, phase: str, terminating: bool = False) -> dict:
    metadata = {"uid": uid, **({"deletionTimestamp": "2024-01-01T00:00:00Z"} if terminating else {})}
    return {"metadata": metadata, "status": {"phase": phase}}


def test_a_pod_that_replaced_a_deleted_one_is_the_replicas_and_is_cleaned_up():
    settled = settle(CleanUpPolicy.ALL, Replica("r", "a", DELETED), pod("b", "Running"))
    assert (settled.record.uid, settled.record.phase, settled.delete, settled.cleaned) == ("b", DELETED, "b", True)


@pytest.mark.parametrize("terminating", [False, True])
def test_under_none_a_record_marked_deleted_describes_its_pod_again_when_it_shows(terminating):
    settled = settle(CleanUpPolicy.NONE, Replica("r", "a", DELETED), pod("a", "Failed", terminating))
    assert (settled.record.uid, settled.record.phase, settled.delete, settled.cleaned) == ("a", "Failed", None, False)


def test_only_a_pod_being_created_and_unseen_is_waited_for():
    waited = settle(CleanUpPolicy.ALL, Replica("r", "", CREATING), None, create_pending=True)
    assert waited.record.phase == CREATING
    for record in (Replica("r", "", "Failed"), Replica("r", "a", CREATING)):
        assert settle(CleanUpPolicy.ALL, record, None, create_pending=True).record.phase == DELETED


def test_a_pod_retired_for_a_restart_and_still_the_records_is_cleaned_up_as_the_replicas_own():
    # A restart was counted (the record keeps the pod as uid and lastRestartUid) and the job finished before the
    # pod was gone: under All it is deleted, the replica shown Deleted, with the clean-up's event.
    counted = Replica("r", "a", "Failed", restart_count=1, last_restart_uid="a")
    settled = settle(CleanUpPolicy.ALL, counted, pod("a", "Failed"))
    assert (settled.record.phase, settled.delete, settled.cleaned) == (DELETED, "a", True)
