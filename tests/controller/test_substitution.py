"""Variable substitution (spec/004, section 变量替换) as pure functions."""

from __future__ import annotations

import copy

import pytest

from controller.jobs.children.pods import desired_pod
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.genericjob.models import GenericJob
from controller.kinds.genericjob.substitution import (
    JobVariables,
    SubstitutionError,
    Variables,
    pod_spec_problems,
    substitute_pod_spec,
)
from tests.builders import JobBuilder

TF_CONFIG = ('{"task":{"type":"$(type)","index":$(rank)},"cluster":{"worker":["$(service.worker[0].host):'
             '$(service.port[http])","$(service.worker[1].host):$(service.port[http])","$(service.worker[2].host):'
             '$(service.port[http])","$(service.worker[3].host):$(service.port[http])"]}}')


def make_job(spec: dict, name: str = "generic-example") -> GenericJob:
    return JobBuilder(name, namespace="default", uid="u-1").spec(**spec).model()


def container(**fields) -> dict:
    return {"name": "main", "image": "busybox:1.36", **fields}


def tf_job() -> GenericJob:
    """The user guide's TensorFlow example, with the Service port the guide's Service section gives."""
    return make_job({
        "service": {"ports": [{"name": "http", "port": 2222}]},
        "replicaSpecs": [{"type": "worker", "replicas": 4, "template": {"spec": {"containers": [{
            "command": ["python", "/mnt/training.py"],
            "image": "tensorflow/tensorflow:2.11.0",
            "name": "tensorflow",
            "env": [{"name": "TF_CONFIG", "value": TF_CONFIG}],
        }]}}}],
    })


def two_types(service: bool = True) -> GenericJob:
    spec = {"replicaSpecs": [
        {"type": "master", "replicas": 1, "template": {"spec": {"containers": [container()]}}},
        {"type": "worker", "replicas": 3, "template": {"spec": {"containers": [container()]}}},
    ]}
    if service:
        spec["service"] = {"ports": [{"name": "http", "port": 2222}, {"name": "grpc", "port": 9000},
                                     {"name": "one", "port": 1}]}
    return make_job(spec)


@pytest.mark.parametrize("rank", range(4))
def test_tf_config_of_the_user_guide(rank):
    pod = desired_pod(GENERICJOB, tf_job(), "worker", rank, mode="immediate")
    env = pod["spec"]["containers"][0]["env"]
    hosts = ",".join(f'"generic-example-worker-{i}:2222"' for i in range(4))
    assert env == [{"name": "TF_CONFIG", "value": (
        f'{{"task":{{"type":"worker","index":{rank}}},"cluster":{{"worker":[{hosts}]}}}}')}]


def test_tf_config_exact_string_of_rank_1():
    pod = desired_pod(GENERICJOB, tf_job(), "worker", 1, mode="immediate")
    assert pod["spec"]["containers"][0]["env"][0]["value"] == (
        '{"task":{"type":"worker","index":1},"cluster":{"worker":["generic-example-worker-0:2222",'
        '"generic-example-worker-1:2222","generic-example-worker-2:2222","generic-example-worker-3:2222"]}}')


@pytest.mark.parametrize(("text", "expected"), [
    ("$(type)", "worker"),
    ("$(rank)", "2"),
    ("$(replicas[worker])", "3"),
    ("$(replicas[master])", "1"),
    ("$(service.master[0].host)", "generic-example-master-0"),
    ("$(service.worker[2].host)", "generic-example-worker-2"),
    ("$(service.port[http])", "2222"),
    ("$(service.port[grpc])", "9000"),
    ("--rank=$(rank) --of=$(replicas[worker]) --type=$(type)", "--rank=2 --of=3 --type=worker"),
    ("no variables at all", "no variables at all"),
    ("", ""),
])
def test_each_variable(text, expected):
    assert Variables.of(two_types(), "worker", 2).expand(text, "f") == expected


@pytest.mark.parametrize("text", [
    "$(HOME)",  # an ordinary env reference: the kubelet expands it
    "$(MY_VAR)/bin",
    "$(service.worker[0].ip)",  # not a recognised form
    "$(replicas)",
    "$(Type)",
    "$(service.worker.host)",
    "$(rank",
    "$$(rank)",  # the kubelet's escape: the kubelet turns it into a literal $(rank)
    "$$(service.port[nope])",
    "price: $5",
])
def test_other_references_are_left_untouched(text):
    assert Variables.of(two_types(), "worker", 0).expand(text, "f") == text


def test_escape_before_a_variable_keeps_the_escape():
    # `$$$(rank)`: the kubelet later reads `$$` as `$`, so the replica sees `$` followed by its rank.
    assert Variables.of(two_types(), "worker", 1).expand("$$$(rank)", "f") == "$$1"


def test_a_type_named_port_is_a_host_not_a_port():
    job = make_job({"service": {"ports": [{"name": "http", "port": 80}]}, "replicaSpecs": [
        {"type": "port", "replicas": 2, "template": {"spec": {"containers": [container()]}}}]})
    variables = Variables.of(job, "port", 0)
    assert variables.expand("$(service.port[1].host)", "f") == "generic-example-port-1"
    assert variables.expand("$(service.port[http])", "f") == "80"


@pytest.mark.parametrize(("text", "message"), [
    ("$(replicas[ps])", '$(replicas[ps]): replica type "ps" is not in spec.replicaSpecs'),
    ("$(service.ps[0].host)", '$(service.ps[0].host): replica type "ps" is not in spec.replicaSpecs'),
    ("$(service.worker[3].host)", '$(service.worker[3].host): rank 3 of "worker" is out of range [0, 3)'),
    ("$(service.worker[x].host)", '$(service.worker[x].host): rank "x" is not a non-negative integer'),
    ("$(service.worker[-1].host)", '$(service.worker[-1].host): rank "-1" is not a non-negative integer'),
    ("$(service.port[ssh])", '$(service.port[ssh]): no port named "ssh" in spec.service.ports'),
    ("a $(service.port[]) b", '$(service.port[]): no port named "" in spec.service.ports'),
])
def test_unresolvable_variables_name_the_field(text, message):
    with pytest.raises(SubstitutionError) as caught:
        Variables.of(two_types(), "worker", 0).expand(text, "spec.x")
    assert (caught.value.field, caught.value.message) == ("spec.x", message)
    assert str(caught.value) == f"spec.x: {message}"


@pytest.mark.parametrize("text", ["$(service.worker[0].host)", "$(service.port[http])"])
def test_service_variables_need_spec_service(text):
    with pytest.raises(SubstitutionError, match=r"need spec\.service, which is not set"):
        Variables.of(two_types(service=False), "worker", 0).expand(text, "f")


def test_service_without_ports_gives_hosts_but_no_ports():
    job = make_job({"service": {}, "replicaSpecs": [
        {"type": "worker", "replicas": 2, "template": {"spec": {"containers": [container()]}}}]})
    variables = Variables.of(job, "worker", 0)
    assert variables.expand("$(service.worker[1].host)", "f") == "generic-example-worker-1"
    with pytest.raises(SubstitutionError, match='no port named "http"'):
        variables.expand("$(service.port[http])", "f")


def test_substitution_covers_command_args_env_of_containers_and_init_containers():
    spec = {
        "initContainers": [container(command=["init-$(rank)"], args=["$(type)"],
                                     env=[{"name": "A", "value": "$(rank)"}])],
        "containers": [
            container(command=["run", "$(type)"], args=["--rank", "$(rank)"],
                      env=[{"name": "R", "value": "$(rank)"},
                           {"name": "FROM", "valueFrom": {"fieldRef": {"fieldPath": "$(rank)"}}},
                           {"name": "EMPTY"}]),
            container(name="side", image="$(type)", workingDir="/$(rank)"),
        ],
    }
    substitute_pod_spec(spec, Variables.of(two_types(), "worker", 1), "spec")
    init, main, side = spec["initContainers"][0], spec["containers"][0], spec["containers"][1]
    assert (init["command"], init["args"], init["env"][0]["value"]) == (["init-1"], ["worker"], "1")
    assert (main["command"], main["args"]) == (["run", "worker"], ["--rank", "1"])
    assert main["env"] == [{"name": "R", "value": "1"},
                           {"name": "FROM", "valueFrom": {"fieldRef": {"fieldPath": "$(rank)"}}},  # not substituted
                           {"name": "EMPTY"}]
    assert (side["image"], side["workingDir"]) == ("$(type)", "/$(rank)")  # only command, args and env values


def test_malformed_templates_are_skipped_not_crashed_on():
    spec = {"containers": ["nonsense", container(command="not a list", env=[None, {"value": 3}], args=[1, "$(rank)"])],
            "initContainers": {"not": "a list"}}
    substitute_pod_spec(spec, Variables.of(two_types(), "worker", 0), "spec")
    assert spec["containers"][1]["args"] == [1, "0"]


def test_error_field_is_the_path_in_the_job():
    job = make_job({"replicaSpecs": [
        {"type": "master", "template": {"spec": {"containers": [container()]}}},
        {"type": "worker", "replicas": 4, "template": {"spec": {"containers": [container(
            env=[{"name": "OK", "value": "$(rank)"}, {"name": "BAD", "value": "$(service.worker[0].host)"}])]}}},
    ]})
    with pytest.raises(SubstitutionError) as caught:
        desired_pod(GENERICJOB, job, "worker", 0, mode="immediate")
    assert caught.value.field == "spec.replicaSpecs[1].template.spec.containers[0].env[1].value"


def test_problems_collects_every_error_without_changing_the_spec():
    spec = {"initContainers": [container(args=["$(replicas[x])"])],
            "containers": [container(command=["$(service.port[a]) $(service.port[b])"])]}
    before = copy.deepcopy(spec)
    problems = pod_spec_problems(spec, Variables.of(two_types(), "worker", 0), "p")
    assert [(p.field, p.message.split(":")[0]) for p in problems] == [
        ("p.initContainers[0].args[0]", "$(replicas[x])"),
        ("p.containers[0].command[0]", "$(service.port[a])"),
        ("p.containers[0].command[0]", "$(service.port[b])"),
    ]
    assert spec == before


def test_job_variables_are_shared_by_the_replicas_of_a_job():
    shared = JobVariables.of(two_types())
    assert shared.replicas == {"master": 1, "worker": 3}
    assert shared.ports == {"http": 2222, "grpc": 9000, "one": 1}
    # An unnamed port (a Service's only port may have no name) cannot be referenced.
    unnamed = make_job({"service": {"ports": [{"port": 1}]}, "replicaSpecs": [
        {"type": "worker", "replicas": 1, "template": {"spec": {"containers": [container()]}}}]})
    assert JobVariables.of(unnamed).ports == {}
    assert shared.for_replica("worker", 2) == Variables.of(two_types(), "worker", 2)
