"""Per-replica decisions: outcome for good, replace or not, count once per pod uid."""

from __future__ import annotations

from dataclasses import replace

import pytest

from controller.jobs.decisions.replica_records import CREATING, DELETED, Replica, blank_record
from controller.jobs.decisions.restart import Seen, Slot, final_outcome, observe, pause, step
from controller.kinds.genericjob.models import RestartPolicy
from controller.kinds.genericjob.rules import Outcome

from .plan_support import make_pod

NAME = "job-worker-0"


def policy(kind: str, limit: int = 0) -> RestartPolicy:
    return RestartPolicy(policy=kind, limit=limit)


def rec(uid: str = "", phase: str = CREATING, restarts: int = 0, last: str = "") -> Replica:
    return replace(blank_record(NAME), uid=uid, phase=phase, restart_count=restarts, last_restart_uid=last)


def slot(pol: RestartPolicy, record: dict, pod: dict | None) -> Slot:
    return Slot("worker", 0, NAME, pol, record, pod)


def decide(pol: RestartPolicy, record: dict, pod: dict | None):
    obs = observe(slot(pol, record, pod))
    return obs, step(obs)


# --- outcome for good ---------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "limit", "restarts", "phase", "expected"), [
    ("Never", 3, 0, "Succeeded", Outcome.SUCCEEDED),
    ("Never", 3, 0, "Failed", Outcome.FAILED),
    ("OnFailure", 2, 0, "Succeeded", Outcome.SUCCEEDED),
    ("OnFailure", 2, 1, "Failed", None),
    ("OnFailure", 2, 2, "Failed", Outcome.FAILED),
    ("OnFailure", 0, 0, "Failed", Outcome.FAILED),  # limit defaults to 0: no restart at all
    ("Always", 2, 1, "Succeeded", None),
    ("Always", 2, 2, "Succeeded", Outcome.SUCCEEDED),
    ("Always", 2, 1, "Failed", None),
    ("Always", 2, 2, "Failed", Outcome.FAILED),
    ("Always", 2, 0, "Running", None),
    ("Never", 0, 0, "Pending", None),
])
def test_final_outcome(kind, limit, restarts, phase, expected):
    assert final_outcome(phase, policy(kind, limit), restarts) == expected


# --- creating and adopting ----------------------------------------------------------------------


def test_a_replica_without_pod_is_created():
    obs, result = decide(policy("OnFailure"), rec(), None)
    assert obs.seen == Seen.MISSING
    assert result.create and result.delete is None and result.restart_event is None
    assert result.record.phase == CREATING


def test_a_new_pod_is_adopted_without_counting():
    obs, result = decide(policy("OnFailure", 3), rec(), make_pod("worker", 0, "u1", "Pending"))
    assert obs.seen == Seen.CURRENT
    assert result.record.uid == "u1" and result.record.phase == "Pending"
    assert result.record.restart_count == 0
    assert not result.create and result.delete is None


def test_a_pod_that_replaced_ours_behind_our_back_is_adopted_without_counting():
    obs, result = decide(policy("OnFailure", 3), rec("u1", "Running"), make_pod("worker", 0, "u9", "Running"))
    assert obs.seen == Seen.CURRENT
    assert result.record.uid == "u9" and result.record.restart_count == 0


def test_a_running_pod_needs_nothing():
    _, result = decide(policy("Always", 3), rec("u1", "Running"), make_pod("worker", 0, "u1", "Running"))
    assert not result.create and result.delete is None and result.restart_event is None


# --- restarts -----------------------------------------------------------------------------------


def test_on_failure_restarts_a_failed_pod_counting_it_once():
    pod = make_pod("worker", 0, "u1", "Failed", exit_code=3)
    obs, result = decide(policy("OnFailure", 2), rec("u1", "Running"), pod)
    assert obs.outcome is None
    assert result.record.restart_count == 1 and result.record.last_restart_uid == "u1"
    assert result.delete == "u1" and not result.create
    assert result.restart_event == "Restarting replica job-worker-0 (restart 1 of 2): pod exited with code 3"

    # The same pod seen again (cache lag, or a crash before the delete): deleted again, not counted.
    obs, again = decide(policy("OnFailure", 2), result.record, pod)
    assert obs.seen == Seen.RETIRED
    assert again.record == result.record and again.delete == "u1"
    assert again.restart_event is None and not again.create

    # Gone: the replacement is created.
    obs, replace = decide(policy("OnFailure", 2), again.record, None)
    assert obs.seen == Seen.MISSING and replace.create
    assert replace.record.uid == "" and replace.record.phase == CREATING
    assert replace.record.restart_count == 1 and replace.record.last_restart_uid == "u1"

    # The replacement appears and is adopted.
    _, adopted = decide(policy("OnFailure", 2), replace.record, make_pod("worker", 0, "u2", "Running"))
    assert adopted.record.uid == "u2" and adopted.record.restart_count == 1


def test_a_terminating_retired_pod_is_not_deleted_again():
    pod = make_pod("worker", 0, "u1", "Failed", terminating=True)
    _, result = decide(policy("OnFailure", 2), rec("u1", "Failed", 1, "u1"), pod)
    assert result.delete is None and not result.create


def test_a_finished_pod_already_being_deleted_is_counted_without_a_delete():
    pod = make_pod("worker", 0, "u1", "Failed", terminating=True)
    _, result = decide(policy("OnFailure", 2), rec("u1", "Running"), pod)
    assert result.record.restart_count == 1 and result.delete is None


def test_under_never_a_running_pod_someone_deleted_is_lost_not_failed_when_its_kubelet_reports_failed():
    """A real kubelet writes Failed (the SIGTERM's 143) before a deleted pod goes: under Never that is no
    failure but a lost pod, recreated uncounted once gone (as localcluster, which deletes at once, showed it)."""
    pod = make_pod("worker", 0, "u1", "Failed", terminating=True)
    obs, result = decide(policy("Never"), rec("u1", "Running"), pod)
    assert obs.outcome is None and result.delete is None and not result.create
    assert result.record.phase == "Running" and result.record.restart_count == 0
    gone_obs, gone = decide(policy("Never"), result.record, None)
    assert gone_obs.outcome is None and gone.create and gone.record.restart_count == 0


def test_on_failure_limit_reached_fails_for_good():
    pod = make_pod("worker", 0, "u3", "Failed")
    obs, result = decide(policy("OnFailure", 2), rec("u3", "Running", 2, "u2"), pod)
    assert obs.outcome == Outcome.FAILED
    assert result.record.restart_count == 2 and result.delete is None and not result.create


def test_on_failure_keeps_a_succeeded_pod():
    obs, result = decide(policy("OnFailure", 2), rec("u1", "Running"), make_pod("worker", 0, "u1", "Succeeded"))
    assert obs.outcome == Outcome.SUCCEEDED and result.delete is None


def test_always_restarts_a_succeeded_pod_until_the_limit():
    pod = make_pod("worker", 0, "u1", "Succeeded")
    _, result = decide(policy("Always", 1), rec("u1", "Running"), pod)
    assert result.delete == "u1" and result.record.restart_count == 1
    assert result.restart_event == "Restarting replica job-worker-0 (restart 1 of 1): pod exited with code 0"
    obs, done = decide(policy("Always", 1), rec("u2", "Running", 1, "u1"), make_pod("worker", 0, "u2", "Succeeded"))
    assert obs.outcome == Outcome.SUCCEEDED and done.delete is None


def test_always_restarts_a_failed_pod():
    _, result = decide(policy("Always", 1), rec("u1", "Running"), make_pod("worker", 0, "u1", "Failed"))
    assert result.delete == "u1" and result.record.restart_count == 1


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_never_replaces_nothing(phase):
    obs, result = decide(policy("Never", 5), rec("u1", "Running"), make_pod("worker", 0, "u1", phase))
    assert obs.outcome == Outcome(phase)
    assert result.delete is None and not result.create and result.record.restart_count == 0


def test_a_failed_pod_without_exit_code_names_its_reason():
    pod = make_pod("worker", 0, "u1", "Failed", reason="Evicted")
    pod["status"].pop("containerStatuses")
    _, result = decide(policy("OnFailure", 1), rec("u1", "Running"), pod)
    assert result.restart_event == "Restarting replica job-worker-0 (restart 1 of 1): pod failed: Evicted"


# --- stale caches -------------------------------------------------------------------------------


def test_stale_cache_showing_the_retired_pod_after_the_replacement_is_recorded():
    # The status names u2 as current; the cache still shows u1, which was already counted.
    record = rec("u2", "Running", 1, "u1")
    obs, result = decide(policy("OnFailure", 3), record, make_pod("worker", 0, "u1", "Failed"))
    assert obs.seen == Seen.RETIRED and obs.outcome is None
    assert result.record == record  # nothing about u2 is overwritten by u1
    assert result.delete == "u1" and not result.create and result.restart_event is None


def test_stale_cache_with_the_replacement_recorded_finished_keeps_its_outcome():
    record = rec("u2", "Succeeded", 1, "u1")
    obs = observe(slot(policy("OnFailure", 3), record, make_pod("worker", 0, "u1", "Failed")))
    assert obs.outcome == Outcome.SUCCEEDED


# --- pods deleted behind the controller's back --------------------------------------------------


def test_lost_pod_under_on_failure_is_counted_and_recreated():
    obs, result = decide(policy("OnFailure", 2), rec("u1", "Running"), None)
    assert obs.seen == Seen.GONE and obs.outcome is None
    assert result.create and result.delete is None
    assert result.record.restart_count == 1 and result.record.last_restart_uid == "u1"
    assert result.record.uid == "" and result.record.phase == CREATING
    assert result.restart_event == "Restarting replica job-worker-0 (restart 1 of 2): pod was deleted"
    # Replayed (crash before the create): created again, not counted again.
    _, again = decide(policy("OnFailure", 2), result.record, None)
    assert again.create and again.record == result.record and again.restart_event is None


def test_lost_pod_under_always_is_counted():
    _, result = decide(policy("Always", 1), rec("u1", "Pending"), None)
    assert result.create and result.record.restart_count == 1


def test_lost_pod_with_the_limit_used_up_has_failed_for_good():
    obs, result = decide(policy("OnFailure", 1), rec("u2", "Running", 1, "u1"), None)
    assert obs.outcome == Outcome.FAILED
    assert not result.create and result.record.phase == "Failed" and result.record.restart_count == 1
    # And it stays so.
    obs, again = decide(policy("OnFailure", 1), result.record, None)
    assert obs.outcome == Outcome.FAILED and again.record == result.record and not again.create


def test_lost_pod_under_never_is_recreated_without_counting():
    _, result = decide(policy("Never"), rec("u1", "Running"), None)
    assert result.create and result.record.restart_count == 0 and result.record.last_restart_uid == "u1"
    assert result.restart_event == \
        "Recreating replica job-worker-0 (not counted: restart policy Never): pod was deleted"


@pytest.mark.parametrize("kind", ["Never", "OnFailure", "Always"])
def test_a_succeeded_pod_that_disappears_is_not_run_again(kind):
    obs, result = decide(policy(kind, 0), rec("u1", "Succeeded"), None)
    assert obs.outcome == Outcome.SUCCEEDED and not result.create


def test_a_failed_pod_that_disappears_before_its_restart_is_counted_and_replaced():
    _, result = decide(policy("OnFailure", 1), rec("u1", "Failed"), None)
    assert result.create and result.record.restart_count == 1 and result.record.last_restart_uid == "u1"


# --- pause --------------------------------------------------------------------------------------


def test_pause_retires_the_pod_without_counting():
    obs = observe(slot(policy("OnFailure", 2), rec("u1", "Running", 1, "u0"), make_pod("worker", 0, "u1")))
    result = pause(obs)
    assert result.delete == "u1" and not result.create
    assert result.record.phase == DELETED and result.record.last_restart_uid == "u1"
    assert result.record.restart_count == 1
    # The pod fails while it terminates: it is retired, so nothing is counted on resume.
    dying = make_pod("worker", 0, "u1", "Failed", exit_code=143, terminating=True)
    obs, resumed = decide(policy("OnFailure", 2), result.record, dying)
    assert obs.seen == Seen.RETIRED and resumed.delete is None and resumed.restart_event is None
    assert resumed.record == result.record  # still Deleted, not Failed
    obs, resumed = decide(policy("OnFailure", 2), result.record, None)
    assert obs.seen == Seen.MISSING and resumed.create and resumed.record.restart_count == 1


def test_pause_of_a_replica_never_created():
    result = pause(observe(slot(policy("OnFailure"), rec(), None)))
    assert result.delete is None and result.record.phase == DELETED and result.record.uid == ""
