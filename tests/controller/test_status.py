"""Status pieces: replica records from pods, conditions and their transition times, tasks,
aggregate, phase."""

from __future__ import annotations

from dataclasses import replace

import pytest

from controller.jobs.decisions.job_conditions import (
    COMPLETED,
    FAILED,
    INITIALIZED,
    PAUSED,
    REPLICA_FAILURE,
    RUNNING,
    ever_paused,
    find_condition,
    finished_conditions,
    is_true,
    pause_conditions,
    progress_conditions,
    set_condition,
    unfinished_conditions,
)
from controller.jobs.decisions.phase_machine import next_phase
from controller.jobs.decisions.pod_state import container_states, pod_phase, pod_ready
from controller.jobs.decisions.replica_records import (
    DELETED,
    aggregate,
    blank_record,
    observed,
    read_record,
    replica_counts,
)
from controller.jobs.decisions.status_codec import TasksStatus, assemble
from controller.jobs.schema.api import JobPhase
from controller.kinds.genericjob.kind import GENERICJOB

from .plan_support import at, make_pod


def test_container_states():
    pod = make_pod("worker", 0, "u1", "Failed", exit_code=2)
    pod["status"]["containerStatuses"] += [
        {"name": "side", "state": {"running": {"startedAt": "x"}}},
        {"name": "init", "state": {"waiting": {"reason": "ContainerCreating"}}},
        {"name": "odd"},
    ]
    assert container_states(pod) == [
        {"name": "main", "state": "terminated", "exitCode": 2},
        {"name": "side", "state": "running"},
        {"name": "init", "state": "waiting"},
        {"name": "odd", "state": "waiting"},
    ]


def test_pod_without_status_is_pending():
    pod = make_pod("worker", 0, "u1", None)
    assert pod_phase(pod) == "Pending"
    assert container_states(pod) == []


def test_read_record_fills_defaults():
    assert read_record(None, "n") == blank_record("n")
    assert read_record({"name": "n", "uid": "u", "phase": "Running"}, "n").to_json() == {
        "name": "n", "uid": "u", "phase": "Running", "containers": [], "restartCount": 0}  # no lastRestartUid: ""


def test_last_restart_uid_is_stored_once_a_pod_was_retired():
    running = observed(blank_record("n"), make_pod("worker", 0, "u1", "Running"))
    record = running.counted("2026-01-01T00:00:00Z", streak=0)
    assert record.to_json()["lastRestartUid"] == "u1"
    assert read_record(record.to_json(), "n").last_restart_uid == "u1"


def test_a_deleted_replicas_containers_say_deleted_unless_they_had_ended():
    running = observed(blank_record("n"), make_pod("worker", 0, "u1", "Running"))
    assert list(running.in_phase(DELETED).containers) == [{"name": "main", "state": "deleted"}]
    ended = observed(blank_record("n"), make_pod("worker", 0, "u1", "Failed"))
    assert list(ended.in_phase(DELETED).containers) == list(ended.containers)


def test_observed_record():
    record = observed(blank_record("n"), make_pod("worker", 0, "u1", "Running"))
    assert record.uid == "u1" and record.phase == "Running"
    assert list(record.containers) == [{"name": "main", "state": "running"}]


def test_set_condition_moves_the_time_only_on_a_flip():
    conditions = set_condition([], "Running", False, "Pending", "waiting", at(1))
    assert conditions == [{"type": "Running", "status": "False", "reason": "Pending", "message": "waiting",
                           "lastTransitionTime": at(1)}]
    same = set_condition(conditions, "Running", False, "Resuming", "other words", at(2))
    assert same[0]["lastTransitionTime"] == at(1)
    assert same[0]["reason"] == "Resuming" and same[0]["message"] == "other words"
    flipped = set_condition(same, "Running", True, "Running", "running", at(3))
    assert flipped[0]["lastTransitionTime"] == at(3) and flipped[0]["status"] == "True"
    back = set_condition(flipped, "Running", False, "Paused", "paused", at(4))
    assert back[0]["lastTransitionTime"] == at(4)


def test_set_condition_keeps_the_others_in_place():
    conditions = set_condition([], "A", True, "r", "m", at(1))
    conditions = set_condition(conditions, "B", True, "r", "m", at(1))
    conditions = set_condition(conditions, "A", False, "r", "m", at(2))
    assert [c["type"] for c in conditions] == ["A", "B"]
    assert conditions[1]["lastTransitionTime"] == at(1)


def test_set_condition_does_not_mutate_its_input():
    conditions = set_condition([], "A", True, "r", "m", at(1))
    set_condition(conditions, "A", False, "r", "m", at(2))
    assert conditions[0]["status"] == "True"


def test_aggregate_counts_every_phase():
    phases = ["Creating", "Pending", "Running", "Running", "Succeeded", "Failed", "Unknown", "Deleted", "Weird"]
    records = [replace(blank_record(str(i)), phase=p) for i, p in enumerate(phases)]
    assert aggregate(records) == {"creating": 1, "pending": 1, "running": 2, "succeeded": 1, "failed": 1,
                                  "unknown": 2, "deleted": 1}


def test_tasks_sum_restart_counts():
    a = [replace(blank_record("a0"), restart_count=2), replace(blank_record("a1"), restart_count=1)]
    assert TasksStatus("replicas").tasks([("a", a), ("b", [])]) == [
        {"type": "a", "restartCount": 3, "replicas": [r.to_json() for r in a]},
        {"type": "b", "restartCount": 0, "replicas": []}]


@pytest.mark.parametrize(("old", "paused", "up", "expected"), [
    ("", False, False, JobPhase.PENDING),
    ("Pending", False, False, JobPhase.PENDING),
    ("Pending", False, True, JobPhase.RUNNING),
    ("Running", False, False, JobPhase.RUNNING),  # replicas restarting: still Running
    ("Running", True, True, JobPhase.PAUSED),
    ("", True, False, JobPhase.PAUSED),
    ("Paused", False, False, JobPhase.RESUMING),
    ("Resuming", False, False, JobPhase.RESUMING),
    ("Resuming", False, True, JobPhase.RUNNING),
])
def test_next_phase(old, paused, up, expected):
    assert next_phase(old, paused=paused, all_up=up) == expected


def test_progress_conditions():
    records = [replace(blank_record(f"job-w-{i}"), uid=f"u{i}", phase="Failed") for i in range(7)]
    conditions = progress_conditions([], phase=JobPhase.RUNNING, records=records, now=at(1))
    assert is_true(conditions, INITIALIZED) and is_true(conditions, RUNNING)
    failure = find_condition(conditions, REPLICA_FAILURE)
    assert failure["status"] == "True"
    assert failure["message"] == "Replicas with a failed pod: job-w-0, job-w-1, job-w-2, job-w-3, job-w-4 and 2 more."


def test_initialized_waits_for_every_pod_and_then_sticks():
    records = [replace(blank_record("a"), uid="u"), blank_record("b")]
    conditions = progress_conditions([], phase=JobPhase.PENDING, records=records, now=at(1))
    assert not is_true(conditions, INITIALIZED)
    records[1] = replace(records[1], uid="v")
    conditions = progress_conditions(conditions, phase=JobPhase.PENDING, records=records, now=at(2))
    assert find_condition(conditions, INITIALIZED)["lastTransitionTime"] == at(2)
    restarting = [records[0], blank_record("b")]
    conditions = progress_conditions(conditions, phase=JobPhase.RUNNING, records=restarting, now=at(3))
    assert find_condition(conditions, INITIALIZED) == {
        "type": "Initialized", "status": "True", "reason": "PodsCreated",
        "message": "The job has been initialized successfully.", "lastTransitionTime": at(2)}


def test_finished_conditions():
    running = unfinished_conditions([], at(1))
    failed = finished_conditions(running, succeeded=False, reason="Failed", message="m", now=at(5))
    completed, fail = find_condition(failed, COMPLETED), find_condition(failed, FAILED)
    assert (completed["status"], completed["reason"], completed["message"]) == ("False", "Failed", "m")
    assert completed["lastTransitionTime"] == at(1)  # False before, False now: no transition
    assert (fail["status"], fail["lastTransitionTime"]) == ("True", at(5))
    succeeded = finished_conditions(running, succeeded=True, reason="Succeeded", message="m", now=at(5))
    assert is_true(succeeded, COMPLETED) and not is_true(succeeded, FAILED)


def test_pause_conditions():
    assert pause_conditions([], paused=False, pods_left=False, now=at(1)) == []
    paused = pause_conditions([], paused=True, pods_left=True, now=at(1))
    assert is_true(paused, PAUSED) and ever_paused(paused)
    gone = pause_conditions(paused, paused=True, pods_left=False, now=at(2))
    assert gone[0]["lastTransitionTime"] == at(1)
    assert gone[0]["message"] == "The job is paused: all its pods are deleted."
    resumed = pause_conditions(gone, paused=False, pods_left=False, now=at(3))
    assert resumed[0]["status"] == "False" and resumed[0]["reason"] == "Resumed" and ever_paused(resumed)


def test_assemble_keeps_what_it_does_not_own():
    records = [replace(blank_record("a"), restart_count=2, phase="Running")]
    status = assemble({"observedGeneration": 4, "startTime": at(0)}, GENERICJOB.status, phase=JobPhase.RUNNING,
                      conditions=[], records_by_type=[("a", records)], start_time=at(0), completion_time=None)
    assert status["observedGeneration"] == 4
    assert status["phase"] == "Running" and type(status["phase"]) is str
    assert status["backoffCount"] == 2 and status["aggregate"]["running"] == 1
    assert status["startTime"] == at(0) and "completionTime" not in status


def _with_ready(pod: dict, value: str | None) -> dict:
    if value is not None:
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": value}]
    return pod


@pytest.mark.parametrize(("phase", "ready_condition", "ready"), [
    ("Running", "True", True),
    ("Running", "False", False),  # a readiness probe failing: running, not ready
    ("Running", None, True),  # a kubelet that reports no conditions: running is all there is to go by
    ("Pending", None, False),
    ("Succeeded", "False", False),
    ("Failed", None, False),
])
def test_a_replica_is_ready_while_its_pod_is_running_and_ready(phase, ready_condition, ready):
    pod = _with_ready(make_pod("worker", 0, "u1", phase), ready_condition)
    assert pod_ready(pod) is ready
    record = observed(blank_record("n"), pod)
    assert record.is_ready is ready
    assert record.to_json().get("ready") is (True if ready else None)  # stored only when ready
    assert read_record(record.to_json(), "n") == record
    assert record.in_phase(DELETED).is_ready is False


def test_ready_counts_are_ready_of_all_replicas():
    records = [observed(blank_record(f"n{i}"), _with_ready(make_pod("worker", i, f"u{i}", phase), value))
               for i, (phase, value) in enumerate([("Running", "True"), ("Running", "False"), ("Pending", None)])]
    counts = replica_counts([*records, blank_record("n3")])
    assert (counts["readyReplicas"], counts["ready"]) == (1, "1/4")
    assert counts["aggregate"]["running"] == 2 and counts["aggregate"]["creating"] == 1
