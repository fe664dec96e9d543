"""Engine policies a kind switches on: restart back-off (both kinds), an active deadline, and a
restart budget shared by the whole job. Planned with GenericJob, and with a kind that differs from
it only in the policy under test."""

from __future__ import annotations

from controller.jobs.decisions import plan as engine
from controller.jobs.decisions.backoff import RestartBackoff
from controller.kinds.genericjob.kind import GENERICJOB, GenericJobKind

from .plan_support import Pods, at, make_job, make_pod


def plan(job, status, pods: Pods, now: str, *, kind=GENERICJOB, backoff: float = 0.0):
    result = engine.plan(kind, job, status, pods.list(), now, restart_backoff=RestartBackoff(backoff))
    pods.apply(result)
    return result


def record(result, name: str = "job-worker-0") -> dict:
    return next(r for t in result.status["tasks"] for r in t["replicas"] if r["name"] == name)


# --- back-off ------------------------------------------------------------------------------------


def test_back_off_doubles_to_five_minutes_and_a_long_run_resets_it():
    backoff = RestartBackoff(10.0)
    assert [backoff.delay(n) for n in (1, 2, 3, 4, 5, 6, 10)] == [10, 20, 40, 80, 160, 300, 300]
    assert RestartBackoff(0).delay(3) == 0
    quick = {"status": {"startTime": at(0)}}
    assert backoff.streak(2, quick, now=at_epoch(30)) == 3
    assert backoff.streak(4, {"status": {"startTime": at(0)}}, now=at_epoch(600)) == 1
    assert backoff.streak(4, None, now=at_epoch(600)) == 5  # a lost pod of unknown age counts as quick


def at_epoch(second: int) -> float:
    from controller.jobs.decisions.backoff import epoch

    return epoch(at(second))


def test_a_replacement_waits_out_the_back_off_and_the_plan_wakes_for_it():
    job = make_job(("worker", 1, "OnFailure", 5))
    pods = Pods()
    status = plan(job, {}, pods, at(0), backoff=10).status
    pods.set_all("Failed")
    failed = plan(job, status, pods, at(20), backoff=10)  # counted, the pod deleted
    assert (record(failed)["restartCount"], record(failed)["lastRestartTime"], record(failed)["restartStreak"]) == (
        1, "2024-01-01T00:00:20.000Z", 1)  # milliseconds: back-off waits may be shorter than a second
    assert "next pod in 10s" in failed.events[0].message
    early = plan(job, failed.status, pods, at(25), backoff=10)  # the pod is gone; 5 s of back-off left
    assert early.create == [] and early.requeue_after == 5
    due = plan(job, early.status, pods, at(30), backoff=10)
    assert [c.replica_type for c in due.create] == ["worker"] and due.requeue_after is None
    # It fails again at once: the second quick restart in a row waits twice as long.
    pods.set_all("Failed")
    again = plan(job, due.status, pods, at(31), backoff=10)
    assert record(again)["restartStreak"] == 2
    assert plan(job, again.status, pods, at(40), backoff=10).requeue_after == 11


def test_a_replica_that_ran_ten_minutes_starts_its_back_off_again():
    job = make_job(("worker", 1, "OnFailure", 5))
    stored = {"phase": "Running", "startTime": at(0), "tasks": [{"type": "worker", "replicas": [
        {"name": "job-worker-0", "uid": "u1", "phase": "Running", "restartCount": 3, "lastRestartUid": "u0",
         "lastRestartTime": at(0), "restartStreak": 4}]}]}
    pod = make_pod("worker", 0, "u1", "Failed")
    pod["status"]["startTime"] = at(0)
    result = plan(job, stored, Pods(pod), "2024-01-01T00:11:00Z", backoff=10)
    assert record(result)["restartStreak"] == 1 and "next pod in 10s" in result.events[0].message


def test_without_back_off_a_record_keeps_its_old_shape_until_a_restart():
    job = make_job(("worker", 1))
    result = plan(job, {}, Pods(), at(0))
    assert "lastRestartTime" not in record(result) and "restartStreak" not in record(result)


# --- deadline -----------------------------------------------------------------------------------


class DeadlineKind(GenericJobKind):
    def active_deadline(self, job) -> float | None:
        return 30.0


def test_an_active_deadline_wakes_the_job_and_then_fails_it_deleting_running_pods():
    kind, job, pods = DeadlineKind(), make_job(("worker", 2)), Pods()
    first = plan(job, {}, pods, at(0), kind=kind)
    assert first.status["startTime"] == at(0) and first.requeue_after == 30
    pods.set_all("Running")
    running = plan(job, first.status, pods, at(10), kind=kind)
    assert running.status["phase"] == "Running" and running.requeue_after == 20
    late = plan(job, running.status, pods, at(30), kind=kind)
    assert late.status["phase"] == "Failed" and late.terminal
    failed = next(c for c in late.status["conditions"] if c["type"] == "Failed")
    assert (failed["status"], failed["reason"]) == ("True", "DeadlineExceeded")
    assert sorted(d.name for d in late.delete) == ["job-worker-0", "job-worker-1"]  # cleanUpPolicy None, even so
    assert late.events[0] == ("Warning", "Failed", failed["message"])


# --- a job-wide restart budget ----------------------------------------------------------------------


class JobBudget:
    """A restart rule with one budget for the whole job (as TensorFlowTrainingJob's backoffLimit)."""

    limit = 1
    counts_lost_pods = True

    def can_restart(self, restart_count: int, job_restarts: int = 0) -> bool:
        return job_restarts < self.limit

    def replaces(self, phase, restart_count, containers, job_restarts: int = 0) -> bool:
        return phase == "Failed" and self.can_restart(restart_count, job_restarts)

    def why_final(self, restart_count, containers, job_restarts: int = 0) -> tuple[bool, str]:
        return True, f"after {job_restarts} of {self.limit} restarts of the job"


class BudgetKind(GenericJobKind):
    def restart_rule(self, job, replica_type):
        return JobBudget()


def test_two_replicas_failing_at_once_draw_on_one_budget():
    kind, job, pods = BudgetKind(), make_job(("worker", 2)), Pods()
    status = plan(job, {}, pods, at(0), kind=kind).status
    pods.set_all("Failed")
    result = plan(job, status, pods, at(5), kind=kind)
    # The first failure takes the job's only restart; the second has failed for good, and so has the job.
    assert result.status["phase"] == "Failed" and result.status["backoffCount"] == 0
    assert result.events[-1].reason == "Failed" and '"worker": [1]' in result.events[-1].message


def test_one_failure_within_the_budget_restarts_and_the_next_fails_the_job():
    kind, job, pods = BudgetKind(), make_job(("worker", 2)), Pods()
    status = plan(job, {}, pods, at(0), kind=kind).status
    pods.set("worker", 0, "Failed")
    restarted = plan(job, status, pods, at(5), kind=kind)
    assert restarted.status["phase"] != "Failed" and restarted.status["backoffCount"] == 1
    status = plan(job, restarted.status, pods, at(6), kind=kind).status  # the replacement is made
    pods.set("worker", 1, "Failed")
    assert plan(job, status, pods, at(7), kind=kind).status["phase"] == "Failed"
