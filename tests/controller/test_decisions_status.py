"""The job's status and conditions (controller/jobs/decisions/: replica_records.py, job_conditions.py,
phase_machine.py, status_codec.py) in the cases the planning tests do not reach.
Written against the mutants that survived the other tests (tests/mutation, RELIABILITY.md): each test names the
behaviour a surviving mutant broke."""

from __future__ import annotations

from controller.jobs.decisions.job_conditions import (
    NAMES_SHOWN,
    find_condition,
    finished_conditions,
    pause_conditions,
    progress_conditions,
    unfinished_conditions,
    write_failure_condition,
)
from controller.jobs.decisions.pod_state import container_states, pod_phase, pod_ready, pod_uid
from controller.jobs.decisions.replica_records import AGGREGATE_KEYS, CREATING, DELETED, Replica, observed, read_record
from controller.jobs.decisions.status_codec import TasksStatus

NOW, LATER = "2024-01-01T00:00:01Z", "2024-01-01T00:00:09Z"


def test_a_refused_write_adds_replica_failure_to_conditions_without_it_and_keeps_its_first_time():
    [failure] = write_failure_condition([], [], "FailedCreate", "pods is forbidden", NOW)
    assert (failure["type"], failure["status"], failure["reason"], failure["lastTransitionTime"]) == (
        "ReplicaFailure", "True", "FailedCreate", NOW)
    stored = [failure]
    computed = [{"type": "Completed", "status": "False"},
                {"type": "ReplicaFailure", "status": "False", "reason": "NoFailure", "lastTransitionTime": LATER}]
    conditions = write_failure_condition(computed, stored, "FailedCreate", "pods is forbidden", LATER)
    assert conditions[0] == {"type": "Completed", "status": "False"}
    assert (conditions[1]["status"], conditions[1]["lastTransitionTime"]) == ("True", NOW)


def test_a_pod_without_a_status_is_not_ready_and_one_without_a_uid_has_an_empty_one():
    assert pod_ready({"metadata": {"name": "p"}}) is False
    assert pod_uid({"metadata": {"name": "p"}}) == ""


def test_a_pod_not_reported_on_yet_is_a_pending_replica():
    record = observed(Replica("job-worker-0"), {"metadata": {"uid": "u1"}})
    assert (record.uid, record.phase, record.containers, record.ready) == ("u1", "Pending", (), False)
    assert observed(Replica("job-worker-0"), {"metadata": {"uid": "u1"}, "status": {}}).phase == "Pending"


def test_only_a_deleted_replica_says_its_unfinished_containers_are_deleted():
    running = Replica("job-worker-0", "u1", "Running", ({"name": "main", "state": "running"},
                                                            {"name": "init", "state": "terminated", "exitCode": 0}))
    assert running.in_phase("Failed").containers == running.containers
    assert running.in_phase(DELETED).containers == ({"name": "main", "state": "deleted"},
                                                    {"name": "init", "state": "terminated", "exitCode": 0})


def test_replica_failure_names_the_failed_replicas_up_to_its_maximum_and_counts_the_rest():
    def message(failed: int) -> str:
        records = [Replica(f"w-{i}", f"u{i}", "Failed") for i in range(failed)] + [Replica("ok", "u", "Running")]
        conditions = progress_conditions([], phase="Running", records=records, now=NOW)
        return find_condition(conditions, "ReplicaFailure")["message"]

    assert message(1) == "Replicas with a failed pod: w-0."
    assert message(NAMES_SHOWN) == f"Replicas with a failed pod: {', '.join(f'w-{i}' for i in range(5))}."
    assert message(NAMES_SHOWN + 1).endswith("w-4 and 1 more.")
    assert message(NAMES_SHOWN + 2).endswith("w-4 and 2 more.")


def test_a_stored_record_with_an_unreadable_waiting_cause_waits_for_nothing():
    assert read_record({"waiting": "ImagePullBackOff"}, "w-0").waiting is None
    assert read_record({"waiting": {"reason": "ErrImagePull", "message": ""}}, "w-0").waiting == {
        "reason": "ErrImagePull", "message": ""}


def test_a_pod_without_a_uid_is_recorded_with_an_empty_one():
    assert observed(Replica("w-0"), {"metadata": {}, "status": {"phase": "Running"}}).uid == ""


def test_paused_says_whether_pods_are_still_being_deleted():
    def paused(pods_left: bool) -> str:
        conditions = pause_conditions([], paused=True, pods_left=pods_left, now=NOW)
        return find_condition(conditions, "Paused")["message"]

    assert paused(True) == "The job is paused: its pods are being deleted."
    assert paused(False) == "The job is paused: all its pods are deleted."


def test_retiring_a_replica_awaiting_its_pod_keeps_the_pod_it_retired_before():
    awaiting = Replica("w-0", "", CREATING, last_restart_uid="old")
    assert awaiting.retired().last_restart_uid == "old"
    assert Replica("w-0", "new", "Running", last_restart_uid="old").retired().last_restart_uid == "new"


def test_bare_pods_and_container_statuses_read_as_pending_and_waiting():
    assert pod_phase({"metadata": {}}) == "Pending"
    assert container_states({"status": {"containerStatuses": [{"name": "main"}]}}) == [
        {"name": "main", "state": "waiting"}]


def test_a_record_says_debug_only_while_it_describes_its_debug_pod():
    # A debug pod deleted (or retired) stays known for one (it counted nothing); the record awaiting the next pod
    # does not say debug, since that pod may be the workload's.
    from controller.jobs.decisions.replica_records import DELETED, Replica

    debug = Replica("job-worker-0", "u1", "Running", debug=True)
    assert debug.in_phase(DELETED).debug is True and debug.in_phase(DELETED).to_json()["debug"] is True
    awaiting = debug.awaiting()
    assert awaiting.debug is False and "debug" not in awaiting.to_json()


def test_a_container_status_without_a_name_is_recorded_with_an_empty_one():
    assert container_states({"status": {"containerStatuses": [{"state": {"running": {}}}]}}) == [
        {"name": "", "state": "running"}]


def test_a_succeeded_job_says_it_has_not_failed_with_its_own_reason_and_message():
    running = unfinished_conditions([], NOW)
    conditions = finished_conditions(running, succeeded=True, reason="Succeeded", message="Done.", now=LATER)
    assert conditions == [
        {"type": "Completed", "status": "True", "reason": "Succeeded", "message": "Done.", "lastTransitionTime": LATER},
        {"type": "Failed", "status": "False", "reason": "NotFailed", "message": "The job has not failed.",
         "lastTransitionTime": NOW}]


def test_a_retired_or_counted_pod_is_not_ready_any_more():
    # A ready pod retired (a pause, a scale-down) or counted (a restart) no longer serves the job: the record that
    # keeps describing it (Deleted, Failed) never counts in READY.
    ready = Replica("w-0", "u1", "Running", ready=True)
    assert ready.is_ready
    for record in (ready.retired(), ready.counted(LATER, streak=1)):
        assert (record.ready, record.is_ready, "ready" in record.to_json()) == (False, False, False)
    counted = ready.counted(LATER, streak=2)
    assert (counted.restart_count, counted.last_restart_uid, counted.last_restart_time, counted.restart_streak) == (
        1, "u1", LATER, 2)


def test_a_replica_keeps_what_its_pod_waited_for_when_its_phase_changes():
    # The job ended (its deadline, say) or its pod was deleted while the pod waited for its image: the record still
    # says why that replica never ran.
    waiting = {"reason": "ErrImagePull", "message": "pull access denied"}
    record = Replica("w-0", "u1", "Pending", waiting=waiting)
    assert record.in_phase(DELETED).waiting == waiting
    assert record.in_phase("Failed").to_json()["waiting"] == waiting


def test_restarts_carried_for_records_dropped_for_size_add_to_their_tasks():
    codec = TasksStatus("replicas")
    status = {**codec.replica_fields([("worker", [Replica("w-0", "u1", "Running", restart_count=2)])])}
    merged = codec.with_removed(status, {}, {"worker": 3})
    assert (merged["tasks"][0]["restartCount"], merged["backoffCount"]) == (5, 5)


def test_ranks_removed_from_a_status_without_counts_yet_are_counted_from_zero():
    codec = TasksStatus("replicas")
    merged = codec.with_removed({"tasks": []}, {"worker": [Replica("w-1", "u1", DELETED)]}, {})
    assert merged["aggregate"] == {"deleted": 1, **{k: 0 for k in AGGREGATE_KEYS if k != "deleted"}}


def test_stored_records_and_types_read_whatever_an_earlier_status_holds():
    codec = TasksStatus("replicas")
    assert codec.stored_records({}) == {} and codec.stored_types({}) == []
    status = {"tasks": [{"type": "worker", "replicas": [None, {"uid": "u0"}, {"name": "w-1", "uid": "u1"}]},
                        {"replicas": [{"name": "x-0"}]}, {"type": "ps"}]}
    assert codec.stored_records(status) == {"w-1": {"name": "w-1", "uid": "u1"}, "x-0": {"name": "x-0"}}
    assert codec.stored_types(status) == [
        ("worker", [None, {"uid": "u0"}, {"name": "w-1", "uid": "u1"}]), ("", [{"name": "x-0"}]), ("ps", [])]


def test_a_running_job_says_it_has_neither_completed_nor_failed_yet():
    assert unfinished_conditions([], NOW) == [
        {"type": "Completed", "status": "False", "reason": "NotCompleted", "message": "The job has not completed.",
         "lastTransitionTime": NOW},
        {"type": "Failed", "status": "False", "reason": "NotFailed", "message": "The job has not failed.",
         "lastTransitionTime": NOW}]


def test_paused_and_resumed_are_said_whole_with_the_time_of_each_change():
    paused = pause_conditions([], paused=True, pods_left=False, now=NOW)
    assert paused == [{"type": "Paused", "status": "True", "reason": "Paused",
                       "message": "The job is paused: all its pods are deleted.", "lastTransitionTime": NOW}]
    assert pause_conditions(paused, paused=False, pods_left=False, now=LATER) == [
        {"type": "Paused", "status": "False", "reason": "Resumed", "message": "The job was resumed.",
         "lastTransitionTime": LATER}]


def test_a_replica_awaiting_its_next_pod_is_neither_ready_nor_waiting():
    waiting = {"reason": "ErrImagePull", "message": "pull access denied"}
    for record in (Replica("w-0", "u1", "Running", ready=True), Replica("w-0", "u1", "Pending", waiting=waiting)):
        awaiting = record.awaiting()
        assert (awaiting.uid, awaiting.phase, awaiting.ready, awaiting.waiting) == ("", CREATING, False, None)


def test_progress_conditions_are_said_whole_while_pods_are_created_and_one_has_failed():
    records = [Replica("w-0", "u0", "Failed"), Replica("w-1")]
    assert progress_conditions([], phase="Pending", records=records, now=NOW) == [
        {"type": "Initialized", "status": "False", "reason": "CreatingPods",
         "message": "The job's pods are being created.", "lastTransitionTime": NOW},
        {"type": "Running", "status": "False", "reason": "Pending",
         "message": "The job's pods are not all running yet.", "lastTransitionTime": NOW},
        {"type": "ReplicaFailure", "status": "True", "reason": "ReplicaFailed",
         "message": "Replicas with a failed pod: w-0.", "lastTransitionTime": NOW}]
