"""The kinds' own decisions (controller/kinds/*/kind.py): verdicts, restart rules and run-mode overrides, in the
cases the kinds' other tests do not reach. Written against the mutants that survived the other tests
(tests/mutation, RELIABILITY.md): each test names the behaviour a surviving mutant broke."""

from __future__ import annotations

import copy

from controller.jobs.api import JobPhase, Outcome
from controller.jobs.pods import Override
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.genericjob.models import RestartPolicy
from controller.kinds.tensorflow.kind import TENSORFLOW

from .plan_support import make_job
from .test_tensorflow_kind import POD, parsed


def test_a_tensorflow_job_of_parameter_servers_only_succeeds_when_every_replica_has():
    job = parsed(("ps", 2))
    succeeded = TENSORFLOW.verdict(job, {("ps", 0): Outcome.SUCCEEDED, ("ps", 1): Outcome.SUCCEEDED})
    assert (succeeded.phase, succeeded.message) == (JobPhase.SUCCEEDED, "Every replica has succeeded.")
    assert TENSORFLOW.verdict(job, {("ps", 0): Outcome.SUCCEEDED, ("ps", 1): None}) is None
    assert TENSORFLOW.verdict(job, {}) is None  # no replica at all is no success


def test_a_run_modes_override_reaches_the_tensorflow_container():
    job = parsed(("worker", 1))
    pod_spec = copy.deepcopy(POD["spec"])
    TENSORFLOW.decorate_pod(job, "worker", 0, 0, pod_spec, Override("spec.runMode.debug", command=["sleep", "inf"]))
    assert pod_spec["containers"][0]["command"] == ["sleep", "inf"]


def test_a_genericjob_replica_type_no_longer_in_the_spec_restarts_by_the_default_rule():
    job = make_job(("worker", 1, "Always", 3))
    assert GENERICJOB.restart_rule(job, "removed") == RestartPolicy()
    assert GENERICJOB.restart_rule(job, "worker").limit == 3
