"""`--namespace a,b`: one informer per watched namespace; jobs elsewhere are never touched."""

from __future__ import annotations

import dataclasses

import pytest

from controller.jobs.execution.controller import JobController
from controller.kinds.genericjob.kind import GENERICJOB
from informers.namespaces import InformerGroup

from .conftest import QUICK, Jobs, genericjob

WATCHED = ("team-a", "team-b")


@pytest.fixture
async def namespaced(cluster, rest_client, config):
    for namespace in (*WATCHED, "team-c"):
        cluster.api.ensure_namespace(namespace)
    made = JobController(GENERICJOB, rest_client, dataclasses.replace(config, namespaces=WATCHED))
    await made.start(sync_timeout=10)
    yield made
    await made.stop()


async def test_jobs_of_every_watched_namespace_run_and_others_are_ignored(namespaced, jobs: Jobs):
    assert isinstance(namespaced.pods, InformerGroup)
    watched = sorted({(i.resource.plural, i.namespace) for i in namespaced.factory.informers})
    assert {namespace for _, namespace in watched} == set(WATCHED)  # never a cluster-wide informer
    for namespace in (*WATCHED, "team-c"):
        await jobs.submit(genericjob("train", {"worker": 2}, script=QUICK), namespace=namespace)
    for namespace in WATCHED:
        done = await jobs.wait_phase("train", "Succeeded", namespace=namespace)
        assert done["status"]["observedGeneration"] == done["metadata"]["generation"]
        assert len(await jobs.pods("train", namespace=namespace)) == 2
    ignored = await jobs.get("train", namespace="team-c")
    assert not ignored.get("status") and not await jobs.pods("train", namespace="team-c")
    # The lister spans the namespaces: a key finds its namespace's object, and only there.
    assert namespaced.jobs.lister.get("team-b/train")["metadata"]["namespace"] == "team-b"
    assert namespaced.jobs.lister.get("team-c/train") is None
