"""The clean-up policy a job is judged by (controller/jobs/cleanup.py). Written against the mutants that survived
the other tests (tests/mutation, RELIABILITY.md): each test names the behaviour a surviving mutant broke."""

from __future__ import annotations

import pytest

from controller.jobs.api import CleanUpPolicy
from controller.jobs.cleanup import finished_policy

from .plan_support import make_job


@pytest.mark.parametrize("phase", ["", "Pending", "Running", "Paused"])
def test_a_job_not_finished_is_judged_by_its_spec(phase):
    job = make_job(("worker", 1), cleanup="All")
    assert finished_policy(job, {"phase": phase, "cleanUpPolicy": "None"}) == CleanUpPolicy.ALL


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_job_keeps_the_policy_it_finished_with_whatever_the_spec_says_now(phase):
    job = make_job(("worker", 1), cleanup="All")
    assert finished_policy(job, {"phase": phase, "cleanUpPolicy": "None"}) == CleanUpPolicy.NONE
    assert finished_policy(job, {"phase": phase, "cleanUpPolicy": "Unfinished"}) == CleanUpPolicy.UNFINISHED


def test_a_job_finished_without_a_stored_policy_or_a_bad_one_is_judged_by_its_spec():
    job = make_job(("worker", 1), cleanup="Unfinished")
    assert finished_policy(job, {"phase": "Succeeded"}) == CleanUpPolicy.UNFINISHED
    assert finished_policy(job, {"phase": "Failed", "cleanUpPolicy": "Sometimes"}) == CleanUpPolicy.UNFINISHED
