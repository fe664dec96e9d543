"""TensorFlowTrainingJob's own parts, without a server: its model, restart rule, verdict, TF_CONFIG,
validation and its generated CRD."""

from __future__ import annotations

import json

import pytest

from controller.jobs.schema.api import CleanUpPolicy, JobPhase, Outcome
from controller.jobs.training.restart import ReplicaRestart, RestartPolicyType
from controller.kinds.genericjob import crd as generic_crd
from controller.kinds.tensorflow import crd
from controller.kinds.tensorflow.kind import TENSORFLOW
from controller.kinds.tensorflow.models import TensorFlowTrainingJob
from tests.builders import TENSORFLOW as TENSORFLOW_KIND
from tests.builders import JobBuilder

POD = {"spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.11.0"}]}}


def tfjob(*replicas: tuple[str, int], **spec) -> dict:
    job = JobBuilder("tf", kind=TENSORFLOW_KIND, namespace="ns", uid="u", generation=1)
    for replica_type, count in replicas:
        job = job.replica(replica_type, count, template=POD)
    return job.spec(**spec).obj()


def parsed(*replicas, **spec) -> TensorFlowTrainingJob:
    job = TENSORFLOW.parse(tfjob(*replicas, **spec))
    assert isinstance(job, TensorFlowTrainingJob), job
    return job


def test_defaults_and_003s_spellings():
    job = parsed(("worker", 2), runPolicy={"cleanUpPolicy": "all"}, runMode={"debug": {"enable": True}})
    [worker] = job.spec.replica_specs
    assert worker.restart_policy == RestartPolicyType.NEVER and job.spec.clean_up_policy == CleanUpPolicy.ALL
    assert job.spec.run_mode.debugging and not job.spec.run_mode.paused
    assert parsed(("worker", 1)).spec.clean_up_policy == CleanUpPolicy.UNFINISHED
    both = parsed(("worker", 1), runMode={"pause": {"enable": True, "enabled": False}})
    assert not both.spec.run_mode.paused  # enabled wins
    assert parsed(("worker", 1), runMode={"pause": {"enable": True}}).spec.run_mode.paused  # 003's spelling alone


@pytest.mark.parametrize(("policy", "phase", "code", "replaced"), [
    ("ExitCode", "Failed", 137, True), ("ExitCode", "Failed", 130, True), ("ExitCode", "Failed", 143, True),
    ("ExitCode", "Failed", 138, True), ("ExitCode", "Failed", None, True), ("ExitCode", "Failed", 1, False),
    ("ExitCode", "Succeeded", 0, False), ("OnFailure", "Failed", 1, True), ("OnFailure", "Succeeded", 0, False),
    ("Always", "Succeeded", 0, True), ("Never", "Failed", 137, False),
])
def test_restart_rule(policy, phase, code, replaced):
    containers = [] if code is None else [{"name": "tensorflow", "state": "terminated", "exitCode": code}]
    assert ReplicaRestart(RestartPolicyType(policy), None, "tensorflow").replaces(phase, 0, containers, 0) is replaced


def test_the_backoff_limit_is_the_jobs():
    rule = TENSORFLOW.restart_rule(parsed(("worker", 1), runPolicy={"backoffLimit": 2}), "worker")
    assert (rule.limit, rule.container) == (2, "tensorflow")  # ExitCode judges the training container
    rule = ReplicaRestart(RestartPolicyType.ON_FAILURE, 2, "tensorflow")
    assert rule.replaces("Failed", 0, [], job_restarts=1) and not rule.replaces("Failed", 0, [], job_restarts=2)
    assert ReplicaRestart(RestartPolicyType.ON_FAILURE, None, "tensorflow").can_restart(99, 10_000)


def test_the_master_decides_success_and_any_failure_fails():
    with_chief = parsed(("chief", 1), ("worker", 2), ("ps", 1))
    assert TENSORFLOW.verdict(with_chief, {("chief", 0): None, ("worker", 0): Outcome.SUCCEEDED}) is None
    done = TENSORFLOW.verdict(with_chief, {("chief", 0): Outcome.SUCCEEDED, ("ps", 0): None})
    assert done.phase == JobPhase.SUCCEEDED
    no_chief = parsed(("worker", 2))
    assert TENSORFLOW.verdict(no_chief, {("worker", 0): Outcome.SUCCEEDED, ("worker", 1): None}).phase == \
        JobPhase.SUCCEEDED
    # Failure wins a tie.
    tie = TENSORFLOW.verdict(with_chief, {("chief", 0): Outcome.SUCCEEDED, ("ps", 0): Outcome.FAILED})
    assert tie.phase == JobPhase.FAILED and "tf-ps-0" in tie.message


def test_tf_config_and_service_ports():
    job = tfjob(("chief", 1), ("worker", 2), ("ps", 1), ("evaluator", 1))
    job["spec"]["replicaSpecs"][2]["template"] = {"spec": {"containers": [
        {"name": "tensorflow", "image": "tf", "ports": [{"name": "tfjob-port", "containerPort": 4000}]}]}}
    job = TENSORFLOW.parse(job)
    pod_spec = {"containers": [{"name": "tensorflow"}, {"name": "sidecar"}]}
    TENSORFLOW.decorate_pod(job, "evaluator", 0, 3, pod_spec, None)
    [env] = pod_spec["containers"][0]["env"]
    assert env["name"] == "TF_CONFIG" and "env" not in pod_spec["containers"][1]
    assert json.loads(env["value"]) == {
        "cluster": {"chief": ["tf-chief-0.ns.svc:2222"], "worker": ["tf-worker-0.ns.svc:2222",
                                                                    "tf-worker-1.ns.svc:2222"],
                    "ps": ["tf-ps-0.ns.svc:4000"]},
        "task": {"type": "evaluator", "index": 0}, "environment": "cloud"}
    assert TENSORFLOW.service_ports(job, "ps") == [{"name": "tfjob-port", "port": 4000, "targetPort": 4000,
                                                    "protocol": "TCP"}]
    assert TENSORFLOW.service_ports(job, "worker")[0]["port"] == 2222


@pytest.mark.parametrize(("replicas", "field", "words"), [
    ((("chief", 2),), "spec.replicaSpecs[0].replicas", "at most one replica"),
    ((("worker", 1), ("worker", 1)), "spec.replicaSpecs[1].type", "duplicate"),
])
def test_validation_names_the_field(replicas, field, words):
    problems = TENSORFLOW.parse(tfjob(*replicas))
    assert isinstance(problems, list) and any(p.field == field and words in p.message for p in problems), problems


def test_a_template_without_the_tensorflow_container_is_invalid():
    job = tfjob(("worker", 1))
    job["spec"]["replicaSpecs"][0]["template"] = {"spec": {"containers": [{"name": "main", "image": "x"}]}}
    [problem] = TENSORFLOW.parse(job)
    assert problem.field == "spec.replicaSpecs[0].template.spec.containers" and "tensorflow" in problem.message


def test_the_checked_in_crd_is_up_to_date():
    path = generic_crd.MANIFEST_DIR / crd.FILE
    assert path.read_text() == crd.manifests()[crd.FILE], "run python -m controller.kinds.tensorflow.crd"
    names = crd.tensorflow_crd()["spec"]["names"]
    assert names["shortNames"] == ["tftj"] and names["kind"] == "TensorFlowTrainingJob"


# Every field of T9k's TensorBoardSpec (its API reference), as a user may write them.
DOCUMENTED_BOARD = {
    "image": "tensorflow/tensorflow:2.11.0", "trainingLogFilesets": ["t9k://pvc/logs/run1"],
    "logDir": {"pvc": [{"name": "logs", "subPath": ["run1"]}], "s3": {"secretRef": {"name": "s3"}, "uri": ["s3://b/r"]},
               "http": {"url": ["http://logs/run1"]}},
    "suspend": False, "runMode": "running", "scheduler": {"t9kScheduler": {"queue": "default"}},
    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}
HOST_NETWORK = {"template": {"spec": {"hostNetwork": True, "containers": [{"name": "x", "image": "x"}]}},
                "volumes": [{"name": "other-team", "persistentVolumeClaim": {"claimName": "theirs"}}]}


def test_the_tensorboard_gets_the_documented_fields_as_given_and_nothing_else():
    from controller.jobs.training.tensorboard import desired

    job = parsed(("worker", 1), tensorboardSpec={**DOCUMENTED_BOARD, **HOST_NETWORK})
    assert desired(job, TENSORFLOW.api)["spec"] == DOCUMENTED_BOARD
    # A field left out stays out (no defaults added).
    assert desired(parsed(("worker", 1), tensorboardSpec={"image": "tb"}), TENSORFLOW.api)["spec"] == {"image": "tb"}


def test_the_crd_gives_tensorboard_spec_the_documented_fields_only():
    board = crd.spec_schema()["properties"]["tensorboardSpec"]
    assert set(board["properties"]) == set(DOCUMENTED_BOARD)
    assert "x-kubernetes-preserve-unknown-fields" not in json.dumps(board)
    # resources is a container's ResourceRequirements: a quantity is checked.
    assert board["properties"]["resources"]["properties"]["limits"]["additionalProperties"]["pattern"]


def test_tf_configs_cluster_lists_the_chief_workers_and_ps_in_that_order_whatever_the_specs():
    # (tfconfig.py's spelling: chief, worker, ps, as TensorFlow's documentation writes a cluster spec)
    job = TENSORFLOW.parse(tfjob(("ps", 1), ("worker", 1), ("chief", 1)))
    pod_spec = {"containers": [{"name": "tensorflow"}]}
    TENSORFLOW.decorate_pod(job, "worker", 0, 1, pod_spec, None)
    [env] = pod_spec["containers"][0]["env"]
    assert list(json.loads(env["value"])["cluster"]) == ["chief", "worker", "ps"]
