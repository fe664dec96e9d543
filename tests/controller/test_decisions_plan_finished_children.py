"""A finished job's PodGroup and dependents as the whole plan decides them (plan.py passes `terminal` and the
clean-up policy the job finished with to upkeep.py). Issue 45: mutants that dropped either survived
tests/controller, whose upkeep tests call upkeep.py with them given."""

from __future__ import annotations

import copy

from controller.jobs.children import podgroup
from controller.jobs.decisions import plan as engine
from controller.jobs.decisions.actions import PODGROUPS, DeleteChild
from controller.jobs.training import tensorboard
from controller.kinds.tensorflow.kind import TENSORFLOW

from .decisions_plan_support import at
from .test_decisions_plan_deadlines import tf_pod
from .test_tensorflow_kind import parsed

QUEUE = {"t9kScheduler": {"queue": "q"}}
RUNNING = {"phase": "Running", "startTime": at(0)}


def stored_podgroup(job, **spec) -> dict:
    """The job's PodGroup as the API server stores it (a uid), its spec changed by `spec`."""
    desired = podgroup.desired_podgroup(TENSORFLOW, job)
    assert desired is not None
    return {**copy.deepcopy(desired), "metadata": {**desired["metadata"], "uid": "pg"},
            "spec": {**desired["spec"], **spec}}


def succeeded(job) -> dict:
    """The status of `job` finished Succeeded (its one worker succeeded)."""
    done = engine.plan(TENSORFLOW, job, RUNNING, [tf_pod(job, "worker", 0, "Succeeded")], at(5))
    assert done.terminal and done.status["phase"] == "Succeeded", done.status
    return done.status


def test_a_job_failed_by_its_deadline_under_none_deletes_its_podgroup_and_repeats_the_delete():
    # Under None a job failed by its deadline stops as under Unfinished (cleanup.finished_policy): its gang
    # PodGroup goes, the spec's None notwithstanding, in the reconcile that fails it and in every later one.
    job = parsed(("worker", 1), scheduler=QUEUE, runPolicy={"activeDeadlineSeconds": 60, "cleanUpPolicy": "None"})
    pg = stored_podgroup(job)
    name = pg["metadata"]["name"]
    failed = engine.plan(TENSORFLOW, job, RUNNING, [], at(61), podgroups=[pg])
    assert failed.terminal and failed.status["reason"] == "DeadlineExceeded"
    assert failed.podgroup == [DeleteChild(PODGROUPS, name, "pg")]
    again = engine.plan(TENSORFLOW, job, failed.status, [], at(70), podgroups=[pg])
    assert again.terminal and again.podgroup == [DeleteChild(PODGROUPS, name, "pg")]


def test_a_finished_jobs_podgroup_kept_by_none_is_not_patched_to_an_edited_spec():
    job = parsed(("worker", 1), scheduler=QUEUE, runPolicy={"cleanUpPolicy": "None"})
    status = succeeded(job)
    drifted = stored_podgroup(job, minMember=5)
    kept = engine.plan(TENSORFLOW, job, status, [], at(9), podgroups=[drifted])
    assert kept.terminal and kept.podgroup == []


def test_a_finished_job_makes_no_missing_tensorboard_and_leaves_a_drifted_one_alone():
    job = parsed(("worker", 1), tensorboardSpec={"image": "tb"})
    status = succeeded(job)
    missing = engine.plan(TENSORFLOW, job, status, [], at(9), dependents={tensorboard.RESOURCE: []})
    assert missing.terminal and missing.dependents == []
    [board] = TENSORFLOW.dependents(job).values()
    drifted = copy.deepcopy(board)
    drifted["spec"]["image"] = "an-older-image"
    left = engine.plan(TENSORFLOW, job, status, [], at(9), dependents={tensorboard.RESOURCE: [drifted]})
    assert left.dependents == []
    # (while it runs, both are made and kept in step)
    running = engine.plan(TENSORFLOW, job, RUNNING, [tf_pod(job, "worker", 0, "Running")], at(5),
                          dependents={tensorboard.RESOURCE: [drifted]})
    assert [a.name for a in running.dependents] == [board["metadata"]["name"]]
