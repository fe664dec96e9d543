"""The training kit's decisions (controller/jobs/training/): the restart rule of a replica type against the job's
one budget, and the run policy's spellings. Written against the mutants that survived the other tests
(tests/mutation, RELIABILITY.md): each test names the behaviour a surviving mutant broke."""

from __future__ import annotations

import copy

import pytest

from controller.jobs.training.restart import ReplicaRestart, RestartPolicyType
from controller.kinds.tensorflow.kind import TENSORFLOW

from .test_tensorflow_kind import tfjob

NEVER, ON_FAILURE, ALWAYS, EXIT_CODE = (RestartPolicyType.NEVER, RestartPolicyType.ON_FAILURE,
                                        RestartPolicyType.ALWAYS, RestartPolicyType.EXIT_CODE)


def exited(code: int, name: str = "tensorflow") -> dict:
    return {"name": name, "state": "terminated", "exitCode": code}


@pytest.mark.parametrize("policy", list(RestartPolicyType))
@pytest.mark.parametrize("phase", ["Pending", "Running", "Unknown"])
def test_a_replica_not_finished_is_never_replaced(policy, phase):
    assert ReplicaRestart(policy, None, "tensorflow").replaces(phase, 0, (), 0) is False


def test_a_success_is_replaced_only_under_always():
    assert ReplicaRestart(ALWAYS, None, "tensorflow").replaces("Succeeded", 0) is True
    assert ReplicaRestart(ON_FAILURE, None, "tensorflow").replaces("Succeeded", 0) is False
    assert ReplicaRestart(ALWAYS, 1, "tensorflow").replaces("Succeeded", 0, (), 1) is False  # the budget is spent


def test_never_is_final_whatever_the_budget_left():
    assert ReplicaRestart(NEVER, 3, "tensorflow").why_final(0, [exited(1)], 0) == (False, "under restart policy Never")


def test_without_a_budget_a_failure_is_final_by_its_policy_not_a_limit():
    assert ReplicaRestart(ON_FAILURE, None, "tensorflow").why_final(5, [exited(1)], 5) == (
        False, "under restart policy OnFailure")


def test_exit_code_with_a_retryable_code_is_final_only_once_the_budget_is_spent():
    rule = ReplicaRestart(EXIT_CODE, 2, "tensorflow")
    assert rule.why_final(2, [exited(137)], 2) == (True, "after 2 of 2 restarts of the job (runPolicy.backoffLimit)")
    assert rule.why_final(0, [exited(1)], 0) == (
        False, "under restart policy ExitCode (its exit code is not retryable)")


def test_exit_code_judges_the_training_container_not_a_sidecar():
    rule = ReplicaRestart(EXIT_CODE, None, "tensorflow")
    assert rule.retryable([exited(1, "sidecar"), exited(137)])
    assert not rule.retryable([exited(0, "sidecar"), exited(1)])
    assert rule.replaces("Failed", 0, [exited(1, "sidecar"), exited(143)]) is True


def test_a_lost_pod_counts_against_the_budget_except_under_never():
    assert [ReplicaRestart(p, 2, "tensorflow").counts_lost_pods for p in (NEVER, ON_FAILURE, ALWAYS, EXIT_CODE)] == [
        False, True, True, True]


@pytest.mark.parametrize(("spec", "message"), [
    ({"runMode": "debug"}, "Input should be a valid dictionary or instance of RunMode"),
    ({"runMode": None}, "Input should be a valid dictionary or instance of RunMode"),
    ({"runPolicy": {"cleanUpPolicy": 5}}, "Input should be 'None', 'Unfinished' or 'All'"),
    ({"runPolicy": {"cleanUpPolicy": ["All"]}}, "Input should be 'None', 'Unfinished' or 'All'"),
])
def test_run_mode_and_clean_up_policy_of_the_wrong_type_are_spec_errors_that_say_what_is_wanted(spec, message):
    [problem] = TENSORFLOW.parse(tfjob(("worker", 1), **spec))
    assert problem.message.startswith(message), problem


def test_an_unknown_clean_up_policy_is_quoted_as_the_user_spelled_it():
    [problem] = TENSORFLOW.parse(tfjob(("worker", 1), runPolicy={"cleanUpPolicy": "some"}))
    assert '"some"' in problem.message


def test_reading_enable_as_enabled_leaves_the_given_object_as_it_was():
    obj = tfjob(("worker", 1), runMode={"debug": {"enable": True}, "pause": {"enable": False}})
    given = copy.deepcopy(obj)
    job = TENSORFLOW.parse(obj)
    assert job.spec.run_mode.debugging and not job.spec.run_mode.paused
    assert obj == given


def test_stored_records_that_cannot_be_read_are_skipped():
    # A status is read as stored: tasks without records, records that are not objects or have no name.
    from controller.jobs.decisions.status_codec import TasksStatus

    codec = TasksStatus("replicas")
    status = {"tasks": [{"type": "worker", "replicas": [None, {}, {"name": ""}, {"name": "a-worker-0"}]},
                        {"type": "ps", "replicas": None}, {"type": None}]}
    assert codec.stored_records(status) == {"a-worker-0": {"name": "a-worker-0"}}
    assert codec.stored_types(status) == [("worker", [None, {}, {"name": ""}, {"name": "a-worker-0"}]), ("ps", []),
                                          ("", [])]
    assert codec.stored_records({"tasks": None}) == {} and codec.stored_types({}) == []


def test_replica_fields_count_the_records_of_any_iterable_once():
    # A generator (read once) is counted in the tasks and in the totals alike.
    from controller.jobs.decisions.replica_records import Replica
    from controller.jobs.decisions.status_codec import TasksStatus

    records = [Replica("a-worker-0", "u0", "Running", restart_count=1), Replica("a-worker-1", "u1", "Failed")]
    fields = TasksStatus("replicas").replica_fields(item for item in [("worker", records)])
    assert [len(t["replicas"]) for t in fields["tasks"]] == [2]
    assert (fields["aggregate"]["running"], fields["aggregate"]["failed"], fields["backoffCount"]) == (1, 1, 1)


def test_a_tensorboard_left_as_it_is_is_reported_with_no_action():
    from controller.jobs.training import tensorboard
    from controller.kinds.tensorflow.kind import TENSORFLOW

    from .test_tensorflow_kind import parsed

    job = parsed(("worker", 1), tensorboardSpec={"image": "tb"})
    [board] = TENSORFLOW.dependent_status(job, {tensorboard.RESOURCE: []}, {}).values()
    assert board["action"] == "NOP"


def test_a_training_jobs_name_is_checked_as_a_label_value_and_its_services_names():
    from controller.kinds.tensorflow.kind import TENSORFLOW

    from .test_tensorflow_kind import tfjob

    [label, *_] = TENSORFLOW.parse(tfjob(("worker", 1)) | {"metadata": {"name": "j" * 64, "namespace": "ns"}})
    assert "the value of the label tensorflowtrainingjob.batch.tensorstack.dev/name" in label.message, label
    problems = TENSORFLOW.parse(tfjob(("worker", 1)) | {"metadata": {"name": "1tf", "namespace": "ns"}})
    assert [p.field for p in problems] == ["metadata.name"] and "Service name" in problems[0].message


def test_an_elastic_jobs_names_are_checked_for_the_replicas_it_runs_not_those_written():
    from controller.kinds.pytorch.kind import PYTORCH

    from .test_pytorch_kind import pjob

    obj = pjob(("worker", 1), torchrunConfig={"enabled": True},
               elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 101, "expectedReplicas": 101})
    obj["metadata"]["name"] = "j" * 53  # j...j-worker-100 is 64 characters
    problems = PYTORCH.parse(obj)
    assert isinstance(problems, list) and "-worker-100" in problems[0].message, problems


def test_a_master_that_succeeded_is_the_verdicts_rule():
    from controller.jobs.schema.api import JobPhase, Outcome
    from controller.kinds.tensorflow.kind import TENSORFLOW

    from .test_tensorflow_kind import parsed

    job = parsed(("chief", 1), ("worker", 1))
    verdict = TENSORFLOW.verdict(job, {("chief", 0): Outcome.SUCCEEDED, ("worker", 0): None})
    assert (verdict.phase, verdict.rule) == (JobPhase.SUCCEEDED, ("chief", 0))
