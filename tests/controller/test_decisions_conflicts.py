"""Names that are taken (controller/jobs/decisions/conflicts.py): the cases tests/controller/test_conflicts.py does
not reach. Written against the mutants that survived the other tests (tests/mutation, RELIABILITY.md): each test names
the behaviour a surviving mutant broke."""

from __future__ import annotations

import pytest

from controller.jobs.decisions.conflicts import Conflict, TakenNames, conflict_condition, holder_of

from .test_conflicts import Clock


def test_an_owner_that_is_not_the_controller_holds_no_name():
    owner = {"kind": "ConfigMap", "name": "c", "controller": False}
    assert holder_of({"metadata": {"ownerReferences": [owner]}}) == "no controller"
    assert holder_of({"metadata": {"ownerReferences": [{"kind": "ConfigMap", "name": "c"},
                                                       {"kind": "GenericJob", "name": "a", "controller": True}]}}) \
        == "GenericJob a"


def test_a_name_freed_leaves_the_jobs_other_taken_names_waiting():
    clock = Clock()
    taken = TakenNames(clock=clock)
    taken.found("uid", Conflict("pod a-0", "x"))
    taken.found("uid", Conflict("Service a-0", "x"))
    taken.freed("uid", "pod a-0")
    assert [c.what for c in taken.conflicts("uid")] == ["Service a-0"] and taken.waits("uid", "Service a-0")
    taken.freed("uid", "pod a-1")  # never taken: nothing changes
    assert [c.what for c in taken.conflicts("uid")] == ["Service a-0"]


def test_a_job_whose_names_are_all_free_or_unwanted_is_forgotten():
    # (Per job, for the life of the controller: a job that no longer waits for a name keeps no entry.)
    taken = TakenNames(clock=Clock())
    taken.found("a", Conflict("pod a-0", "x"))
    taken.freed("a", "pod a-0")
    taken.found("b", Conflict("pod b-0", "x"))
    taken.keep_only("b", [])
    taken.found("c", Conflict("pod c-0", "x"))
    taken.forget("c")
    assert taken._jobs == {}


def test_keep_only_of_a_job_with_no_taken_name_changes_nothing():
    taken = TakenNames(clock=Clock())
    taken.keep_only("nobody", ["pod a-0"])
    assert taken._jobs == {} and taken.conflicts("nobody") == []


def test_the_names_still_wanted_may_come_as_any_iterable():
    taken = TakenNames(clock=Clock())
    for what in ("pod a-0", "pod a-1", "Service a-0"):
        taken.found("uid", Conflict(what, "x"))
    taken.keep_only("uid", (what for what in ["pod a-1", "Service a-0"]))  # a generator, read once
    assert sorted(c.what for c in taken.conflicts("uid")) == ["Service a-0", "pod a-1"]


def test_a_forgotten_job_has_no_conflict_and_no_retry():
    taken = TakenNames(clock=Clock())
    taken.found("uid", Conflict("pod a-0", "x"))
    taken.forget("uid")
    assert taken.conflicts("uid") == [] and taken.next_retry("uid") is None and not taken.waits("uid", "pod a-0")



def test_forgetting_a_job_that_never_met_a_taken_name_is_harmless_and_leaves_the_others_waiting():
    # Issue 45 (`xǁTakenNamesǁforget__mutmut_3`: `pop` without its default): the reconciler forgets every job
    # deleted (Reconciler.forget), most of which never met a taken name; a KeyError there stopped the forgetting
    # midway (the job's expectations kept for the life of the controller).
    taken = TakenNames(clock=Clock())
    taken.found("other", Conflict("pod b-0", "x"))
    taken.forget("never-taken")
    taken.forget("never-taken")
    assert [c.what for c in taken.conflicts("other")] == ["pod b-0"] and taken.waits("other", "pod b-0")

@pytest.mark.parametrize(("count", "more"), [(1, ""), (3, ""), (4, "; and 1 more"), (6, "; and 3 more")])
def test_the_condition_spells_out_three_names_and_counts_the_rest(count, more):
    conflicts = [Conflict(f"pod a-{i}", "GenericJob b") for i in range(count)]
    [shown] = conflict_condition([], conflicts, "t")
    names = "; ".join(f"pod a-{i} is taken by an object controlled by GenericJob b" for i in range(min(count, 3)))
    assert shown["message"] == f"{names}{more}. The job waits until the names are free."


def test_the_condition_says_when_names_were_taken_and_when_they_were_freed():
    taken = [Conflict("pod a-0", "GenericJob b")]
    [true] = conflict_condition([], taken, "2024-01-01T00:00:01Z")
    assert (true["status"], true["reason"], true["lastTransitionTime"]) == ("True", "NameTaken", "2024-01-01T00:00:01Z")
    [free] = conflict_condition([true], [], "2024-01-01T00:00:09Z")
    assert free == {"type": "ChildConflict", "status": "False", "reason": "NamesFree",
                    "message": "No name the job needs is taken.", "lastTransitionTime": "2024-01-01T00:00:09Z"}


def test_a_name_whose_retry_is_due_is_retried_at_once():
    clock = Clock()
    taken = TakenNames(base=1.0, cap=4.0, clock=clock)
    taken.found("uid", Conflict("pod a-0", "x"))
    assert taken.next_retry("uid") == 1.0
    clock.now += 5
    assert taken.next_retry("uid") == 0.0
