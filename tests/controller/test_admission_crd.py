"""The CRDs' rules on the TensorFlow chief and the PyTorch master say what the controller says for the same rule,
word for word: a refusal reads the same from the CRD (what the API server checks first), the admission webhook
and a held job's SpecInvalid condition. localcluster evaluates the rules and their messageExpressions as the
API server does (tests/controller/test_crd_cost.py prices them)."""

from __future__ import annotations

import copy

import pytest
import pytest_asyncio

from controller.kinds.pytorch.kind import PYTORCH
from controller.kinds.tensorflow.kind import TENSORFLOW
from localcluster import ApiError, LocalCluster
from tests.builders import PYTORCH as PYTORCH_KIND
from tests.builders import TENSORFLOW as TENSORFLOW_KIND
from tests.builders import JobBuilder
from tests.e2e.conftest import CRDS

GROUP = "batch.tensorstack.dev"
KINDS = {TENSORFLOW_KIND: TENSORFLOW, PYTORCH_KIND: PYTORCH}

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster():
    async with LocalCluster(runner="none") as running:
        running.apply_crds(CRDS)
        yield running


def job(kind: str, replicas: dict[str, int], name: str = "job") -> dict:
    container = "tensorflow" if kind == TENSORFLOW_KIND else "pytorch"
    made = JobBuilder(name, kind=kind, namespace="default")
    for replica_type, count in replicas.items():
        made = made.replica(replica_type, count, template={"spec": {"containers": [
            {"name": container, "image": "trainer"}]}})
    return made.obj()


def crd_messages(cluster, obj: dict) -> list[str]:
    """The messages of the API server's refusal of a create, one per cause."""
    rt = cluster.registry.get(GROUP, "v1beta1", KINDS[obj["kind"]].api.plural)
    with pytest.raises(ApiError) as caught:
        cluster.api.create(rt, "default", copy.deepcopy(obj))
    assert caught.value.code == 422, caught.value.message
    return [cause["message"] for cause in caught.value.details["causes"]]


def controller_messages(obj: dict) -> list[str]:
    parsed = KINDS[obj["kind"]].parse({**obj, "metadata": {**obj["metadata"], "uid": "u", "generation": 1}})
    assert isinstance(parsed, list), parsed
    return [problem.message for problem in parsed]


@pytest.mark.parametrize(("kind", "replicas"), [
    (TENSORFLOW_KIND, {"chief": 2, "worker": 1}),
    (TENSORFLOW_KIND, {"evaluator": 3, "worker": 1}),
    (TENSORFLOW_KIND, {"chief": 0, "worker": 2}),
    (TENSORFLOW_KIND, {"ps": 1, "worker": 0}),
    (PYTORCH_KIND, {"master": 2, "worker": 1}),
    (PYTORCH_KIND, {"worker": 1, "master": 0}),
    (PYTORCH_KIND, {"node": 0, "worker": 2}),
], ids=["tf-two-chiefs", "tf-three-evaluators", "tf-chief-scaled-away", "tf-worker-0-scaled-away",
        "pytorch-master-of-two", "pytorch-master-of-none", "pytorch-first-type-empty"])
async def test_the_crd_refuses_with_the_controllers_own_message(cluster, kind, replicas):
    obj = job(kind, replicas)
    said = crd_messages(cluster, obj)
    for message in controller_messages(obj):
        assert any(message in text for text in said), (message, said)
