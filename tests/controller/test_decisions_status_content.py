"""What the status says, field by field, on the paths issue 45 found unchecked: an InvalidSpec failure (its Failed
condition's message, its completionTime), a resume (Paused=False with its time), a held job failed by its deadline.
status_checks.py holds the rules every planned status keeps (plan_support.step checks them on every plan)."""

from __future__ import annotations

from controller.jobs.decisions import plan as engine
from controller.jobs.decisions.backoff import epoch
from controller.kinds.genericjob.kind import GENERICJOB

from .plan_support import Pods, at, condition, make_job, start, step
from .status_checks import assert_well_formed, monotonic_problems, status_problems
from .test_held import hold, running


def test_an_invalid_spec_fails_the_job_with_its_problems_in_the_failed_condition_and_a_completion_time():
    pods = Pods()
    job = make_job(("worker", 1))
    status = start(job, pods)
    problems = "spec.replicaSpecs[0].replicas: must be at least 0"
    invalid = engine.plan_invalid(GENERICJOB, status, pods.list(), problems, at(9))
    failed = condition(invalid.status, "Failed")
    assert (failed["status"], failed["reason"], failed["message"], failed["lastTransitionTime"]) == (
        "True", "InvalidSpec", problems, at(9))
    completed = condition(invalid.status, "Completed")
    assert (completed["status"], completed["reason"], completed["message"]) == ("False", "InvalidSpec", problems)
    assert (invalid.status["phase"], invalid.status["reason"], invalid.status["completionTime"]) == (
        "Failed", "InvalidSpec", at(9))
    assert invalid.events == [("Warning", "InvalidSpec", problems)]
    assert condition(invalid.status, "Running") == {"type": "Running", "status": "False", "reason": "Failed",
                                                    "message": "The job has finished.", "lastTransitionTime": at(9)}
    assert_well_formed(invalid.status, status)


def test_a_resumed_job_says_when_it_was_resumed():
    pods = Pods()
    job = make_job(("worker", 1))
    status = start(job, pods)
    paused = step(make_job(("worker", 1), pause=True), status, pods, at(5)).status
    assert condition(paused, "Paused")["lastTransitionTime"] == at(5)
    resumed = step(make_job(("worker", 1), pause=False), paused, pods, at(7)).status
    said = condition(resumed, "Paused")
    assert (said["status"], said["reason"], said["message"], said["lastTransitionTime"]) == (
        "False", "Resumed", "The job was resumed.", at(7))


def test_a_held_job_failed_by_its_deadline_force_deletes_its_stuck_pods_and_says_when():
    job, pods = make_job(("worker", 2)), Pods()
    status = {**running(job, pods), "startTime": at(0)}
    pods.set("worker", 1, "Running", terminating=True)  # its deletion asked at at(0): stuck by at(90)
    failed = hold(status, pods, at(90), deadline=10, clock=epoch(at(90)))
    assert failed.terminal and failed.status["reason"] == "DeadlineExceeded"
    assert [f.name for f in failed.force_delete] == ["job-worker-1"]
    assert failed.status["completionTime"] == at(90)
    assert condition(failed.status, "Failed")["lastTransitionTime"] == at(90)


def test_the_checks_find_what_issue_45s_mutants_wrote():
    good = {"phase": "Failed", "startTime": at(0), "completionTime": at(5), "conditions": [
        {"type": "Failed", "status": "True", "reason": "InvalidSpec", "message": "m", "lastTransitionTime": at(5)}]}
    assert status_problems(good) == []
    broken = [
        {**good, "completionTime": None},
        {**good, "completionTime": at(0).replace("00:00:00", "23:59:59").replace("01-01", "00-31")},
        {**good, "conditions": [{**good["conditions"][0], "message": None}]},
        {**good, "conditions": [{**good["conditions"][0], "lastTransitionTime": None}]},
        {**good, "conditions": [{**good["conditions"][0], "reason": None}]},
        {**good, "conditions": [{**good["conditions"][0], "type": None}]},
        {**good, "conditions": [{**good["conditions"][0], "status": "False"}]},
        {**good, "conditions": [good["conditions"][0], good["conditions"][0]]},
        {**good, "phase": "Running"},
        {**good, "startTime": "yesterday"},
    ]
    for status in broken:
        assert status_problems(status), status
    later = {**good, "completionTime": at(6), "conditions": [{**good["conditions"][0], "lastTransitionTime": at(6)}]}
    assert len(monotonic_problems(good, later)) == 2
    earlier = {**good, "conditions": [{**good["conditions"][0], "status": "False", "lastTransitionTime": at(4)}]}
    assert monotonic_problems(good, earlier) == [f"Failed: lastTransitionTime went back from "
                                                 f"{at(5).replace('Z', '+00:00').replace('T', ' ')} to "
                                                 f"{at(4).replace('Z', '+00:00').replace('T', ' ')}"]


def test_a_status_too_large_is_written_failed_now_keeping_its_other_conditions():
    # Issue 45 (oversize.py): the compact status of a running job: phase Failed (not the planned one), its other
    # conditions kept, its reason and completionTime; each fallback as well-formed.
    from controller.jobs.decisions import oversize

    pods = Pods()
    job = make_job(("worker", 2))
    planned = step(job, start(job, pods), pods, at(3)).status
    assert planned["phase"] == "Running" and "completionTime" not in planned
    compact = oversize.compact_status(GENERICJOB.status, planned, "too large", at(9))
    assert (compact["phase"], compact["reason"], compact["completionTime"]) == ("Failed", "StatusTooLarge", at(9))
    assert [c["type"] for c in compact["conditions"]] == [c["type"] for c in planned["conditions"]]
    assert condition(compact, "Initialized") == condition(planned, "Initialized")
    assert (condition(compact, "Running")["status"], condition(compact, "Running")["lastTransitionTime"]) == (
        "False", at(9))
    assert (condition(compact, "Failed")["message"], condition(compact, "Failed")["reason"]) == (
        "too large", "StatusTooLarge")
    assert_well_formed(compact, planned)
    (text, first), (short, second), (_, bare) = oversize.fallbacks(GENERICJOB.status, planned, "etcd: too big", at(9),
                                                                    7)
    assert first["observedGeneration"] == second["observedGeneration"] == 7 and "observedGeneration" not in bare
    assert condition(first, "Failed")["message"] == text and "etcd: too big" in text
    assert second["conditions"] == [{"type": "Failed", "status": "True", "reason": "StatusTooLarge",
                                     "message": short, "lastTransitionTime": at(9)}]
    assert (second["phase"], second["reason"], second["completionTime"]) == ("Failed", "StatusTooLarge", at(9))
    assert bare == {"phase": "Failed", "reason": "StatusTooLarge"}
    for status in (first, second):
        assert_well_formed(status)


def test_a_released_hold_says_when_it_was_released():
    from controller.jobs.decisions import held

    job, pods = make_job(("worker", 1)), Pods()
    status = hold(running(job, pods), pods, at(5)).status
    released = held.release(step(job, status, pods, at(6)), status, 3, at(6))
    said = condition(released.status, held.SPEC_INVALID)
    assert (said["status"], said["reason"], said["lastTransitionTime"]) == ("False", held.RELEASED, at(6))
    assert_well_formed(released.status, status)


def test_a_held_job_failed_by_its_deadline_removes_its_services_and_podgroup_and_keeps_the_stuck_time_given():
    job, pods = make_job(("worker", 1)), Pods()
    status = {**running(job, pods), "startTime": at(0)}
    service = {"metadata": {"name": "job-worker-0", "uid": "s"}}
    group = {"metadata": {"name": "job", "uid": "g"}}
    pods.set("worker", 0, "Running", terminating=True)  # its deletion asked at at(0)
    failed = hold(status, pods, at(55), deadline=10, clock=epoch(at(55)), services=[service], podgroups=[group],
                  stuck_after=50.0)
    assert failed.terminal and [(a.name, a.uid) for a in failed.services] == [("job-worker-0", "s")]
    assert [(a.name, a.uid) for a in failed.podgroup] == [("job", "g")]
    assert [f.name for f in failed.force_delete] == ["job-worker-0"]  # 5 s overdue by the 50 s given


def test_the_compact_status_says_the_job_is_no_longer_running_and_counts_the_records_dropped():
    from controller.jobs.decisions import oversize

    pods = Pods()
    job = make_job(("worker", 3))
    planned = step(job, start(job, pods), pods, at(3)).status
    compact = oversize.compact_status(GENERICJOB.status, planned, "too large", at(9))
    assert condition(compact, "Running") == {"type": "Running", "status": "False", "reason": "Failed",
                                             "message": "The job has finished.", "lastTransitionTime": at(9)}
    (text, _), (short, _), (bare, _) = oversize.fallbacks(GENERICJOB.status, planned, "etcd: too big", at(9), 1)
    assert text == oversize.message(3, "etcd: too big") and "each of its 3 replicas" in text
    assert bare == f"{short} Its spec leaves no room for a condition: only the phase and reason are stored."


def test_a_job_failed_too_large_is_told_by_its_failed_condition_alone():
    from controller.jobs.decisions import oversize

    said = {"type": "Failed", "status": "True", "reason": "StatusTooLarge", "message": "m"}
    assert oversize.failed_too_large({"conditions": [said]})
    assert oversize.failed_too_large({"phase": "Failed", "reason": "StatusTooLarge"})
    assert not oversize.failed_too_large({"conditions": [{**said, "status": "False"}]})
    assert not oversize.failed_too_large({"conditions": [{**said, "reason": "InvalidSpec"}]})
    assert not oversize.failed_too_large({"conditions": [{**said, "type": "Completed"}]})
    assert not oversize.failed_too_large({"phase": "Failed", "reason": "InvalidSpec", "conditions": []})


def test_a_pause_says_its_pods_are_going_and_counts_a_long_runs_failure_as_a_first_quick_one():
    from controller.jobs.decisions.backoff import RestartBackoff, epoch
    from controller.jobs.decisions.replica_records import read_record

    pods = Pods()
    job = make_job(("worker", 2, "OnFailure", 5))
    status = start(job, pods)
    [task] = status["tasks"]
    status = {**status, "tasks": [{**task, "replicas": [{**task["replicas"][0], "restartStreak": 3},
                                                        task["replicas"][1]]}]}
    failed = pods.set("worker", 0, "Failed")
    failed["status"]["startTime"] = at(0)  # it ran ten minutes and more before failing
    paused = engine.plan(GENERICJOB, make_job(("worker", 2, "OnFailure", 5), pause=True), status, pods.list(),
                         at(1000), restart_backoff=RestartBackoff(10.0), clock=epoch(at(1000)))
    said = condition(paused.status, "Paused")
    assert (said["status"], said["message"]) == ("True", "The job is paused: its pods are being deleted.")
    assert [(e.type, e.reason) for e in paused.events if e.reason == "Restarting"] == [("Normal", "Restarting")]
    stored = read_record(paused.status["tasks"][0]["replicas"][0], "job-worker-0")
    assert (stored.restart_count, stored.restart_streak) == (1, 1)
    assert paused.status["startTime"] == status["startTime"]
