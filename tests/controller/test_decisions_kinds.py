"""The kinds' own decisions (controller/kinds/*/kind.py): verdicts, restart rules and run-mode overrides, in the
cases the kinds' other tests do not reach. Written against the mutants that survived the other tests
(tests/mutation, RELIABILITY.md): each test names the behaviour a surviving mutant broke."""

from __future__ import annotations

import copy

from controller.jobs.children.pods import Override
from controller.jobs.schema.api import JobPhase, Outcome
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
    assert TENSORFLOW.verdict(job, {("ps", 0): None, ("ps", 1): None}) is None
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


def test_a_tensorflow_job_asks_for_its_tensorboard_only_with_a_tensorboard_spec():
    from controller.jobs.training import tensorboard

    assert TENSORFLOW.dependents(parsed(("worker", 1))) == {}
    job = parsed(("worker", 1), tensorboardSpec={"image": "tb"})
    assert TENSORFLOW.dependents(job) == {tensorboard.RESOURCE: tensorboard.desired(job, TENSORFLOW.api)}


def test_a_tensorflow_job_reports_its_tensorboard_only_with_a_tensorboard_spec():
    from controller.jobs.training import tensorboard

    assert TENSORFLOW.dependent_status(parsed(("worker", 1)), {tensorboard.RESOURCE: []}, {}) == {}
    job = parsed(("worker", 1), tensorboardSpec={"image": "tb"})
    reported = TENSORFLOW.dependent_status(job, {tensorboard.RESOURCE: []}, {tensorboard.RESOURCE: "Create"})
    assert reported == {"tensorboard": tensorboard.status(job, [], "Create")}
    assert reported["tensorboard"]["action"] == "Create"


def test_tensorflow_service_ports_of_a_type_not_in_the_spec_are_the_default_port():
    ports = TENSORFLOW.service_ports(parsed(("worker", 1)), "removed")
    assert ports == TENSORFLOW.service_ports(parsed(("worker", 1)), "worker")


def test_a_tensorflow_failure_names_the_first_failed_replica_by_type_and_rank():
    job = parsed(("worker", 3))
    verdict = TENSORFLOW.verdict(job, {("worker", 0): None, ("worker", 1): Outcome.FAILED,
                                       ("worker", 2): Outcome.FAILED})
    assert (verdict.rule, verdict.message, verdict.replicas) == (
        ("worker", 1), "Replica tf-worker-1 has failed.", (("worker", 1), ("worker", 2)))


def test_a_tensorflow_success_names_the_master_replica():
    chief = parsed(("chief", 1), ("worker", 2))
    assert TENSORFLOW.verdict(chief, {("chief", 0): Outcome.SUCCEEDED, ("worker", 0): None, ("worker", 1): None}
                              ).message == "The master replica tf-chief-0 has succeeded."
    workers = parsed(("worker", 2))
    assert TENSORFLOW.verdict(workers, {("worker", 0): Outcome.SUCCEEDED, ("worker", 1): None}
                              ).message == "The master replica tf-worker-0 has succeeded."


def pytorch(*replicas, **spec):
    from .test_pytorch_kind import parsed as parsed_pytorch

    return parsed_pytorch(*replicas, **spec)


def test_a_pytorch_jobs_deadline_is_its_run_policys():
    from controller.kinds.pytorch.kind import PYTORCH

    assert PYTORCH.active_deadline(pytorch(("worker", 1))) is None
    assert PYTORCH.active_deadline(pytorch(("worker", 1), runPolicy={"activeDeadlineSeconds": 60})) == 60


def test_a_pytorch_jobs_invalid_spec_message_names_the_field():
    from controller.kinds.pytorch.kind import PYTORCH

    from .test_pytorch_kind import pjob

    problems = PYTORCH.parse(pjob(("Worker", 1)))
    assert "spec.replicaSpecs[0].type" in PYTORCH.invalid_spec_message(problems)


def test_a_pytorch_job_asks_for_and_reports_its_tensorboard_only_with_a_tensorboard_spec():
    from controller.jobs.training import tensorboard
    from controller.kinds.pytorch.kind import PYTORCH

    plain = pytorch(("worker", 1))
    assert PYTORCH.dependents(plain) == {} and PYTORCH.dependent_status(plain, {tensorboard.RESOURCE: []}, {}) == {}
    job = pytorch(("worker", 1), tensorboardSpec={"image": "tb"})
    assert PYTORCH.dependents(job) == {tensorboard.RESOURCE: tensorboard.desired(job, PYTORCH.api)}
    reported = PYTORCH.dependent_status(job, {tensorboard.RESOURCE: []}, {tensorboard.RESOURCE: "Create"})
    assert reported == {"tensorboard": tensorboard.status(job, [], "Create")}


def test_a_pytorch_failure_names_the_failed_replica_of_lowest_global_rank():
    from controller.kinds.pytorch.kind import PYTORCH

    job = pytorch(("worker", 2), ("master", 1))  # the master is global rank 0 wherever it is listed
    verdict = PYTORCH.verdict(job, {("master", 0): Outcome.FAILED, ("worker", 0): None, ("worker", 1): Outcome.FAILED})
    assert (verdict.rule, verdict.message, verdict.replicas) == (
        ("master", 0), "Replica pj-master-0 has failed.", (("master", 0), ("worker", 1)))
    succeeded = PYTORCH.verdict(job, {("master", 0): Outcome.SUCCEEDED, ("worker", 0): None, ("worker", 1): None})
    assert succeeded.message == "The master replica pj-master-0 has succeeded."


def resumed_pod(template: dict, **resume) -> dict:
    from controller.jobs.children.pods import desired_pod
    from controller.kinds.pytorch.kind import PYTORCH

    job = pytorch(("worker", 1, template), torchrunConfig={"enabled": True},
                  runMode={"pause": {"enabled": False, "resumeSpecs": [{"type": "worker", **resume}]}})
    return desired_pod(PYTORCH, job, "worker", 0, mode="resume")["spec"]


def with_sidecar(args=None) -> dict:
    training = {"name": "pytorch", "image": "pytorch/pytorch:2.0.0", **({"args": args} if args is not None else {})}
    return {"spec": {"initContainers": [{"name": "init", "image": "busybox"}],
                     "containers": [training, {"name": "sidecar", "image": "busybox", "args": ["serve"]}]}}


def test_under_torchrun_a_resume_runs_its_args_by_torchrun_and_gives_the_other_containers_its_override():
    spec = resumed_pod(with_sidecar(["train.py"]), command=["python"], args=["train.py", "--resume"])
    training, sidecar = spec["containers"]
    assert training["command"] == ["torchrun"] and training["args"][-2:] == ["train.py", "--resume"]
    assert (sidecar["command"], sidecar["args"]) == (["python"], ["train.py", "--resume"])
    assert spec["initContainers"] == [{"name": "init", "image": "busybox"}]


def test_under_torchrun_a_resume_without_args_runs_the_templates_args():
    spec = resumed_pod(with_sidecar(["train.py"]), command=["python"])
    assert spec["containers"][0]["args"][-1] == "train.py"
    sidecar = spec["containers"][1]
    assert (sidecar["command"], sidecar["args"]) == (["python"], ["serve"])


def test_under_torchrun_a_resume_may_skip_the_init_containers():
    assert "initContainers" not in resumed_pod(with_sidecar(["train.py"]), skipInitContainer=True)
    assert "initContainers" in resumed_pod(with_sidecar(["train.py"]), skipInitContainer=False)


def test_under_torchrun_a_training_container_without_args_runs_torchrun_with_no_script():
    spec = resumed_pod(with_sidecar())
    assert spec["containers"][0]["command"] == ["torchrun"] and "train.py" not in spec["containers"][0]["args"]


def test_pytorch_service_ports_of_a_type_not_in_the_spec_are_the_default_port():
    from controller.kinds.pytorch.kind import PYTORCH

    job = pytorch(("worker", 1))
    assert PYTORCH.service_ports(job, "removed") == PYTORCH.service_ports(job, "worker")
