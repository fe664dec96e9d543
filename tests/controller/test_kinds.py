"""What `run` serves: the registered kinds, `--kinds`, and several kinds as one controller group that
shares its informers."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes_asyncio.client import Configuration
from prometheus_client import CollectorRegistry

from controller.cmd import cli
from controller.jobs.execution.controller import JobController
from controller.jobs.kind import KindApi
from controller.kinds import registry as kinds
from controller.kinds.genericjob.kind import GENERICJOB, GenericJobKind
from controller.kinds.mpi.kind import MPIJOB
from controller.kinds.pytorch.kind import PYTORCH
from controller.kinds.tensorflow.kind import TENSORFLOW
from controller.runtime.group import ControllerGroup
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient

NOWHERE = Configuration(host="http://127.0.0.1:9")  # never contacted


class OtherKind(GenericJobKind):
    """A second kind for the group: GenericJob's behaviour under another API."""

    api = KindApi("batch.example.dev", "v1", "OtherJob", "otherjobs", label_prefix="otherjob.batch.example.dev")


def test_the_registry_is_the_folders_each_with_a_kind_py_the_engines_own_first():
    # A kind is its folder: no list names it (ARCHITECTURE.md, "Adding a kind").
    folders = sorted(path.name for path in Path(kinds.__file__).parent.iterdir() if (path / "kind.py").is_file())
    assert [kinds._package(kind).rpartition(".")[2] for kind in kinds.KINDS.values()] == \
        ["genericjob", *(name for name in folders if name != "genericjob")]
    assert kinds.discover() == kinds.KINDS == {"GenericJob": GENERICJOB, "MPIJob": MPIJOB,
                                               "PyTorchTrainingJob": PYTORCH, "TensorFlowTrainingJob": TENSORFLOW}


def test_every_registered_kind_is_served_unless_named():
    assert kinds.select() == [GENERICJOB, MPIJOB, PYTORCH, TENSORFLOW]
    assert kinds.select(["genericjobs"]) == kinds.select(["GenericJob"]) == [GENERICJOB]
    assert kinds.select(["TensorFlowTrainingJob", "genericjobs"]) == [TENSORFLOW, GENERICJOB]
    with pytest.raises(ValueError, match="unknown job kind tfjobs"):
        kinds.select(["tfjobs"])
    assert cli.parse_args(["run", "--kinds", "GenericJob"]).kinds == ("GenericJob",)
    with pytest.raises(SystemExit):
        cli.parse_args(["run", "--kinds", "nosuchjobs"])


async def test_several_kinds_run_as_one_group_sharing_their_informers():
    registry = CollectorRegistry()
    async with RestClient(settings_from_configuration(NOWHERE)) as api:  # never contacted
        served = kinds.make_controller(api, cli.manager_config(cli.parse_args(["run"])).controller, registry,
                                       [GENERICJOB, OtherKind()])
        assert isinstance(served, ControllerGroup)
        first, second = served.members
        assert isinstance(first, JobController) and first.factory is second.factory is served.factory
        # Each kind's child informers select its own children only (memory follows the jobs, not the cluster).
        assert first.pods is not second.pods and first.services is not second.services
        assert (first.pods.label_selector, second.pods.label_selector) == (
            "genericjob.batch.tensorstack.dev/uid", "otherjob.batch.example.dev/uid")
        assert first.jobs is not second.jobs and first.queue is not second.queue
        # Metrics of both share one registry, told apart by their labels.
        first.metrics.observe_reconcile(0.01, "success")
        second.metrics.observe_reconcile(0.01, "success")
        for name in ("genericjob", "otherjob"):
            assert registry.get_sample_value("controller_runtime_reconcile_total",
                                             {"controller": name, "result": "success"}) == 1
        # A pod of an OtherJob enqueues only its owner, in its own kind's queue.
        pod = {"metadata": {"name": "o-w-0", "namespace": "ns", "uid": "p", "ownerReferences": [
            {"apiVersion": "batch.example.dev/v1", "kind": "OtherJob", "name": "o", "uid": "o-uid",
             "controller": True}]}}
        first._pod_added(pod)
        second._pod_added(pod)
        assert (len(first.queue), len(second.queue)) == (0, 1)
        assert served.problems() == []  # informers not started: nothing to judge yet


async def test_one_kind_is_served_by_its_own_controller_and_all_by_a_group():
    config = cli.manager_config(cli.parse_args(["run"])).controller
    async with RestClient(settings_from_configuration(NOWHERE)) as api:
        assert type(kinds.make_controller(api, config, CollectorRegistry(), [GENERICJOB])) is JobController
        served = kinds.make_controller(api, config, CollectorRegistry())
        assert [member.kind for member in served.members] == [GENERICJOB, MPIJOB, PYTORCH, TENSORFLOW]
