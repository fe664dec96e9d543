"""Clean-up of a finished job follows its current `cleanUpPolicy` (the spec's "Live jobs, settled further"):
an edit of the policy deletes what the new policy says, never creates a pod, and changes nothing else."""

from __future__ import annotations

from .plan_support import Pods, at, make_job, plan, record, step

UNCHANGED = ("phase", "conditions", "completionTime", "startTime", "backoffCount", "reason")


def failed_with_a_peer_running(cleanup: str) -> tuple[dict, Pods]:
    """worker-1 failed (no restarts), worker-0 still runs: the job is Failed under `cleanup`."""
    job = make_job(("worker", 2, "Never"), cleanup=cleanup)
    pods = Pods()
    status = step(job, {}, pods, at(0)).status
    pods.set_all("Running")
    status = step(job, status, pods, at(1)).status
    pods.set("worker", 1, "Failed")
    status = step(job, status, pods, at(2)).status
    assert status["phase"] == "Failed"
    return {**status, "observedGeneration": 1}, pods


def edited(cleanup: str, generation: int = 2):
    return make_job(("worker", 2, "Never"), cleanup=cleanup).model_copy(update={"generation": generation})


def test_editing_a_finished_jobs_policy_to_all_deletes_its_pods_and_nothing_else_changes():
    status, pods = failed_with_a_peer_running("None")
    assert pods.get("worker", 0)["status"]["phase"] == "Running"  # None kept the peer running
    result = plan(edited("All"), status, pods.list(), at(9))
    assert sorted(d.name for d in result.delete) == ["job-worker-0", "job-worker-1"] and result.create == []
    assert result.terminal
    for key in UNCHANGED:
        assert result.status.get(key) == status.get(key), key
    assert [record(result.status, "worker", r)["phase"] for r in (0, 1)] == ["Deleted", "Deleted"]
    assert result.status["cleanUpPolicy"] == "All"
    assert ("Normal", "CleanUpPolicyApplied", "the job has finished; its clean-up now follows cleanUpPolicy All "
            "(was None); other spec changes are ignored") in result.events
    assert ("Normal", "SpecChangeIgnored", "the job has finished; spec changes are ignored") not in result.events


def test_a_policy_edit_is_applied_once_and_then_settles():
    status, pods = failed_with_a_peer_running("None")
    job = edited("Unfinished")
    first = plan(job, status, pods.list(), at(9))
    assert [d.name for d in first.delete] == ["job-worker-0"]  # the failed pod is kept for its logs
    pods.apply(first, graceful=True)
    again = plan(job, {**first.status, "observedGeneration": 2}, pods.list(), at(10))
    assert again.delete == [] and again.events == [] and again.status == {**first.status, "observedGeneration": 2}
    assert record(again.status, "worker", 0)["phase"] == "Deleted"
    assert record(again.status, "worker", 1)["phase"] == "Failed"


def test_weakening_the_policy_never_brings_back_a_deleted_record_or_a_pod():
    status, pods = failed_with_a_peer_running("All")
    pods.apply(plan(make_job(("worker", 2, "Never"), cleanup="All"), status, pods.list(), at(3)), graceful=True)
    result = plan(edited("None"), status, pods.list(), at(9))  # the pods are still terminating
    assert result.delete == [] and result.create == []
    assert [record(result.status, "worker", r)["phase"] for r in (0, 1)] == ["Deleted", "Deleted"]


def test_any_other_edit_of_a_finished_job_is_ignored_as_before():
    status, pods = failed_with_a_peer_running("None")
    result = plan(make_job(("worker", 1, "Never"), cleanup="None").model_copy(update={"generation": 2}), status,
                  pods.list(), at(9))
    assert result.delete == [] and result.status == status
    assert result.events == [("Normal", "SpecChangeIgnored", "the job has finished; spec changes are ignored")]
