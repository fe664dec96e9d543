"""One reconcile's plan (controller/jobs/decisions/plan.py) of a GenericJob in the cases the planning tests do
not reach: run-mode and template changes, finished jobs, refused writes. Written against the mutants that survived
the other tests (tests/mutation, RELIABILITY.md): each test names the behaviour a surviving mutant broke. Its
neighbours test_decisions_plan_{deadlines,invalid,scale_down}.py are written the same way."""

from __future__ import annotations

import pytest

from controller.jobs.children.pods import mode_annotation
from controller.jobs.decisions import plan as engine
from controller.jobs.decisions.slots import pick

from .decisions_plan_support import at, generic


def failed_single_worker():
    """A one-worker job (restart policy Never) whose worker failed at second 1: the plan support module, the
    pods, the job and its finished status."""
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 1, "Never"))
    status = ps.step(job, {}, pods, at(0)).status
    pods.set("worker", 0, "Failed")
    return ps, pods, job, ps.plan(job, status, pods.list(), at(1)).status


def test_a_job_created_paused_says_it_has_neither_completed_nor_failed():
    ps = generic()
    job = ps.make_job(("worker", 1), pause=True)
    conditions = {c["type"]: c["status"] for c in ps.plan(job, {}, [], at(0)).status["conditions"]}
    assert (conditions["Completed"], conditions["Failed"], conditions["Paused"]) == ("False", "False", "True")


def test_a_template_change_is_announced_in_the_plan_and_recorded():
    ps = generic()
    job = ps.make_job(("worker", 1))
    first = ps.plan(job, {}, [], at(0))
    hashes = first.status["templateHashes"]
    assert set(hashes) == {"worker"}
    edited = ps.plan(job, {**first.status, "templateHashes": {"worker": "an older hash"}}, [], at(1))
    assert [e.reason for e in edited.events if e.reason == "TemplateChanged"] == ["TemplateChanged"]
    assert edited.status["templateHashes"] == hashes


@pytest.mark.parametrize(("replicas", "shown"), [
    (2, "job-worker-0, job-worker-1"),
    (5, "job-worker-0, job-worker-1, job-worker-2, job-worker-3, job-worker-4"),
    (7, "job-worker-0, job-worker-1, job-worker-2, job-worker-3, job-worker-4 and 2 more"),
])
def test_turning_debug_mode_on_replaces_the_running_pods_and_says_so(replicas, shown):
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", replicas))
    status = ps.step(job, {}, pods, at(0)).status
    pods.set_all("Running")
    for pod in pods.list():  # made in the workload's mode, as the controller's pods say
        pod["metadata"]["annotations"] = {mode_annotation(ps.GENERICJOB.api): "immediate"}
    status = ps.step(job, status, pods, at(1)).status
    debug = ps.make_job(("worker", replicas), debug=True)
    switched = ps.plan(debug, status, pods.list(), at(2))
    assert sorted(d.name for d in switched.delete) == sorted(f"job-worker-{rank}" for rank in range(replicas))
    assert [(e.type, e.message) for e in switched.events if e.reason == "RunModeChanged"] == [
        ("Normal", f"Debug mode turned on: replacing the pods of {shown}")]


def test_a_finished_job_records_the_clean_up_policy_it_finished_with():
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 1, "Never"), cleanup="All")
    status = ps.step(job, {}, pods, at(0)).status
    pods.set("worker", 0, "Failed")
    finished = ps.plan(job, status, pods.list(), at(1))
    assert finished.terminal and finished.status["cleanUpPolicy"] == "All"


def test_among_look_alike_pods_the_recorded_one_is_the_replicas_then_one_not_retired():
    ps = generic()
    from controller.jobs.decisions.replica_records import Replica

    retired, recorded, other = (ps.make_pod("worker", 0, uid) for uid in ("u-old", "u-rec", "u-new"))
    record = Replica("job-worker-0", "u-rec", "Running", last_restart_uid="u-old")
    assert pick([retired, other, recorded], record) is recorded
    assert pick([retired, other], Replica("job-worker-0", "", "Creating", last_restart_uid="u-old")) is other
    assert pick([retired], record) is retired


def test_a_refused_write_does_not_change_the_conditions_of_a_job_that_finishes():
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 1, "Never"))
    status = ps.step(job, {}, pods, at(0)).status
    pods.set("worker", 0, "Failed")
    finished = engine.plan(ps.GENERICJOB, job, status, pods.list(), at(1),
                           write_failure=engine.WriteFailure("FailedCreate", "pods is forbidden"))
    failure = next(c for c in finished.status["conditions"] if c["type"] == "ReplicaFailure")
    assert finished.terminal and failure["reason"] != "FailedCreate"


def test_a_finished_job_says_once_per_generation_that_spec_changes_are_ignored():
    ps, pods, job, finished = failed_single_worker()
    seen = ps.plan(job, {**finished, "observedGeneration": job.generation}, pods.list(), at(2))
    assert not [e for e in seen.events if e.reason == "SpecChangeIgnored"]
    edited = ps.plan(job, {**finished, "observedGeneration": job.generation - 1}, pods.list(), at(2))
    assert [e.reason for e in edited.events if e.reason == "SpecChangeIgnored"] == ["SpecChangeIgnored"]


def test_a_finishing_job_keeps_the_conditions_of_its_past():
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 1, "Never"))
    status = ps.step(job, {}, pods, at(0)).status
    resumed = {"type": "Paused", "status": "False", "reason": "Resumed", "message": "The job was resumed.",
               "lastTransitionTime": at(0)}
    pods.set("worker", 0, "Failed")
    finished = ps.plan(job, {**status, "conditions": [*status["conditions"], resumed]}, pods.list(), at(1))
    assert finished.terminal and resumed in finished.status["conditions"]
    assert (finished.status["startTime"], finished.status["completionTime"]) == (at(0), at(1))


def test_a_refused_write_shows_on_a_new_job_and_keeps_its_first_time_and_the_other_conditions():
    ps = generic()
    job = ps.make_job(("worker", 1))
    refused = engine.WriteFailure("FailedCreate", "pods is forbidden")
    first = engine.plan(ps.GENERICJOB, job, {}, [], at(0), write_failure=refused)
    conditions = {c["type"]: c for c in first.status["conditions"]}
    assert conditions["ReplicaFailure"]["reason"] == "FailedCreate" and "Completed" in conditions
    again = engine.plan(ps.GENERICJOB, job, first.status, [], at(5), write_failure=refused)
    failure = next(c for c in again.status["conditions"] if c["type"] == "ReplicaFailure")
    assert failure["lastTransitionTime"] == at(0)


def test_a_finished_jobs_clean_up_of_a_pod_its_record_still_shows_says_so():
    import copy

    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 2, "Never"), cleanup="All")
    status = ps.step(job, {}, pods, at(0)).status
    pods.set("worker", 0, "Failed")
    pods.set("worker", 1, "Running")
    finished = copy.deepcopy(ps.plan(job, status, pods.list(), at(1)).status)
    finished["tasks"][0]["replicas"][1]["phase"] = "Running"  # as a controller that stopped before its write left it
    late = ps.plan(job, finished, pods.list(), at(2))
    assert [e.message for e in late.events if e.reason == "SuccessfulDelete"] == ["Deleted pod: job-worker-1"]


def test_turning_debug_mode_off_replaces_the_debug_pods_and_says_so():
    ps = generic()
    pods = ps.Pods()
    debug = ps.make_job(("worker", 1), debug=True)
    status = ps.step(debug, {}, pods, at(0)).status
    pods.set_all("Running")
    for pod in pods.list():
        pod["metadata"]["annotations"] = {mode_annotation(ps.GENERICJOB.api): "debug"}
    status = ps.step(debug, status, pods, at(1)).status
    switched = ps.plan(ps.make_job(("worker", 1)), status, pods.list(), at(2))
    assert [d.name for d in switched.delete] == ["job-worker-0"]
    assert [e.message for e in switched.events if e.reason == "RunModeChanged"] == [
        "Debug mode turned off: replacing the pods of job-worker-0"]


def test_a_finished_jobs_replica_awaiting_a_pod_is_deleted_unless_its_create_was_just_sent():
    import copy

    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 2, "Never"))
    status = ps.step(job, {}, pods, at(0)).status
    pods.set("worker", 0, "Failed")
    finished = copy.deepcopy(ps.plan(job, status, pods.list(), at(1)).status)
    finished["tasks"][0]["replicas"][1].update(phase="Creating", uid="")
    others = [p for p in pods.list() if p["metadata"]["name"] != "job-worker-1"]

    def phase(creating):
        settled = engine.plan(ps.GENERICJOB, job, finished, others, at(2), creating=frozenset(creating))
        return settled.status["tasks"][0]["replicas"][1]["phase"]

    assert phase(()) == "Deleted"
    assert phase({"job-worker-1"}) == "Creating"


def test_a_finished_jobs_ranks_stored_apart_by_an_earlier_version_are_moved_into_their_tasks():
    # status.removedReplicas (an earlier version's place for ranks scaled away): a finished job keeps its status,
    # but the records move into their type's task, Deleted, their restarts counted there, as a running job's do.
    ps, pods, job, finished = failed_single_worker()
    legacy = {**finished, "removedReplicas": [{"name": "job-worker-5", "restartCount": 2}], "backoffCount": 2}
    moved = ps.plan(job, legacy, pods.list(), at(2)).status
    assert "removedReplicas" not in moved
    [task] = moved["tasks"]
    assert [(r["name"], r["phase"]) for r in task["replicas"]] == [("job-worker-0", "Failed"),
                                                                   ("job-worker-5", "Deleted")]
    assert task["restartCount"] == 2 and moved["backoffCount"] == 2 and moved["phase"] == "Failed"
    again = ps.plan(job, moved, pods.list(), at(3)).status
    assert again == moved


def test_an_edit_of_a_job_finished_by_an_older_controller_which_stored_no_policy_is_ignored():
    # No status.cleanUpPolicy (an older controller): the edit cannot be told a policy change, and is said ignored.
    ps, pods, job, finished = failed_single_worker()
    older = {key: value for key, value in finished.items() if key != "cleanUpPolicy"}
    edited = ps.plan(job, {**older, "observedGeneration": job.generation - 1}, pods.list(), at(2))
    assert [e.reason for e in edited.events if e.type == "Normal"] == ["SpecChangeIgnored"]


def test_a_finished_jobs_restarts_of_records_dropped_for_size_are_not_added_again():
    ps, pods, job, finished = failed_single_worker()
    [task] = finished["tasks"]
    dropped = {**finished, "tasks": [{**task, "restartCount": 3}], "backoffCount": 3}  # 3 beyond its records
    again = ps.plan(job, dropped, pods.list(), at(2)).status
    assert again["tasks"][0]["restartCount"] == 3 and again["backoffCount"] == 3


def test_a_refused_writes_condition_says_the_api_servers_message():
    ps = generic()
    job = ps.make_job(("worker", 1))
    refused = engine.WriteFailure("FailedCreate", "pods is forbidden")
    conditions = engine.plan(ps.GENERICJOB, job, {}, [], at(0), write_failure=refused).status["conditions"]
    assert next(c for c in conditions if c["type"] == "ReplicaFailure") == {
        "type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "pods is forbidden",
        "lastTransitionTime": at(0)}


def test_a_job_that_finishes_removes_its_podgroup_and_keeps_the_service_of_the_pod_its_clean_up_keeps():
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 1, "Never"))
    status = ps.step(job, {}, pods, at(0)).status
    pods.set("worker", 0, "Failed")
    service = {"metadata": {"name": "job-worker-0", "uid": "s"}}
    group = {"metadata": {"name": "job", "uid": "g"}}
    finished = engine.plan(ps.GENERICJOB, job, status, pods.list(), at(1), services=[service], podgroups=[group])
    # (The failed pod is kept by the default clean-up policy, so is its Service: nothing is patched either.)
    assert finished.terminal and finished.services == [] and finished.delete == []
    assert [(a.name, a.uid) for a in finished.podgroup] == [("job", "g")]


def test_a_dependent_whose_report_turns_to_a_warning_without_a_note_says_so_with_an_empty_message():
    from controller.jobs.decisions.actions import WARNING, Event

    reported = {"tensorboard": {"type": WARNING, "reason": "TensorBoardUnavailable"}}
    assert engine._dependent_events({}, reported) == [Event(WARNING, "TensorBoardUnavailable", "")]


def test_a_running_jobs_restart_is_a_normal_event():
    ps = generic()
    pods = ps.Pods()
    job = ps.make_job(("worker", 1, "OnFailure", 3))
    status = ps.step(job, {}, pods, at(0)).status
    pods.set("worker", 0, "Failed")
    restarted = ps.plan(job, status, pods.list(), at(1))
    assert [(e.type, e.reason) for e in restarted.events if e.reason == "Restarting"] == [("Normal", "Restarting")]


def test_a_finished_jobs_stored_record_without_a_name_is_kept_without_one():
    ps, pods, job, finished = failed_single_worker()
    task = finished["tasks"][0]
    nameless = {**finished, "tasks": [{**task, "replicas": [{**task["replicas"][0], "name": ""}]}]}
    settled = ps.plan(job, nameless, pods.list(), at(2)).status
    assert [r["name"] for r in settled["tasks"][0]["replicas"]] == [""]
    assert (settled["startTime"], settled["completionTime"]) == (at(0), at(1))
