"""Clean-up of a finished job's pods: None, Unfinished, All."""

from __future__ import annotations

from dataclasses import replace

import pytest

from controller.jobs.decisions.cleanup import selects, settle
from controller.jobs.decisions.replica_records import CREATING, DELETED, Replica, blank_record
from controller.jobs.schema.api import CleanUpPolicy

from .plan_support import make_pod

NONE, UNFINISHED, ALL = CleanUpPolicy.NONE, CleanUpPolicy.UNFINISHED, CleanUpPolicy.ALL


def rec(uid: str = "u1", phase: str = "Running", last: str = "") -> Replica:
    return replace(blank_record("job-worker-0"), uid=uid, phase=phase, last_restart_uid=last)


@pytest.mark.parametrize(("policy", "phase", "expected"), [
    (NONE, "Running", False), (NONE, "Failed", False),
    (UNFINISHED, "Pending", True), (UNFINISHED, "Running", True), (UNFINISHED, "Unknown", True),
    (UNFINISHED, None, True), (UNFINISHED, "Succeeded", False), (UNFINISHED, "Failed", False),
    (ALL, "Running", True), (ALL, "Succeeded", True), (ALL, "Failed", True),
])
def test_selects(policy, phase, expected):
    assert selects(policy, make_pod("worker", 0, "u1", phase)) is expected


def test_none_keeps_pods_and_follows_them():
    result = settle(NONE, rec(), make_pod("worker", 0, "u1", "Succeeded"))
    assert result.delete is None and not result.cleaned
    assert result.record.phase == "Succeeded"


@pytest.mark.parametrize("policy", [NONE, UNFINISHED, ALL])
def test_a_replica_without_pod_is_deleted(policy):
    result = settle(policy, rec(), None)
    assert result.record.phase == DELETED and result.record.uid == "u1"
    assert result.delete is None and not result.cleaned


def test_a_replica_never_created_shows_deleted():
    result = settle(ALL, replace(blank_record("job-worker-0")), None)
    assert result.record.phase == DELETED and blank_record("x").phase == CREATING


def test_unfinished_deletes_running_and_keeps_finished():
    running = settle(UNFINISHED, rec(), make_pod("worker", 0, "u1", "Running"))
    assert running.delete == "u1" and running.cleaned and running.record.phase == DELETED
    done = settle(UNFINISHED, rec(), make_pod("worker", 0, "u1", "Failed"))
    assert done.delete is None and not done.cleaned and done.record.phase == "Failed"


def test_all_deletes_finished_pods_too():
    result = settle(ALL, rec(), make_pod("worker", 0, "u1", "Succeeded"))
    assert result.delete == "u1" and result.cleaned and result.record.phase == DELETED


def test_a_terminating_pod_is_deleted_without_asking_again():
    result = settle(ALL, rec(), make_pod("worker", 0, "u1", "Running", terminating=True))
    assert result.delete is None and not result.cleaned and result.record.phase == DELETED


def test_a_deleted_pod_still_seen_stays_deleted_and_is_deleted_again_only_if_not_terminating():
    deleted = rec(phase=DELETED)
    # Cache lag or a crash before the delete: ask again, quietly.
    again = settle(UNFINISHED, deleted, make_pod("worker", 0, "u1", "Running"))
    assert again.delete == "u1" and not again.cleaned and again.record == deleted
    # Terminating and failed by SIGTERM: still Deleted, nothing to do.
    dying = settle(UNFINISHED, deleted, make_pod("worker", 0, "u1", "Failed", exit_code=143, terminating=True))
    assert dying.delete is None and dying.record == deleted


def test_a_retired_pod_that_is_not_the_replicas_own():
    # The restart was decided (u1 retired) and the replacement not created when the job finished.
    awaiting = rec(uid="", phase=CREATING, last="u1")
    result = settle(ALL, awaiting, make_pod("worker", 0, "u1", "Failed"))
    assert result.delete == "u1" and not result.cleaned
    assert result.record.phase == DELETED and result.record.uid == ""
    kept = settle(UNFINISHED, awaiting, make_pod("worker", 0, "u1", "Failed"))
    assert kept.delete is None
    # The status already names a newer pod u2: its record stays as it is.
    newer = rec(uid="u2", phase="Succeeded", last="u1")
    assert settle(NONE, newer, make_pod("worker", 0, "u1", "Failed")).record == newer


@pytest.mark.parametrize("policy", [NONE, UNFINISHED, ALL])
def test_settling_is_idempotent(policy):
    for phase in ("Pending", "Running", "Succeeded", "Failed"):
        pod = make_pod("worker", 0, "u1", phase)
        first = settle(policy, rec(), pod)
        again = settle(policy, first.record, pod)
        assert again.record == first.record and again.delete == first.delete and not again.cleaned


def test_a_pod_whose_delete_never_went_through_and_then_finished_is_kept_and_described():
    """Clean-up Unfinished asked to delete a running pod; the delete was refused (a 500) and the pod then
    finished: the policy keeps finished pods, so it stays and its record says what it is, not Deleted."""
    deleted = replace(rec("u1", "Running"), phase=DELETED)
    kept = settle(UNFINISHED, deleted, make_pod("worker", 0, "u1", "Succeeded"))
    assert (kept.record.phase, kept.delete, kept.cleaned) == ("Succeeded", None, False)
    # Under All the policy still wants it gone: the delete is asked again, and the record stays Deleted.
    again = settle(ALL, deleted, make_pod("worker", 0, "u1", "Succeeded"))
    assert (again.record.phase, again.delete) == (DELETED, "u1")


def test_a_replica_whose_create_is_in_flight_is_not_deleted():
    # Created just before the job ended, not in the cache yet: it is unseen, not gone (issue 16: a
    # failed worker-1 was reported Deleted in the job's first Failed status).
    blank = blank_record("job-worker-1")
    pending = settle(UNFINISHED, blank, None, create_pending=True)
    assert pending.record == blank and pending.delete is None and not pending.cleaned
    seen = settle(UNFINISHED, pending.record, make_pod("worker", 1, "u2", "Failed"))
    assert seen.record.phase == "Failed" and seen.record.uid == "u2" and seen.delete is None
