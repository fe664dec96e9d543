"""Why a job failed (controller/jobs/decisions/cause.py), on observations made by hand: the cases the planning tests of
test_failure_cause.py do not reach. Written against the mutants that survived the other tests (tests/mutation,
RELIABILITY.md): each test names the behaviour a surviving mutant broke."""

from __future__ import annotations

import pytest

from controller.jobs.decisions.cause import explained, how
from controller.jobs.decisions.replica_records import Replica
from controller.jobs.decisions.restart import Observation, Seen, Slot
from controller.jobs.schema.api import JobPhase, Outcome, Verdict
from controller.jobs.training.restart import ReplicaRestart, RestartPolicyType

NEVER = ReplicaRestart(RestartPolicyType.NEVER, None, "main")


def observation(seen: Seen, containers=(), pod: dict | None = None, phase: str = "Failed",
                outcome: Outcome | None = Outcome.FAILED) -> Observation:
    record = Replica("job-worker-0", "uid-1", phase, tuple(containers))
    slot = Slot("worker", 0, "job-worker-0", NEVER, record, pod)
    return Observation(slot, seen, record, outcome)


def pod(reason: str = "", *statuses: dict) -> dict:
    return {"metadata": {"uid": "uid-1"}, "status": {"phase": "Failed", "reason": reason,
                                                     "containerStatuses": list(statuses)}}


def terminated(name: str, code: int, reason: str) -> dict:
    return {"name": name, "state": {"terminated": {"exitCode": code, "reason": reason}}}


def test_a_failure_without_a_replica_observed_is_a_replica_failure_and_its_message_is_kept():
    verdict = Verdict(JobPhase.FAILED, ("worker", 0), "Replica job-worker-0 has failed.", replicas=(("worker", 0),))
    assert explained(verdict, []) == Verdict(JobPhase.FAILED, ("worker", 0), "Replica job-worker-0 has failed.",
                                             reason="ReplicaFailed", replicas=(("worker", 0),))


def test_only_a_replica_failed_for_good_is_named_as_the_cause():
    verdict = Verdict(JobPhase.FAILED, ("worker", 0), "Replica job-worker-0 has failed.", replicas=(("worker", 0),))
    running = observation(Seen.CURRENT, pod=pod(), phase="Running", outcome=None)
    assert explained(verdict, [running]) == Verdict(JobPhase.FAILED, ("worker", 0), "Replica job-worker-0 has failed.",
                                                    reason="ReplicaFailed", replicas=(("worker", 0),))


def test_a_failed_pod_with_no_exit_code_and_no_reason_says_only_that():
    assert how(observation(Seen.CURRENT, pod=pod())) == "without an exit code"


def test_a_lost_pod_says_it_was_lost():
    assert how(observation(Seen.GONE)) == "without an exit code (its pod was lost: deleted, or its node gone)"


def test_the_reason_of_a_pod_already_retired_is_not_the_replicas():
    assert how(observation(Seen.RETIRED, pod=pod("Evicted"))) == "without an exit code"


@pytest.mark.parametrize("containers, seen, expected", [
    pytest.param([("main", 0)], pod("Evicted"), "with exit code 0 (Evicted)", id="exit 0 in a failed pod"),
    pytest.param([("sidecar", 0), ("main", 137)],
                 pod("", terminated("sidecar", 0, "Completed"), terminated("main", 137, "OOMKilled")),
                 "with exit code 137 (OOMKilled)", id="the failed container's reason, not the first's"),
    pytest.param([("main", 2)], {"metadata": {"uid": "uid-1"}, "status": {"phase": "Failed", "reason": "Evicted"}},
                 "with exit code 2 (Evicted)", id="the recorded code when the pod has no container statuses"),
    pytest.param([("main", None)], pod("Evicted"), "without an exit code (Evicted)", id="terminated without a code"),
    pytest.param([("main", 0), ("sidecar", 0)],
                 pod("", terminated("main", 0, "Completed"), terminated("sidecar", 0, "Done")),
                 "with exit code 0 (Completed)", id="none failed: the first that exited"),
])
def test_how_a_replica_ended_names_the_exit_code_and_reason(containers, seen, expected):
    recorded = [{"name": name, "state": "terminated", "exitCode": code} for name, code in containers]
    assert how(observation(Seen.CURRENT, recorded, seen)) == expected


def test_the_recorded_exit_code_is_given_when_the_pod_or_its_statuses_say_nothing_more():
    containers = [{"name": "main", "state": "terminated", "exitCode": 2}]
    assert how(observation(Seen.GONE, containers)) == "with exit code 2"
    for seen in ({"metadata": {"uid": "uid-1"}}, pod("", {"name": "main"}), pod("", {"name": "main", "state": {}}),
                 pod("", {"name": "main", "state": {"running": {}}})):
        assert how(observation(Seen.CURRENT, containers, seen)) == "with exit code 2"


def test_a_failure_after_restarts_granted_in_the_same_reconcile_counts_them_all():
    # Three workers fail at once under a job budget of 2 (OnFailure, backoffLimit 2): the first two are restarted
    # (the job's restarts 1 and 2), the third fails the job "after 2 of 2", as backoffCount will say.
    from controller.jobs.decisions.restart import observe_all

    budget = ReplicaRestart(RestartPolicyType.ON_FAILURE, 2, "main")
    seen = {"metadata": {"uid": "uid-1"}, "status": {"phase": "Failed"}}
    slots = [Slot("worker", rank, f"job-worker-{rank}", budget, Replica(f"job-worker-{rank}", "uid-1", "Failed"),
                  seen) for rank in range(3)]
    observations = observe_all(slots, 0)
    assert [o.outcome for o in observations] == [None, None, Outcome.FAILED]
    verdict = Verdict(JobPhase.FAILED, ("worker", 2), "Replica job-worker-2 has failed.", replicas=(("worker", 2),))
    assert explained(verdict, observations).message == (
        "Replica job-worker-2 has failed: replica worker-2 failed without an exit code after 2 of 2 restarts of the "
        "job (runPolicy.backoffLimit)")


def test_a_failure_between_two_members_of_a_restart_group_counts_the_groups_one_restart():
    # A kind whose restart group holds workers and a launcher but not the ps, its ps listed between them (the
    # engine's contract for any kind; MPIJob's group holds all its types): under a job budget of 1, worker-0's
    # failure restarts the group, the ps finds that restart spent and fails the job, and the launcher failing too
    # restarts with the group, judged against the budget before it drew. The job failed "after 1 of 1": the last
    # observation's restart is the group's one, already counted.
    from controller.jobs.decisions.restart import observe_all

    budget = ReplicaRestart(RestartPolicyType.ON_FAILURE, 1, "main")

    def failed(replica_type: str) -> Slot:
        name = f"job-{replica_type}-0"
        return Slot(replica_type, 0, name, budget, Replica(name, f"u-{name}", "Failed"),
                    {"metadata": {"uid": f"u-{name}"}, "status": {"phase": "Failed"}})

    observations = observe_all([failed("worker"), failed("ps"), failed("launcher")], 0,
                               together={"worker", "launcher"})
    assert [o.outcome for o in observations] == [None, Outcome.FAILED, None]
    verdict = Verdict(JobPhase.FAILED, ("ps", 0), "Replica job-ps-0 has failed.", replicas=(("ps", 0),))
    assert explained(verdict, observations).message == (
        "Replica job-ps-0 has failed: replica ps-0 failed without an exit code after 1 of 1 restarts of the job "
        "(runPolicy.backoffLimit)")
