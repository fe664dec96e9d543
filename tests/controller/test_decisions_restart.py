"""Per-replica restart decisions (controller/jobs/decisions/restart.py) the planning tests do not reach: which
observations draw on a job-wide restart budget in the same reconcile. Written against the mutants that survived the
other tests (tests/mutation, RELIABILITY.md): each test names the behaviour a surviving mutant broke."""

from __future__ import annotations

import pytest

from controller.jobs.decisions.replica_records import Replica
from controller.jobs.decisions.restart import Observation, Seen, Slot, observe_all, step, will_count
from controller.jobs.schema.api import Outcome
from controller.jobs.training.restart import ReplicaRestart, RestartPolicyType

ON_FAILURE = ReplicaRestart(RestartPolicyType.ON_FAILURE, 1, "main")
NEVER = ReplicaRestart(RestartPolicyType.NEVER, 1, "main")


def observation(seen: Seen, phase: str, policy=ON_FAILURE, outcome: Outcome | None = None, containers=(),
                pod: dict | None = None) -> Observation:
    record = Replica("job-worker-0", "u1", phase, tuple(containers))
    return Observation(Slot("worker", 0, "job-worker-0", policy, record, pod), seen, record, outcome)


@pytest.mark.parametrize(("phase", "policy", "counts"), [
    ("Running", ON_FAILURE, True),   # a lost pod is a failure, replaced and counted
    ("Running", NEVER, False),       # under Never it is recreated uncounted
    ("Failed", NEVER, True),         # (a finished pod that vanished stands for itself)
    ("Succeeded", ON_FAILURE, True),
])
def test_a_pod_gone_behind_the_controllers_back_counts_as_its_policy_says(phase, policy, counts):
    assert will_count(observation(Seen.GONE, phase, policy)) is counts


def test_a_replica_decided_for_good_or_awaiting_its_pod_counts_nothing():
    assert will_count(observation(Seen.GONE, "Failed", outcome=Outcome.FAILED)) is False
    assert will_count(observation(Seen.MISSING, "Failed")) is False
    assert will_count(observation(Seen.RETIRED, "Failed")) is False
    assert will_count(observation(Seen.CURRENT, "Running")) is False
    assert will_count(observation(Seen.CURRENT, "Failed")) is True


def test_two_pods_lost_at_once_draw_on_a_budget_of_one_in_turn():
    slots = [Slot("worker", rank, f"job-worker-{rank}", ON_FAILURE,
                  Replica(f"job-worker-{rank}", f"u{rank}", "Running"), None) for rank in (0, 1)]
    first, second = observe_all(slots, 0)
    assert (first.seen, first.outcome) == (Seen.GONE, None)
    assert (second.seen, second.outcome, second.record.phase) == (Seen.GONE, Outcome.FAILED, "Failed")


def test_a_finished_pod_that_vanished_is_restarted_for_how_it_ended_not_as_a_lost_pod():
    exited = [{"name": "main", "state": "terminated", "exitCode": 3}]
    decided = step(observation(Seen.GONE, "Failed", containers=exited))
    assert decided.restart_event == ("Restarting replica job-worker-0 (restart 1 of 1 of the job): "
                                     "pod exited with code 3")
    assert decided.create and decided.record.restart_count == 1


def test_a_restart_without_an_exit_code_says_how_the_pod_ended():
    pod = {"metadata": {"uid": "u1"}, "status": {"phase": "Failed", "reason": "Evicted"}}
    no_code = [{"name": "main", "state": "terminated", "exitCode": None}]
    decided = step(observation(Seen.CURRENT, "Failed", containers=no_code, pod=pod))
    assert decided.restart_event == "Restarting replica job-worker-0 (restart 1 of 1 of the job): pod failed: Evicted"


def test_a_pod_lost_while_running_is_counted_and_replaced_after_a_back_off_under_a_second():
    from controller.jobs.decisions.backoff import RestartBackoff, stamp

    decided = step(observation(Seen.GONE, "Running"), stamp(1000.0), 1000.0, RestartBackoff(0.5))
    assert decided.restart_event == ("Restarting replica job-worker-0 (restart 1 of 1 of the job): pod was deleted; "
                                     "its next pod in 0.5s (back-off)")
    assert (decided.create, decided.wake, decided.record.restart_count) == (False, 0.5, 1)


def test_a_restart_without_a_limit_or_a_reason_says_neither():
    # (A training kind's budget is the job's: "restart K of N of the job" counts backoffCount, the spec's
    # "Messages count what they say".)
    unlimited = ReplicaRestart(RestartPolicyType.ON_FAILURE, None, "main")
    pod = {"metadata": {"uid": "u1"}, "status": {"phase": "Failed"}}
    decided = step(observation(Seen.CURRENT, "Failed", unlimited, pod=pod))
    assert decided.restart_event == "Restarting replica job-worker-0 (restart 1 of the job): pod failed"


def test_pods_lost_at_once_draw_on_a_budget_of_two_one_restart_each():
    budget = ReplicaRestart(RestartPolicyType.ON_FAILURE, 2, "main")
    slots = [Slot("worker", rank, f"job-worker-{rank}", budget, Replica(f"job-worker-{rank}", f"u{rank}", "Running"),
                  None) for rank in (0, 1, 2)]
    assert [o.outcome for o in observe_all(slots, 0)] == [None, None, Outcome.FAILED]


def test_a_restart_names_the_first_failing_exit_code_else_zero():
    always = ReplicaRestart(RestartPolicyType.ALWAYS, None, "main")
    pod = {"metadata": {"uid": "u1"}, "status": {"phase": "Failed"}}
    codes = [{"name": "a", "state": "terminated", "exitCode": 0}, {"name": "b", "state": "terminated", "exitCode": 2}]
    assert step(observation(Seen.CURRENT, "Failed", always, containers=codes, pod=pod)).restart_event.endswith(
        "pod exited with code 2")
    succeeded = [{"name": "a", "state": "terminated", "exitCode": 0}]
    assert step(observation(Seen.CURRENT, "Succeeded", always, containers=succeeded, pod=pod)).restart_event.endswith(
        "pod exited with code 0")


def test_pause_does_not_delete_again_a_pod_already_terminating():
    from controller.jobs.decisions.restart import pause

    going = {"metadata": {"uid": "u1", "deletionTimestamp": "2024-01-01T00:00:00Z"}, "status": {"phase": "Running"}}
    assert pause(observation(Seen.CURRENT, "Running", pod=going)).delete is None
    running = {"metadata": {"uid": "u1"}, "status": {"phase": "Running"}}
    assert pause(observation(Seen.CURRENT, "Running", pod=running)).delete == "u1"


def test_a_restart_counts_the_jobs_restarts_so_far_against_the_jobs_budget():
    # Two restarts of the job before this one (other replicas', removed ranks'): this one is the third.
    budget = ReplicaRestart(RestartPolicyType.ON_FAILURE, 5, "main")
    pod = {"metadata": {"uid": "u1"}, "status": {"phase": "Failed"}}
    obs = observation(Seen.CURRENT, "Failed", budget, pod=pod)
    obs.job_restarts = 2
    assert step(obs).restart_event == "Restarting replica job-worker-0 (restart 3 of 5 of the job): pod failed"


class OwnLimit:
    """A restart rule that does not say how its restarts read (no restart_text): its own count against its limit."""

    def __init__(self, limit):
        self.limit = limit

    def __getattr__(self, name):
        if name == "restart_text":
            raise AttributeError(name)
        return getattr(ReplicaRestart(RestartPolicyType.ON_FAILURE, self.limit, "main"), name)


@pytest.mark.parametrize(("limit", "counted"), [(4, "restart 1 of 4"), (None, "restart 1")])
def test_a_rule_that_does_not_say_counts_the_replicas_own_restarts_against_its_limit(limit, counted):
    pod = {"metadata": {"uid": "u1"}, "status": {"phase": "Failed"}}
    obs = observation(Seen.CURRENT, "Failed", OwnLimit(limit), pod=pod)
    obs.job_restarts = 2
    assert step(obs).restart_event == f"Restarting replica job-worker-0 ({counted}): pod failed"


# Debug pods decide nothing and count nothing (the spec's "Live jobs, settled further"; Slot.debug).

def debug_observation(seen: Seen, phase: str, pod: dict | None, policy=ON_FAILURE, streak: int = 0) -> Observation:
    exited = ({"name": "main", "state": "terminated", "exitCode": 3},) if phase == "Failed" else ()
    record = Replica("job-worker-0", "u1", phase, exited, restart_streak=streak)
    slot = Slot("worker", 0, "job-worker-0", policy, record, pod, debug=True)
    return Observation(slot, seen, record, None)


def failed_pod(code: int = 3, terminating: bool = False) -> dict:
    metadata = {"uid": "u1", **({"deletionTimestamp": "2024-01-01T00:00:00Z"} if terminating else {})}
    return {"metadata": metadata, "status": {"phase": "Failed", "containerStatuses": [
        {"name": "main", "state": {"terminated": {"exitCode": code}}}]}}


def test_a_debug_pod_that_ended_draws_on_no_budget():
    assert will_count(debug_observation(Seen.CURRENT, "Failed", failed_pod())) is False
    assert will_count(debug_observation(Seen.GONE, "Running", None)) is False


def test_a_debug_pod_lost_is_judged_nothing_even_where_a_lost_workload_pod_would_fail_the_job():
    from controller.jobs.decisions.restart import observe

    spent = ReplicaRestart(RestartPolicyType.ON_FAILURE, 0, "main")  # no restart granted: a lost pod is final
    record = Replica("job-worker-0", "u1", "Running")
    lost = observe(Slot("worker", 0, "job-worker-0", spent, record, None, debug=True))
    assert (lost.seen, lost.outcome, lost.record) == (Seen.GONE, None, record)
    workload = observe(Slot("worker", 0, "job-worker-0", spent, record, None))
    assert workload.outcome == Outcome.FAILED


def test_pausing_counts_a_workload_failure_saying_how_it_ended_or_that_its_pod_was_lost():
    from controller.jobs.decisions.restart import pause

    ended = pause(observation(Seen.CURRENT, "Failed", containers=[{"name": "main", "state": "terminated",
                                                                   "exitCode": 3}], pod=failed_pod()))
    assert ended.restart_event == ("Restarting replica job-worker-0 (restart 1 of 1 of the job): pod exited with "
                                   "code 3; its next pod when the job resumes")
    lost = pause(observation(Seen.GONE, "Running"))
    assert lost.restart_event.endswith("(restart 1 of 1 of the job): pod was deleted; its next pod when the job "
                                       "resumes")


def test_pausing_a_debug_pod_counts_nothing_and_forgets_its_quick_ends_but_a_workload_pod_keeps_them():
    from controller.jobs.decisions.restart import pause

    paused = pause(debug_observation(Seen.CURRENT, "Running", {"metadata": {"uid": "u1"}, "status": {}}, streak=3))
    assert (paused.record.restart_count, paused.record.restart_streak, paused.restart_event) == (0, 0, None)
    assert paused.delete == "u1" and paused.record.phase == "Deleted"
    running = Replica("job-worker-0", "u1", "Running", restart_streak=3)
    workload = pause(Observation(Slot("worker", 0, "job-worker-0", ON_FAILURE, running,
                                      {"metadata": {"uid": "u1"}, "status": {}}), Seen.CURRENT, running, None))
    assert workload.record.restart_streak == 3


def test_a_debug_pod_that_ended_is_replaced_uncounted_after_its_back_off_saying_how_it_ended():
    from controller.jobs.decisions.backoff import RestartBackoff, stamp
    from controller.jobs.decisions.restart import debug_step

    decided = debug_step(debug_observation(Seen.CURRENT, "Failed", failed_pod(), streak=1), stamp(1000.0), 1000.0,
                         RestartBackoff(0.5))
    assert decided.restart_event == ("Recreating debug pod of replica job-worker-0 (debug mode: no restart "
                                     "counted): pod exited with code 3; its next pod in 1s (back-off)")
    assert (decided.record.restart_count, decided.record.restart_streak) == (0, 2)
    assert decided.record.last_restart_time == stamp(1000.0) and decided.delete == "u1"


def test_a_debug_pod_that_ended_as_debug_mode_was_turned_off_is_replaced_at_once():
    from controller.jobs.decisions.backoff import stamp
    from controller.jobs.decisions.restart import debug_step

    decided = debug_step(debug_observation(Seen.CURRENT, "Failed", failed_pod(), streak=4), stamp(1000.0), 1000.0)
    assert decided.restart_event == ("Recreating debug pod of replica job-worker-0 (debug mode: no restart "
                                     "counted): pod exited with code 3")
    assert (decided.record.restart_streak, decided.record.last_restart_time) == (0, "")


def test_a_debug_pod_deleted_by_a_person_is_not_deleted_again_and_a_lost_one_says_so():
    from controller.jobs.decisions.backoff import RestartBackoff, stamp
    from controller.jobs.decisions.restart import debug_step

    deleted = debug_step(debug_observation(Seen.CURRENT, "Failed", failed_pod(143, terminating=True)),
                         stamp(1000.0), 1000.0, RestartBackoff(0.5))
    assert deleted.delete is None and ": pod was deleted; its next pod in 0.5s (back-off)" in deleted.restart_event
    lost = debug_step(debug_observation(Seen.GONE, "Running", None), stamp(1000.0), 1000.0, RestartBackoff(0.5))
    assert lost.restart_event.endswith("(debug mode: no restart counted): pod was deleted; its next pod in 0.5s "
                                       "(back-off)")
    assert lost.record.restart_count == 0 and not lost.create


def test_a_replica_outside_the_group_is_judged_after_the_groups_one_restart():
    # A kind whose restart group holds some of its types (the engine's contract for any kind; MPIJob's holds all):
    # two workers of the group failing count one restart of a budget of one, and the ps failing in the same
    # reconcile, outside the group, finds that restart spent: it has failed for good.
    def failed(replica_type: str, rank: int) -> Slot:
        name = f"job-{replica_type}-{rank}"
        return Slot(replica_type, rank, name, ON_FAILURE, Replica(name, f"u-{name}", "Failed"), None)

    observed = observe_all([failed("worker", 0), failed("worker", 1), failed("ps", 0)], 0, together={"worker"})
    assert [o.job_restarts for o in observed] == [0, 0, 1]
    assert [o.outcome for o in observed] == [None, None, Outcome.FAILED]
    # Without the group each draws on the budget in turn.
    assert [o.outcome for o in observe_all([failed("worker", 0), failed("worker", 1), failed("ps", 0)], 0)] == [
        None, Outcome.FAILED, Outcome.FAILED]
