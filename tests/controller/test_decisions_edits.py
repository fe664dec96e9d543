"""Live edits (controller/jobs/decisions/edits.py): which pods are of the other run mode and are replaced when debug
mode is turned on or off, which records of ranks scaled away are kept, when a template change is announced. Written
against the mutants that survived the other tests (tests/mutation, RELIABILITY.md): each test names the
behaviour a surviving mutant broke."""

from __future__ import annotations

import pytest

from controller.jobs.children.pods import PodMode, mode_annotation
from controller.jobs.decisions.actions import DEBUG
from controller.jobs.decisions.edits import (
    NONE_REMOVED,
    Removed,
    is_debug,
    judged,
    other_mode,
    removed,
    removed_records,
    template_changes,
    with_removed,
)
from controller.jobs.decisions.replica_records import Replica
from controller.jobs.decisions.restart import Observation, Seen, Slot
from controller.jobs.schema.api import Outcome
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.genericjob.models import RestartPolicy

from .plan_support import make_job

WORKLOAD = PodMode.IMMEDIATE  # (and resume: any mode but debug)


def observed(mode: str | None, phase: str = "Running", seen: Seen = Seen.CURRENT, terminating: bool = False,
             outcome: Outcome | None = None):
    metadata: dict = {"name": "job-worker-0", "uid": "u1"}
    if mode is not None:
        metadata["annotations"] = {mode_annotation(GENERICJOB.api): mode}
    if terminating:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    pod = {"metadata": metadata, "status": {"phase": phase}}
    record = Replica("job-worker-0", "u1", phase)
    return Observation(Slot("worker", 0, "job-worker-0", RestartPolicy(), record, pod), seen, record, outcome)


@pytest.mark.parametrize("phase", ["Pending", "Running", "Succeeded", "Failed"])
def test_a_debug_pod_is_replaced_once_debug_mode_is_off_whatever_its_phase(phase):
    assert other_mode(GENERICJOB, observed(DEBUG, phase), debugging=False) is True
    assert other_mode(GENERICJOB, observed(DEBUG, phase), debugging=True) is False


@pytest.mark.parametrize("phase", ["Pending", "Running"])
def test_a_workload_pod_not_finished_is_replaced_once_debug_mode_is_on(phase):
    assert other_mode(GENERICJOB, observed(WORKLOAD, phase), debugging=True) is True
    assert other_mode(GENERICJOB, observed(WORKLOAD, phase), debugging=False) is False


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_workload_pod_is_judged_not_replaced_when_debug_mode_is_on(phase):
    assert other_mode(GENERICJOB, observed(WORKLOAD, phase), debugging=True) is False


def test_a_pod_made_before_pods_said_their_mode_is_not_replaced():
    assert other_mode(GENERICJOB, observed(None), debugging=True) is False
    assert other_mode(GENERICJOB, observed(None), debugging=False) is False


def test_a_pod_terminating_or_not_the_replicas_own_is_left_to_go():
    assert other_mode(GENERICJOB, observed(DEBUG, terminating=True), debugging=False) is False
    assert other_mode(GENERICJOB, observed(DEBUG, seen=Seen.RETIRED), debugging=False) is False


def test_every_rank_scaled_away_keeps_a_deleted_record_with_its_count_under_its_type():
    # The spec's "Removed ranks": a rank scaled away keeps its record, Deleted, with its restart count, whether
    # it restarted or not and whether its pod remains; the spec's ranks are not among them. Stored apart by an
    # earlier version (status.removedReplicas), the records are typed by their names.
    slot = observed(WORKLOAD).slot  # job-worker-0, still in the spec
    old = {"removedReplicas": [{"name": "job-worker-0", "restartCount": 2}, {"name": "job-worker-3"},
                               {"name": "job-worker-1", "restartCount": 1}, {"name": "job-ps-0"}]}
    pods = [{"metadata": {"name": "job-worker-3"}}]
    kept = removed(GENERICJOB, "job", old, [slot], pods)
    assert {t: [(r.name, r.restart_count, r.phase) for r in records] for t, records in kept.by_type.items()} == {
        "worker": [("job-worker-1", 1, "Deleted"), ("job-worker-3", 0, "Deleted")], "ps": [("job-ps-0", 0, "Deleted")]}
    assert kept.restarts == 1 and kept.carried == {}
    assert all(r.last_restart_uid == r.uid for records in kept.by_type.values() for r in records)  # retired


def test_a_template_change_is_announced_once_and_a_first_or_unreadable_record_announces_nothing():
    job = make_job(("worker", 1))
    hashes, events = template_changes(GENERICJOB, job, {})
    assert events == []
    assert template_changes(GENERICJOB, job, {"templateHashes": hashes}) == (hashes, [])
    assert template_changes(GENERICJOB, job, {"templateHashes": "garbage"}) == (hashes, [])
    _, [event] = template_changes(GENERICJOB, job, {"templateHashes": {"worker": "an older hash"}})
    assert (event.type, event.reason) == ("Normal", "TemplateChanged")
    assert event.message.startswith("spec.replicaSpecs[0].template (worker) changed")


def test_a_debug_pods_end_is_not_judged_and_a_workload_pods_is_even_in_debug_mode():
    def outcome(debug):
        o = observed(WORKLOAD, "Failed", outcome=Outcome.FAILED)
        o.slot.debug = debug
        return judged([o])[("worker", 0)]

    assert outcome(debug=False) == Outcome.FAILED
    assert outcome(debug=True) is None


def test_a_failure_of_a_rank_scaled_away_is_judged_unless_it_was_a_debug_pod():
    def leaving(debug, outcome=Outcome.FAILED):
        o = observed(WORKLOAD, "Failed", outcome=outcome)
        o.slot.rank, o.slot.debug = 1, debug
        return judged([], leaving=[o])

    assert leaving(debug=False) == {("worker", 1): Outcome.FAILED}
    assert leaving(debug=True) == {}
    assert leaving(debug=False, outcome=Outcome.SUCCEEDED) == {}  # a success of a rank leaving decides nothing


def test_which_pods_are_debug_pods():
    def is_debug_pod(mode, debugging):
        o = observed(mode)
        return is_debug(GENERICJOB, o.slot.pod, o.record, debugging)

    assert is_debug_pod(DEBUG, debugging=True) and is_debug_pod(DEBUG, debugging=False)
    assert not is_debug_pod(WORKLOAD, debugging=True) and not is_debug_pod(WORKLOAD, debugging=False)
    # made before pods said their mode: in debug mode it is one (debug mode always decided nothing)
    assert is_debug_pod(None, debugging=True) and not is_debug_pod(None, debugging=False)
    # a pod gone was one if its record says so, whatever the mode now
    assert is_debug(GENERICJOB, None, Replica("job-worker-0", "u1", "Failed", debug=True), debugging=False)
    assert not is_debug(GENERICJOB, None, Replica("job-worker-0", "u1", "Failed"), debugging=True)


def test_unreadable_records_of_ranks_scaled_away_are_skipped():
    status = {"removedReplicas": ["garbage", None, {"restartCount": 1}, {"name": ""}, {"name": "job-worker-1"}]}
    assert removed_records(status) == {"job-worker-1": {"name": "job-worker-1"}}


def test_restarts_of_ranks_scaled_away_add_to_their_types_count_and_the_backoff_count():
    status = {"tasks": [{"type": "worker", "restartCount": 3, "replicas": []}], "backoffCount": 3,
              "removedReplicas": []}
    gone = Removed({"worker": [Replica("job-worker-1", restart_count=2)]}, {"ps": 1})
    merged = with_removed(GENERICJOB, status, gone)
    assert "removedReplicas" not in merged
    assert [(t["type"], t["restartCount"]) for t in merged["tasks"]] == [("worker", 5), ("ps", 1)]
    assert merged["backoffCount"] == 6
    # nothing scaled away: the status as it was, but an earlier version's removedReplicas dropped
    assert with_removed(GENERICJOB, {"backoffCount": 3, "removedReplicas": []}, NONE_REMOVED) == {"backoffCount": 3}
    plain = {"backoffCount": 3}
    assert with_removed(GENERICJOB, plain, NONE_REMOVED) is plain


def test_the_restarts_of_ranks_scaled_away_are_their_records_and_those_dropped_for_size():
    # (What the job's restarts are numbered from, plan.py: "restart K of N of the job".)
    assert Removed({"worker": [Replica("job-worker-3", restart_count=2)]}, {"ps": 1}).restarts == 3
    assert NONE_REMOVED.restarts == 0


def test_past_the_records_room_a_remaining_pod_then_restarts_then_the_lowest_rank_are_kept(monkeypatch):
    # Room for 2 records of ranks scaled away (3 in all, 1 replica in the spec). Kept: worker-3 (its pod remains),
    # then worker-2 (restarted, lower rank than worker-4); dropped: worker-4, whose 2 restarts stay counted, and
    # ps-0 and worker-1, which never restarted (nothing carried for them, not even a 0).
    from controller.jobs.decisions import edits

    monkeypatch.setattr(edits, "MAX_RECORDS", 3)
    slot = observed(WORKLOAD).slot
    stored = [{"name": "job-worker-1"}, {"name": "job-worker-4", "restartCount": 2},
              {"name": "job-worker-2", "restartCount": 1}, {"name": "job-worker-3"}]
    old = {"tasks": [{"type": "worker", "restartCount": 3, "replicas": stored},
                     {"type": "ps", "restartCount": 0, "replicas": [{"name": "job-ps-0"}]}]}
    kept = removed(GENERICJOB, "job", old, [slot], [{"metadata": {"name": "job-worker-3"}}])
    assert {t: [r.name for r in records] for t, records in kept.by_type.items()} == {
        "worker": ["job-worker-2", "job-worker-3"]}
    assert kept.carried == {"worker": 2}


def test_records_of_ranks_scaled_away_are_in_rank_order_past_rank_9():
    slot = observed(WORKLOAD).slot
    old = {"tasks": [{"type": "worker", "restartCount": 0,
                      "replicas": [{"name": "job-worker-10"}, {"name": "job-worker-2"}, None, {},
                                   {"phase": "Deleted"}]}]}  # (records unreadable: skipped)
    kept = removed(GENERICJOB, "job", old, [slot], [])
    assert [r.name for r in kept.by_type["worker"]] == ["job-worker-2", "job-worker-10"]


@pytest.mark.parametrize(("task", "carried"), [
    ({"type": "worker", "restartCount": 5, "replicas": [{"name": "a", "restartCount": 2}, {"name": "b"}]},
     {"worker": 3}),  # a record without a count counts 0
    ({"type": "worker", "restartCount": 2, "replicas": [{"name": "a", "restartCount": 2}]}, {}),
    ({"type": "worker", "restartCount": 1, "replicas": [{"name": "a", "restartCount": 2}]}, {}),
    ({"restartCount": 3, "replicas": [{"name": "a", "restartCount": 1}]}, {"": 2}),  # a task without its type
])
def test_a_tasks_restarts_beyond_its_records_are_those_of_records_dropped_for_size(task, carried):
    from controller.jobs.decisions.edits import stored_carried

    assert stored_carried(GENERICJOB, {"tasks": [task]}) == carried


def test_counters_of_a_job_planned_without_its_spec_never_go_down_whatever_the_stored_task_lacks():
    from controller.jobs.decisions.edits import kept_counts

    old = {"tasks": [{"restartCount": 3, "replicas": []}, {"type": "worker", "replicas": []}]}
    fields = {"tasks": [{"type": "", "restartCount": 1, "replicas": []},
                        {"type": "worker", "restartCount": 0, "replicas": []}], "backoffCount": 1}
    kept = kept_counts(old, fields)
    assert [t["restartCount"] for t in kept["tasks"]] == [3, 0] and kept["backoffCount"] == 3


def test_kept_counts_of_a_status_without_backoff_count_or_ready_total():
    from controller.jobs.decisions.edits import kept_counts

    old = {"tasks": [{"type": "worker", "restartCount": 2, "replicas": []}]}
    fields = {"tasks": [{"type": "worker", "restartCount": 0, "replicas": []}], "backoffCount": 0,
              "readyReplicas": 1, "ready": "1/1"}
    kept = kept_counts(old, fields)
    assert kept["backoffCount"] == 2 and kept["ready"] == "1/1"  # no stored total: the records' own
    assert kept_counts({**old, "ready": "0/3"}, fields)["ready"] == "1/3"
