"""The test job builder itself: what it makes, of each kind, is what the CRD and the model expect."""

from __future__ import annotations

import pytest
from hypothesis import find
from hypothesis import strategies as st

from controller.kinds import registry
from controller.kinds.genericjob.validation import parse, validate
from controller.kinds.tensorflow.kind import TENSORFLOW as TENSORFLOW_KIND
from controller.kinds.tensorflow.models import TensorFlowTrainingJob
from tests.builders import TENSORFLOW, JobBuilder

POD = {"spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}


def test_obj_is_the_object_kubectl_sends():
    job = JobBuilder("train").replica("worker", 4, template=POD, restart_policy={"policy": "Never"}).spec(
        cleanUpPolicy="All", successRules=[{"worker": [0]}]).obj()
    assert job == {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "metadata": {"name": "train"},
                   "spec": {"replicaSpecs": [{"type": "worker", "replicas": 4, "template": POD,
                                              "restartPolicy": {"policy": "Never"}}],
                            "cleanUpPolicy": "All", "successRules": [{"worker": [0]}]}}


def test_model_parses_and_validates():
    builder = JobBuilder("train", namespace="ns", uid="u-1", generation=3).replica("ps", 1, template=POD).replica(
        "worker", 2, template=POD)
    model = builder.model()
    assert (model.name, model.namespace, model.uid, model.generation) == ("train", "ns", "u-1", 3)
    assert [(s.type, s.replicas) for s in model.spec.replica_specs] == [("ps", 1), ("worker", 2)]
    parsed = parse(builder.obj())
    assert parsed == model and validate(parsed) == []


def test_steps_never_change_the_builder_they_start_from():
    base = JobBuilder("j").replica("worker", 1, template=POD)
    more = base.replica("ps", 1, template=POD).meta(resourceVersion="7").labels({"team": "a"})
    assert [r["type"] for r in base.obj()["spec"]["replicaSpecs"]] == ["worker"]
    assert [r["type"] for r in more.obj()["spec"]["replicaSpecs"]] == ["worker", "ps"]
    assert "resourceVersion" not in base.obj()["metadata"] and more.obj()["metadata"]["labels"] == {"team": "a"}
    raw = base.spec(replicaSpecs=[{"type": "chief", "replicas": 1, "template": POD}]).obj()
    assert [r["type"] for r in raw["spec"]["replicaSpecs"]] == ["chief"]  # raw replicaSpecs replace the added ones


def test_it_builds_a_tensorflow_training_job_as_well():
    pod = {"spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.11.0"}]}}
    builder = JobBuilder("tf", kind=TENSORFLOW, namespace="ns", uid="u-2").replica(
        "chief", 1, template=pod, restart_policy="ExitCode").replica("worker", 2, template=pod).spec(
        runPolicy={"backoffLimit": 3})
    job = builder.obj()
    assert (job["apiVersion"], job["kind"]) == ("batch.tensorstack.dev/v1beta1", "TensorFlowTrainingJob")
    assert job["spec"]["replicaSpecs"][0] == {"type": "chief", "replicas": 1, "template": pod,
                                              "restartPolicy": "ExitCode"}
    model = builder.model()
    assert isinstance(model, TensorFlowTrainingJob) and model.spec.run_policy.backoff_limit == 3
    assert TENSORFLOW_KIND.parse(job) == model  # the kind's parser and checks agree with the model
    with pytest.raises(ValueError, match="no builder for kind"):
        JobBuilder("x", kind="MXNetTrainingJob")


@pytest.mark.parametrize("name", list(registry.KINDS))
def test_it_builds_a_job_of_every_registered_kind_from_its_model_contracts_spec(name):
    # The spec a kind's model contract draws (controller/kinds/<kind>/testing.py) is one admission takes.
    kind = registry.KINDS[name]
    drawn = st.composite(lambda draw: registry.model_contract(kind).draw(draw, "All"))()
    spec = find(drawn, lambda _: True)["spec"]
    built = JobBuilder("drawn", kind=name, namespace="ns", uid="u-3").spec(**spec)
    assert built.obj()["apiVersion"] == kind.api.api_version
    assert isinstance(built.model(), kind.model) and not isinstance(kind.parse(built.obj()), list)
