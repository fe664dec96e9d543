"""The restart decisions at real times (controller/jobs/decisions/restart.py, held.py): the unit tests of
test_decisions_restart mostly call `step()` without a time, so a mutant that lost a time (None) crashed no
test while it would raise on every reconcile of a real job (issue 45). Every decision here is given a real
timestamp and the same moment in seconds, and the times it writes are asserted."""

from __future__ import annotations

from controller.jobs.decisions.backoff import RestartBackoff, epoch, stamp
from controller.jobs.decisions.replica_records import Replica, read_record
from controller.jobs.decisions.restart import Observation, Seen, Slot, debug_step, observe, pause, step
from controller.jobs.schema.api import Outcome
from controller.jobs.training.restart import ReplicaRestart, RestartPolicyType

from .plan_support import Pods, at, make_job
from .test_held import hold, running

NOW = 1_700_000_000.0
BACKOFF = RestartBackoff(10.0)
BUDGET_OF_ONE = ReplicaRestart(RestartPolicyType.ON_FAILURE, 1, "main")
EXITED_3 = ({"name": "main", "state": "terminated", "exitCode": 3},)


def gone(phase: str, *, streak: int = 0, policy=BUDGET_OF_ONE) -> Slot:
    """A replica whose recorded pod vanished without the controller retiring it."""
    record = Replica("job-worker-0", "u1", phase, EXITED_3 if phase == "Failed" else (), restart_streak=streak)
    return Slot("worker", 0, "job-worker-0", policy, record, None)


def test_a_failed_pod_that_vanished_is_counted_at_now_and_replaced_after_its_back_off():
    obs = observe(gone("Failed", streak=2))
    assert (obs.seen, obs.outcome) == (Seen.GONE, None)
    decided = step(obs, stamp(NOW), NOW, BACKOFF)
    assert (decided.record.restart_count, decided.record.restart_streak) == (1, 3)
    assert decided.record.last_restart_time == stamp(NOW) and decided.record.last_restart_uid == "u1"
    assert (decided.create, decided.wake) == (False, 40.0)  # the third quick restart in a row: 10 * 2 * 2
    assert decided.restart_event.endswith("pod exited with code 3; its next pod in 40s (back-off)")
    # Its back-off over, the replacement is made.
    later = Observation(obs.slot, Seen.MISSING, decided.record, None)
    assert step(later, stamp(NOW + 40), NOW + 40, BACKOFF).create is True
    assert step(later, stamp(NOW + 39.5), NOW + 39.5, BACKOFF).wake == 0.5


def test_a_running_pod_that_vanished_is_counted_at_now_and_replaced_after_its_back_off():
    decided = step(observe(gone("Running")), stamp(NOW), NOW, BACKOFF)
    assert decided.record.last_restart_time == stamp(NOW) and decided.record.restart_streak == 1
    assert (decided.create, decided.wake) == (False, 10.0)


def test_a_finished_pod_that_vanished_draws_on_the_jobs_budget_as_it_stands():
    # A training kind's budget is the job's: with the one restart already spent elsewhere, the vanished failed
    # pod is the replica's failure for good.
    assert observe(gone("Failed"), job_restarts=0).outcome is None
    spent = observe(gone("Failed"), job_restarts=1)
    assert spent.outcome == Outcome.FAILED
    assert step(spent, stamp(NOW), NOW, BACKOFF).record.restart_count == 0  # decided: nothing counted


def test_a_pod_that_ran_ten_minutes_restarts_its_streak_at_one():
    pod = {"metadata": {"uid": "u1"}, "status": {"phase": "Failed", "startTime": stamp(NOW - 600)}}
    record = Replica("job-worker-0", "u1", "Failed", EXITED_3, restart_streak=4)
    obs = observe(Slot("worker", 0, "job-worker-0", BUDGET_OF_ONE, record, pod))
    decided = step(obs, stamp(NOW), NOW, BACKOFF)
    assert (decided.record.restart_streak, decided.delete, decided.wake) == (1, "u1", None)
    assert decided.record.last_restart_time == stamp(NOW)
    quick = {"metadata": {"uid": "u1"}, "status": {"phase": "Failed", "startTime": stamp(NOW - 599)}}
    obs = observe(Slot("worker", 0, "job-worker-0", BUDGET_OF_ONE, record, quick))
    assert step(obs, stamp(NOW), NOW, BACKOFF).record.restart_streak == 5


def test_pausing_counts_a_failure_at_now_and_its_next_pod_owes_nothing_to_the_back_off():
    pod = {"metadata": {"uid": "u1"}, "status": {"phase": "Failed", "startTime": stamp(NOW - 5), "containerStatuses": [
        {"name": "main", "state": {"terminated": {"exitCode": 3}}}]}}
    record = Replica("job-worker-0", "u1", "Failed", EXITED_3, restart_streak=1)
    paused = pause(observe(Slot("worker", 0, "job-worker-0", BUDGET_OF_ONE, record, pod)), NOW, BACKOFF)
    assert (paused.record.restart_count, paused.record.restart_streak, paused.record.phase) == (1, 2, "Deleted")
    assert paused.record.last_restart_time == "" and paused.delete == "u1"
    assert paused.restart_event.endswith("pod exited with code 3; its next pod when the job resumes")
    lost = pause(observe(gone("Running")), NOW, BACKOFF)
    assert (lost.record.restart_count, lost.record.restart_streak, lost.delete) == (1, 1, None)


def test_a_pod_deleted_by_a_person_as_the_job_pauses_is_said_deleted_not_exited_143():
    pod = {"metadata": {"uid": "u1", "deletionTimestamp": stamp(NOW - 1)}, "status": {
        "phase": "Failed", "containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": 143}}}]}}
    record = Replica("job-worker-0", "u1", "Running")
    paused = pause(observe(Slot("worker", 0, "job-worker-0", BUDGET_OF_ONE, record, pod)), NOW, BACKOFF)
    assert paused.restart_event.endswith("(restart 1 of 1 of the job): pod was deleted; its next pod when the job "
                                         "resumes")
    assert paused.delete is None  # already going


def test_the_streak_a_pause_keeps_or_forgets_is_what_the_status_stores():
    # A workload pod's quick failures before a pause still count after it; a debug session's do not. The record is
    # stored as JSON between reconciles, so what counts is what survives `to_json` and `read_record`.
    running = Replica("job-worker-0", "u1", "Running", restart_count=2, last_restart_uid="u0",
                      last_restart_time=stamp(NOW - 100), restart_streak=3)
    pod = {"metadata": {"uid": "u1"}, "status": {"phase": "Running"}}
    workload = pause(observe(Slot("worker", 0, "job-worker-0", BUDGET_OF_ONE, running, pod)), NOW, BACKOFF)
    stored = read_record(workload.record.to_json(), "job-worker-0")
    assert (stored.restart_streak, stored.last_restart_time) == (3, "")
    debug = pause(observe(Slot("worker", 0, "job-worker-0", BUDGET_OF_ONE, running, pod, debug=True)), NOW, BACKOFF)
    assert read_record(debug.record.to_json(), "job-worker-0").restart_streak == 0
    # After the resume the next quick failure of the workload's pod continues its streak.
    resumed = Replica("job-worker-0", "u2", "Failed", EXITED_3, stored.restart_count, stored.last_restart_uid,
                      stored.last_restart_time, stored.restart_streak)
    again = {"metadata": {"uid": "u2"}, "status": {"phase": "Failed", "startTime": stamp(NOW + 10)}}
    decided = step(observe(Slot("worker", 0, "job-worker-0", ReplicaRestart(RestartPolicyType.ON_FAILURE, 9, "main"),
                                resumed, again)), stamp(NOW + 20), NOW + 20, BACKOFF)
    assert decided.record.restart_streak == 4 and decided.restart_event.endswith("its next pod in 80s (back-off)")


def test_a_debug_pod_lost_is_replaced_after_its_back_off_from_now():
    record = Replica("job-worker-0", "u1", "Running", restart_streak=1)
    obs = observe(Slot("worker", 0, "job-worker-0", BUDGET_OF_ONE, record, None, debug=True))
    decided = debug_step(obs, stamp(NOW), NOW, BACKOFF)
    assert (decided.record.restart_count, decided.record.restart_streak) == (0, 2)
    assert decided.record.last_restart_time == stamp(NOW) and (decided.create, decided.wake) == (False, 20.0)


def test_a_held_job_force_deletes_a_pod_stuck_terminating_and_wakes_for_one_not_yet_overdue():
    job, pods = make_job(("worker", 2)), Pods()
    status = running(job, pods)
    pods.set("worker", 0, "Running", terminating=True)  # its deletion asked at at(0)
    overdue = hold(status, pods, at(100), clock=epoch(at(100)))
    assert [(f.name, f.uid) for f in overdue.force_delete] == [("job-worker-0", pods.uid("worker", 0))]
    assert overdue.force_delete[0].overdue == 100.0 and overdue.requeue_after is None
    early = hold(status, pods, at(45), clock=epoch(at(45)))
    assert early.force_delete == [] and early.requeue_after == 15.0
    sooner = hold(status, pods, at(45), clock=epoch(at(45)), stuck_after=50.0)
    assert sooner.requeue_after == 5.0


def test_no_back_off_before_a_first_restart_nor_with_a_base_of_zero_or_less():
    assert RestartBackoff(10.0).delay(0) == 0.0 and RestartBackoff(10.0).delay(1) == 10.0
    assert RestartBackoff(0.0).delay(3) == 0.0 and RestartBackoff(-1.0).delay(3) == 0.0


def test_a_stamp_is_utc_with_milliseconds_whatever_the_machines_time_zone(monkeypatch):
    import time

    assert stamp(1000.999) == "1970-01-01T00:16:40.999Z" and epoch(stamp(1000.5)) == 1000.5
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    try:
        assert stamp(0.0) == "1970-01-01T00:00:00.000Z"
    finally:
        monkeypatch.undo()
        time.tzset()


EXIT_CODE = ReplicaRestart(RestartPolicyType.EXIT_CODE, 5, "main")
EXITED_1 = ({"name": "main", "state": "terminated", "exitCode": 1},)


def test_a_vanished_pod_is_judged_by_the_exit_code_its_record_kept():
    record = Replica("job-worker-0", "u1", "Failed", EXITED_1)
    assert observe(Slot("worker", 0, "job-worker-0", EXIT_CODE, record, None)).outcome == Outcome.FAILED
    retryable = Replica("job-worker-0", "u1", "Failed", ({"name": "main", "state": "terminated", "exitCode": 137},))
    assert observe(Slot("worker", 0, "job-worker-0", EXIT_CODE, retryable, None)).outcome is None


def test_a_retired_pod_still_seen_leaves_the_verdict_to_the_newer_pod_its_record_names():
    # The cache lags behind the status: the record already describes u2, which failed; u1, retired, is still seen.
    from controller.kinds.genericjob.kind import GENERICJOB

    retired = {"metadata": {"uid": "u1"}, "status": {"phase": "Failed"}}

    def seen(policy, record, job_restarts=0):
        obs = observe(Slot("worker", 0, "job-worker-0", policy, record, retired), job_restarts)
        assert obs.seen == Seen.RETIRED
        return obs.outcome

    newer = Replica("job-worker-0", "u2", "Failed", EXITED_1, last_restart_uid="u1")
    assert seen(EXIT_CODE, newer) == Outcome.FAILED  # its exit code is not retryable
    code_137 = ({"name": "main", "state": "terminated", "exitCode": 137},)
    assert seen(EXIT_CODE, Replica("job-worker-0", "u2", "Failed", code_137, last_restart_uid="u1")) is None
    assert seen(BUDGET_OF_ONE, newer) is None and seen(BUDGET_OF_ONE, newer, job_restarts=1) == Outcome.FAILED
    own_limit = GENERICJOB.restart_rule(make_job(("worker", 1, "OnFailure", 1)), "worker")
    assert seen(own_limit, newer) is None
    assert seen(own_limit, Replica("job-worker-0", "u2", "Failed", EXITED_1, 1, "u1")) == Outcome.FAILED
    assert seen(own_limit, Replica("job-worker-0", "", "Creating", (), 1, "u1")) is None  # awaiting its next pod


def test_a_debug_pods_replacement_waits_out_its_back_off_from_the_time_recorded():
    due = Replica("job-worker-0", "", "Creating", (), last_restart_uid="u1", last_restart_time=stamp(NOW - 5),
                  restart_streak=1)
    obs = observe(Slot("worker", 0, "job-worker-0", BUDGET_OF_ONE, due, None, debug=True))
    assert obs.seen == Seen.MISSING
    assert (debug_step(obs, stamp(NOW), NOW, BACKOFF).wake, debug_step(obs, stamp(NOW + 5), NOW + 5, BACKOFF).create) \
        == (5.0, True)


def test_a_debug_or_paused_pod_that_ran_ten_minutes_starts_its_streak_again():
    ran = {"metadata": {"uid": "u1"}, "status": {"phase": "Failed", "startTime": stamp(NOW - 700),
                                                 "containerStatuses": [
                                                     {"name": "main", "state": {"terminated": {"exitCode": 3}}}]}}
    record = Replica("job-worker-0", "u1", "Failed", EXITED_3, restart_streak=3)
    debug = debug_step(observe(Slot("worker", 0, "job-worker-0", BUDGET_OF_ONE, record, ran, debug=True)), stamp(NOW),
                       NOW, BACKOFF)
    assert debug.record.restart_streak == 1 and debug.restart_event.endswith("its next pod in 10s (back-off)")
    paused = pause(observe(Slot("worker", 0, "job-worker-0", BUDGET_OF_ONE, record, ran)), NOW, BACKOFF)
    assert paused.record.restart_streak == 1


def test_a_phase_change_and_a_force_delete_are_said_whole():
    from controller.jobs.decisions.actions import ForceDeletePod, phase_event

    assert [phase_event(p) for p in ("Pending", "Running", "Paused", "Resuming")] == [
        ("Normal", p, f"The job is {p.lower()}.") for p in ("Pending", "Running", "Paused", "Resuming")]
    assert phase_event("Failed", "Replica x failed.") == ("Warning", "Failed", "Replica x failed.")
    assert ForceDeletePod("job-worker-0", "u1", 42.4).event() == (
        "Warning", "ForceDeleted",
        "Force-deleted pod job-worker-0: still terminating 42s after its grace period ended (its node may be lost)")


def test_a_running_pod_lost_under_exit_code_is_a_retryable_failure_counted_at_now():
    # No container exited, so no exit code says the failure is not retryable: counted and replaced after its
    # back-off while the job's budget lasts, failed for good once it is spent.
    exit_code = ReplicaRestart(RestartPolicyType.EXIT_CODE, 1, "main")
    obs = observe(gone("Running", policy=exit_code))
    assert (obs.seen, obs.outcome, obs.record.phase) == (Seen.GONE, None, "Running")
    decided = step(obs, stamp(NOW), NOW, BACKOFF)
    assert (decided.record.restart_count, decided.record.last_restart_time, decided.record.last_restart_uid) == (
        1, stamp(NOW), "u1")
    assert (decided.create, decided.wake) == (False, 10.0)
    assert decided.restart_event == ("Restarting replica job-worker-0 (restart 1 of 1 of the job): pod was deleted; "
                                     "its next pod in 10s (back-off)")
    spent = observe(gone("Running", policy=exit_code), job_restarts=1)
    assert (spent.outcome, spent.record.phase) == (Outcome.FAILED, "Failed")
