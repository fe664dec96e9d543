"""The clean-up policy a job is judged by (controller/jobs/decisions/cleanup.py). Written against the mutants that
survived the other tests (tests/mutation, RELIABILITY.md): each test names the behaviour a surviving mutant broke."""

from __future__ import annotations

import pytest

from controller.jobs.decisions.cleanup import finished_policy, settle
from controller.jobs.decisions.replica_records import CREATING, DELETED, Replica
from controller.jobs.schema.api import CleanUpPolicy

from .plan_support import make_job


@pytest.mark.parametrize("phase", ["", "Pending", "Running", "Paused"])
def test_a_job_not_finished_is_judged_by_its_spec(phase):
    job = make_job(("worker", 1), cleanup="All")
    assert finished_policy(job, {"phase": phase, "cleanUpPolicy": "None"}) == CleanUpPolicy.ALL


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_job_follows_its_current_policy_whatever_it_finished_with(phase):
    # The spec's "Clean-up of a finished job follows its current cleanUpPolicy": the stored policy is only
    # what was in force, an edit of the spec's policy puts another in force.
    job = make_job(("worker", 1), cleanup="All")
    assert finished_policy(job, {"phase": phase, "cleanUpPolicy": "None"}) == CleanUpPolicy.ALL
    job = make_job(("worker", 1), cleanup="None")
    assert finished_policy(job, {"phase": phase, "cleanUpPolicy": "All"}) == CleanUpPolicy.NONE


@pytest.mark.parametrize("cleanup, expected", [("None", "Unfinished"), ("Unfinished", "Unfinished"), ("All", "All")])
def test_a_job_failed_by_its_deadline_deletes_at_least_its_unfinished_pods(cleanup, expected):
    job = make_job(("worker", 1), cleanup=cleanup)
    status = {"phase": "Failed", "reason": "DeadlineExceeded"}
    assert finished_policy(job, status) == CleanUpPolicy(expected)


@pytest.mark.parametrize("status", [{"phase": "Failed", "reason": "BackoffLimitExceeded"},
                                    {"phase": "Running", "reason": "DeadlineExceeded"},
                                    {"phase": "", "reason": "DeadlineExceeded"}])
def test_none_is_none_unless_the_job_has_ended_by_its_deadline(status):
    assert finished_policy(make_job(("worker", 1), cleanup="None"), status) == CleanUpPolicy.NONE


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


def test_under_none_a_record_marked_deleted_describes_its_pod_again_when_it_shows_alive():
    # Its delete never went through (the pod is not terminating) and None keeps it: the record describes it.
    settled = settle(CleanUpPolicy.NONE, Replica("r", "a", DELETED), pod("a", "Failed"))
    assert (settled.record.uid, settled.record.phase, settled.delete, settled.cleaned) == ("a", "Failed", None, False)


def test_a_pod_deleted_by_an_earlier_clean_up_stays_deleted_when_the_policy_is_weakened_to_none():
    # The spec: records of deleted pods become Deleted, and stay so (docs/live-jobs.md, "Clean-up follows
    # the current policy"); a dying pod's phase does not bring the record back.
    settled = settle(CleanUpPolicy.NONE, Replica("r", "a", DELETED), pod("a", "Failed", terminating=True))
    assert (settled.record.uid, settled.record.phase, settled.delete, settled.cleaned) == ("a", DELETED, None, False)


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


def test_the_stored_policy_is_read_only_when_it_is_one():
    # (status.cleanUpPolicy: the policy in force as the last status was written; an older controller wrote none.)
    from controller.jobs.decisions.cleanup import stored_policy

    assert stored_policy({"cleanUpPolicy": "All"}) == CleanUpPolicy.ALL
    assert stored_policy({}) is None and stored_policy({"cleanUpPolicy": "Sometimes"}) is None


@pytest.mark.parametrize("policy", list(CleanUpPolicy))
def test_a_pod_the_controller_retired_and_deleted_is_deleted_again_whatever_the_policy(policy):
    # A rank scaled away (or a pause, a group restart) retired its pod and the status said so; the controller
    # stopped before the delete. Once the job has finished, None keeps the job's pods, but this one is none of
    # them: its delete is repeated, as the finishing reconcile made it, and its record stays Deleted.
    retired = Replica("r", "a", DELETED, last_restart_uid="a", removed=True)
    settled = settle(policy, retired, pod("a", "Running"))
    assert (settled.record, settled.delete, settled.cleaned) == (retired, "a", False)
    going = settle(policy, retired, pod("a", "Failed", terminating=True))
    assert (going.record, going.delete, going.cleaned) == (retired, None, False)
