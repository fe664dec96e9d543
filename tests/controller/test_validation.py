"""parse, validate and invalid_spec_message: what the CRD schema cannot reject."""

from __future__ import annotations

import pytest

from controller.jobs.children.pods import PodMode, desired_pod
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.genericjob.models import GenericJob
from controller.kinds.genericjob.validation import SpecError, invalid_spec_message, parse, validate
from controller.kinds.pytorch.kind import PYTORCH
from controller.kinds.tensorflow.kind import TENSORFLOW
from tests.builders import PYTORCH as PYTORCH_KIND
from tests.builders import TENSORFLOW as TENSORFLOW_KIND
from tests.builders import JobBuilder

CONTAINER = {"name": "main", "image": "trainer"}


def job_object(spec: dict, name: str = "generic-example") -> dict:
    return JobBuilder(name, namespace="default", uid="uid-1", generation=1).spec(**spec).obj()


def make_job(spec: dict, name: str = "generic-example") -> GenericJob:
    parsed = parse(job_object(spec, name))
    assert isinstance(parsed, GenericJob), parsed
    return parsed


def replica(replica_type: str, replicas: int = 1, **container) -> dict:
    return {"type": replica_type, "replicas": replicas, "template": {"spec": {"containers": [{**CONTAINER,
                                                                                            **container}]}}}


def errors_of(spec: dict, name: str = "generic-example") -> list[str]:
    return [str(error) for error in validate(make_job(spec, name))]


# --- the user guide's examples are valid --------------------------------------------------------

GUIDE_EXAMPLES = {
    "basic": {"successRules": [{"worker": [0]}], "failureRules": [{"worker": [0]}, {"worker": [1]}],
              "replicaSpecs": [replica("worker", 4, command=["sleep", "365"])]},
    "rules": {"successRules": [{"master": [0]}, {"worker": [0, 1, 2]}, {"master": [2], "worker": [0, 1]}],
              "failureRules": [{"master": [0]}],
              "replicaSpecs": [replica("master", 3), replica("worker", 3)]},
    "tf-config": {"service": {"ports": [{"name": "http", "port": 2222}]}, "replicaSpecs": [replica(
        "worker", 4, env=[{"name": "TF_CONFIG", "value": (
            '{"task":{"type":"$(type)","index":$(rank)},"cluster":{"worker":["$(service.worker[0].host):'
            '$(service.port[http])","$(service.worker[3].host):$(service.port[http])"]}}')}])]},
    "scheduler": {"scheduler": {"t9kScheduler": {"queue": "default", "priority": 50}},
                  "replicaSpecs": [replica("worker", 4)]},
    "debug-1": {"runMode": {"debug": {"enabled": True, "replicaSpecs": [
        {"type": "worker", "skipInitContainer": True, "command": ["/usr/bin/sshd"]}]}},
        "replicaSpecs": [replica("worker", 2)]},
    "debug-2": {"runMode": {"debug": {"enabled": True}}, "replicaSpecs": [replica("worker", 2)]},
    "pause-1": {"runMode": {"pause": {"enabled": True, "resumeSpecs": [
        {"type": "worker", "skipInitContainer": True, "command": ["/usr/bin/sshd"]}]}},
        "replicaSpecs": [replica("worker", 2)]},
    "pause-2": {"runMode": {"pause": {"enabled": True}}, "replicaSpecs": [replica("worker", 2)]},
    "clean-up": {"cleanUpPolicy": "Unfinished", "replicaSpecs": [replica("worker")]},
    "restart": {"replicaSpecs": [{**replica("master"), "restartPolicy": {"policy": "Always", "limit": 3}},
                                 {**replica("worker", 2), "restartPolicy": {"policy": "OnFailure", "limit": 1}}]},
}


@pytest.mark.parametrize("name", GUIDE_EXAMPLES)
def test_the_user_guides_examples_are_valid_and_make_pods(name):
    job = make_job(GUIDE_EXAMPLES[name])
    assert validate(job) == []
    for spec in job.spec.replica_specs:  # what validate accepts, desired_pod can build
        for rank in range(spec.replicas):
            for mode in PodMode:
                desired_pod(GENERICJOB, job, spec.type, rank, mode=mode)


def test_the_guides_resources_example_as_written_lacks_name_and_image():
    spec = {"replicaSpecs": [{"type": "worker", "replicas": 4, "template": {"spec": {"containers": [{"resources": {
        "limits": {"cpu": 4, "memory": "4Gi"}, "requests": {"cpu": 2, "memory": "2Gi"}}}]}}}]}
    assert errors_of(spec) == [
        "spec.replicaSpecs[0].template.spec.containers[0].name: required: every container needs one",
        "spec.replicaSpecs[0].template.spec.containers[0].image: required: every container needs one",
    ]


# --- rules ------------------------------------------------------------------------------------


def test_rules_naming_unknown_types():
    spec = {"successRules": [{"worker": [0]}, {"master": [0]}], "replicaSpecs": [replica("worker", 4)]}
    assert errors_of(spec) == ['spec.successRules[1]: replica type "master" is not in spec.replicaSpecs']


def test_rules_with_ranks_out_of_range():
    spec = {"failureRules": [{"worker": [0, 4, "5"]}], "successRules": [{"worker": [3]}],
            "replicaSpecs": [replica("worker", 4)]}
    assert errors_of(spec) == ['spec.failureRules[0]: rank 4 of "worker" is out of range [0, 4)',
                               'spec.failureRules[0]: rank 5 of "worker" is out of range [0, 4)']


def test_negative_ranks_and_types_without_replicas():
    spec = {"successRules": [{"worker": [-1]}, {"idle": [0]}],
            "replicaSpecs": [replica("worker", 4), replica("idle", 0)]}
    assert errors_of(spec) == ['spec.successRules[0]: rank -1 of "worker" is out of range [0, 4)',
                               'spec.successRules[1]: rank 0 of "idle" is out of range [0, 0)']


def test_a_rule_naming_no_replica_would_be_met_at_once():
    spec = {"successRules": [{}], "failureRules": [{"worker": []}], "replicaSpecs": [replica("worker")]}
    assert errors_of(spec) == ["spec.successRules[0]: a rule must name at least one replica",
                               "spec.failureRules[0]: a rule must name at least one replica"]


# --- replica types, run modes, templates --------------------------------------------------------


def test_duplicate_replica_types():
    spec = {"replicaSpecs": [replica("worker"), replica("master"), replica("worker")]}
    assert errors_of(spec) == ['spec.replicaSpecs[2].type: duplicate replica type "worker" (also spec.replicaSpecs[0])']


def test_run_mode_overrides_naming_unknown_or_repeated_types():
    spec = {"runMode": {"debug": {"replicaSpecs": [{"type": "ps"}]},
                        "pause": {"resumeSpecs": [{"type": "worker"}, {"type": "worker"}, {"type": "chief"}]}},
            "replicaSpecs": [replica("worker")]}
    assert errors_of(spec) == [
        'spec.runMode.debug.replicaSpecs[0].type: replica type "ps" is not in spec.replicaSpecs',
        'spec.runMode.pause.resumeSpecs[1].type: duplicate replica type "worker"',
        'spec.runMode.pause.resumeSpecs[2].type: replica type "chief" is not in spec.replicaSpecs',
    ]


@pytest.mark.parametrize(("template", "expected"), [
    ({}, "spec.replicaSpecs[0].template.spec: a pod template needs a spec with at least one container"),
    ({"spec": {}}, "spec.replicaSpecs[0].template.spec.containers: a pod template needs at least one container"),
    ({"spec": {"containers": []}},
     "spec.replicaSpecs[0].template.spec.containers: a pod template needs at least one container"),
    ({"spec": {"containers": [CONTAINER], "initContainers": "x"}},
     "spec.replicaSpecs[0].template.spec.initContainers: must be a list of containers"),
    ({"spec": {"containers": ["x"]}}, "spec.replicaSpecs[0].template.spec.containers[0]: must be a container object"),
    ({"spec": {"containers": [{**CONTAINER, "command": "sleep 1"}]}},
     "spec.replicaSpecs[0].template.spec.containers[0].command: must be a list of strings"),
    ({"spec": {"containers": [{**CONTAINER, "args": [1]}]}},
     "spec.replicaSpecs[0].template.spec.containers[0].args: must be a list of strings"),
    ({"spec": {"containers": [{**CONTAINER, "env": {"A": "1"}}]}},
     "spec.replicaSpecs[0].template.spec.containers[0].env: must be a list of variables"),
    ({"spec": {"containers": [{**CONTAINER, "env": [{"value": "1"}]}]}},
     "spec.replicaSpecs[0].template.spec.containers[0].env[0]: must be an object with a name"),
    ({"spec": {"containers": [{**CONTAINER, "env": [{"name": "A", "value": 1}]}]}},
     "spec.replicaSpecs[0].template.spec.containers[0].env[0].value: must be a string"),
    ({"spec": {"containers": [CONTAINER], "initContainers": [{"name": "init"}]}},
     "spec.replicaSpecs[0].template.spec.initContainers[0].image: required: every container needs one"),
])
def test_templates_the_controller_cannot_make_pods_from(template, expected):
    assert errors_of({"replicaSpecs": [{"type": "worker", "template": template}]}) == [expected]


# --- variables ----------------------------------------------------------------------------------


def test_unresolvable_variables_name_the_field():
    spec = {"replicaSpecs": [replica("master"), replica("worker", 4, env=[
        {"name": "OK", "value": "$(rank) $(HOME)"}, {"name": "BAD", "value": "$(service.worker[4].host)"}])],
        "service": {"ports": [{"name": "http", "port": 80}]}}
    assert errors_of(spec) == [
        "spec.replicaSpecs[1].template.spec.containers[0].env[1].value: "
        '$(service.worker[4].host): rank 4 of "worker" is out of range [0, 4)']


def test_every_unresolvable_variable_is_reported():
    spec = {"replicaSpecs": [{"type": "worker", "template": {"spec": {
        "initContainers": [{**CONTAINER, "args": ["$(replicas[ps])"]}],
        "containers": [{**CONTAINER, "command": ["$(service.port[http])"], "args": ["$(service.worker[0].host)"]}]}}}],
        "runMode": {"debug": {"replicaSpecs": [{"type": "worker", "command": ["echo", "$(replicas[chief])"]}]},
                    "pause": {"resumeSpecs": [{"type": "worker", "args": ["$(service.port[x])"]}]}}}
    assert errors_of(spec) == [
        'spec.replicaSpecs[0].template.spec.initContainers[0].args[0]: $(replicas[ps]): replica type "ps" is not '
        "in spec.replicaSpecs",
        "spec.replicaSpecs[0].template.spec.containers[0].command[0]: $(service.port[http]): service variables need "
        "spec.service, which is not set",
        "spec.replicaSpecs[0].template.spec.containers[0].args[0]: $(service.worker[0].host): service variables need "
        "spec.service, which is not set",
        'spec.runMode.debug.replicaSpecs[0].command[1]: $(replicas[chief]): replica type "chief" is not in '
        "spec.replicaSpecs",
        "spec.runMode.pause.resumeSpecs[0].args[0]: $(service.port[x]): service variables need spec.service, which "
        "is not set",
    ]


# --- names ----------------------------------------------------------------------------------------


def test_job_names_longer_than_a_label_value():
    assert errors_of({"replicaSpecs": [replica("worker")]}, name="j" * 63) == []
    assert errors_of({"replicaSpecs": [replica("worker")]}, name="j" * 64) == [
        "metadata.name: must be no more than 63 characters: it is the value of the label "
        "genericjob.batch.tensorstack.dev/name on every pod (it has 64)"]


def test_service_names_must_be_dns_1035_labels_of_63_characters():
    spec = {"service": {"ports": [{"name": "http", "port": 80}]}, "replicaSpecs": [replica("worker", 10)]}
    fits = "j" * (63 - len("-worker-9"))
    assert errors_of(spec, name=fits) == []
    assert errors_of(spec, name=fits + "j") == [
        f'metadata.name: the Service name "{fits}j-worker-9" (replica type "worker") must be a DNS-1035 label of '
        "at most 63 characters: lower case letters, digits and '-', starting with a letter"]
    assert len(errors_of(spec, name="1job")) == 1 and len(errors_of(spec, name="my.job")) == 1
    assert errors_of({**spec, "replicaSpecs": [replica("worker", 0), replica("w")]}, name=fits + "jjj") == []


def test_without_services_pod_names_only_need_to_be_subdomains():
    spec = {"replicaSpecs": [replica("worker", 10)]}
    assert errors_of(spec, name="1.job") == []
    assert errors_of(spec, name="j" * 63) == []


# --- parse ----------------------------------------------------------------------------------------


def parse_errors(spec: dict) -> list[str]:
    parsed = parse(job_object(spec))
    assert isinstance(parsed, list)
    return [str(error) for error in parsed]


def test_parse_gives_json_paths_and_readable_messages():
    spec = {"replicaSpecs": [{"type": "Worker", "replicas": -1, "template": {},
                              "restartPolicy": {"policy": "Sometimes"}}],
            "cleanUpPolicy": "Some", "service": {"ports": [{"port": 80, "targetPort": [1]}]}}
    assert parse_errors(spec) == [  # in the model's field order
        "spec.service.ports[0].targetPort: Input should be a valid integer or Input should be a valid string",
        "spec.cleanUpPolicy: Input should be 'None', 'Unfinished' or 'All' (got \"Some\")",
        "spec.replicaSpecs[0].type: String should match pattern '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' (got \"Worker\")",
        "spec.replicaSpecs[0].replicas: Input should be greater than or equal to 0 (got -1)",
        "spec.replicaSpecs[0].restartPolicy.policy: "
        "Input should be 'Never', 'OnFailure' or 'Always' (got \"Sometimes\")",
    ]


def test_parse_missing_fields_and_bad_ranks():
    assert parse_errors({}) == ["spec.replicaSpecs: Field required"]
    assert parse_errors({"replicaSpecs": [{"template": {}}]}) == ["spec.replicaSpecs[0].type: Field required"]
    assert parse_errors({"replicaSpecs": [replica("w")], "successRules": [{"w": ["x"]}]}) == [
        "spec.successRules: rank 'x' is not an integer"]
    assert parse_errors({"replicaSpecs": []}) == [
        "spec.replicaSpecs: List should have at least 1 item after validation, not 0"]


def test_parse_malformed_metadata_and_a_missing_spec():
    assert parse({"spec": {}}) == [SpecError("metadata", "malformed object metadata: KeyError('metadata')")]
    assert [str(e) for e in parse({"metadata": {"name": "x"}})] == ["spec.replicaSpecs: Field required"]
    assert [str(e) for e in parse({"metadata": {"name": 3}, "spec": {"replicaSpecs": [replica("w")]}})] == [
        "metadata.name: Input should be a valid string (got 3)"]


def test_parse_accepts_int_or_string_ranks():
    job = make_job({"replicaSpecs": [replica("worker", 2)], "successRules": [{"worker": ["0", 1]}]})
    assert job.spec.success_rules == [{"worker": [0, 1]}]


# --- the message ----------------------------------------------------------------------------------


def test_invalid_spec_message():
    errors = [SpecError("spec.successRules[0]", 'replica type "master" is not in spec.replicaSpecs')]
    assert invalid_spec_message(errors) == 'spec.successRules[0]: replica type "master" is not in spec.replicaSpecs'
    many = [SpecError(f"f{i}", "bad") for i in range(7)]
    assert invalid_spec_message(many) == "f0: bad; f1: bad; f2: bad; f3: bad; f4: bad; and 2 more"


# --- every edit: at least one replica, the master kept, TF/PyTorch replica types fixed --------------------------


def test_a_job_needs_at_least_one_replica_and_one_type_may_be_zero():
    assert errors_of({"replicaSpecs": [replica("worker", 0), replica("ps", 0)]}) == [
        "spec.replicaSpecs: a job needs at least one replica: the replicas of all its types add up to 0"]
    assert errors_of({"replicaSpecs": [replica("worker", 0), replica("ps", 1)]}) == []


def test_a_scale_down_below_a_rule_is_invalid():
    spec = {"failureRules": [{"worker": [0]}, {"worker": [1]}], "replicaSpecs": [replica("worker", 1)]}
    assert errors_of(spec) == ['spec.failureRules[1]: rank 1 of "worker" is out of range [0, 1)']


def tf_object(*replicas: tuple[str, int], tasks: list[str] | None = None) -> dict:
    pod = {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}
    job = JobBuilder("tf", kind=TENSORFLOW_KIND, namespace="ns", uid="u", generation=2)
    for replica_type, count in replicas:
        job = job.replica(replica_type, count, template=pod)
    obj = job.obj()
    if tasks is not None:
        obj["status"] = {"tasks": [{"type": t, "replicaStatus": []} for t in tasks]}
    return obj


def pt_object(*replicas: tuple[str, int], tasks: list[str] | None = None, **spec) -> dict:
    pod = {"spec": {"containers": [{"name": "pytorch", "image": "pt"}]}}
    job = JobBuilder("pj", kind=PYTORCH_KIND, namespace="ns", uid="u", generation=2)
    for replica_type, count in replicas:
        job = job.replica(replica_type, count, template=pod)
    obj = job.spec(**spec).obj()
    if tasks is not None:
        obj["status"] = {"tasks": [{"type": t, "replicas": []} for t in tasks]}
    return obj


def problems(kind, obj: dict) -> list[str]:
    parsed = kind.parse(obj)
    return [str(p) for p in parsed] if isinstance(parsed, list) else []


@pytest.mark.parametrize(("replicas", "words"), [
    ((("chief", 0), ("worker", 2)), 'spec.replicaSpecs[0].replicas: the job\'s success is judged by the chief'),
    ((("ps", 1), ("worker", 0)), "spec.replicaSpecs[1].replicas: the job's success is judged by worker 0"),
    ((("ps", 0), ("worker", 0)), "spec.replicaSpecs: a job needs at least one replica"),
])
def test_a_tensorflow_job_keeps_the_replica_it_is_judged_by(replicas, words):
    found = problems(TENSORFLOW, tf_object(*replicas))
    assert any(p.startswith(words) for p in found), found
    assert problems(TENSORFLOW, tf_object(("chief", 1), ("worker", 0))) == []
    assert problems(TENSORFLOW, tf_object(("ps", 0), ("evaluator", 1))) == []  # no master: all must succeed


@pytest.mark.parametrize(("replicas", "words"), [
    ((("master", 0), ("worker", 2)), 'spec.replicaSpecs[0].replicas: a replica type "master" has exactly one'),
    ((("worker", 2), ("master", 2)), 'spec.replicaSpecs[1].replicas: a replica type "master" has exactly one'),
    ((("worker", 0), ("node", 2)), 'spec.replicaSpecs[0].replicas: without a "master" type, rank 0 of the first'),
    ((("worker", 0),), "spec.replicaSpecs: a job needs at least one replica"),
])
def test_a_pytorch_master_never_moves(replicas, words):
    found = problems(PYTORCH, pt_object(*replicas))
    assert any(p.startswith(words) for p in found), found
    assert problems(PYTORCH, pt_object(("master", 1), ("worker", 0))) == []
    assert problems(PYTORCH, pt_object(("worker", 1), ("node", 0))) == []


@pytest.mark.parametrize(("kind", "make", "types"), [
    (TENSORFLOW, tf_object, ("worker", "ps")),
    (PYTORCH, pt_object, ("worker", "node")),
])
def test_training_job_replica_types_and_their_order_are_those_the_status_recorded(kind, make, types):
    first, second = types
    assert problems(kind, make((first, 1), (second, 1), tasks=[first, second])) == []
    assert problems(kind, make((first, 1), (second, 1))) == []  # a new job: nothing recorded yet
    assert problems(kind, make((first, 1), (second, 0), tasks=[first, second])) == []  # counts may change
    for changed in ([(second, 1), (first, 1)], [(first, 1)], [(first, 1), (second, 1), ("evaluator", 1)]):
        found = problems(kind, make(*changed, tasks=[first, second]))
        assert any(p.startswith("spec.replicaSpecs: the replica types and their order cannot change once the "
                                f"job exists (it has [{first}, {second}]") for p in found), found
