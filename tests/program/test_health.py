"""/healthz and /readyz of a Manager run in-process against localcluster, and reconcile log context."""

from __future__ import annotations

import io
import json

import pytest
from kubernetes_asyncio import client

from controller.kinds.genericjob.models import API
from controller.runtime import logs
from controller.runtime.manager import Manager
from tests.e2e.conftest import QUICK, Jobs, genericjob

from .inprocess import Running, cluster_with_crds, manager_config
from .test_logs import restore_logging  # noqa: F401 (a fixture)

UID_LABEL = API.children_selector  # what the child informers select on


@pytest.fixture
async def cluster():
    async with cluster_with_crds() as running:
        yield running


@pytest.fixture
async def running(rest_client):
    made = Running(Manager(rest_client, manager_config()))
    yield made
    if made.task is not None and not made.task.done():
        assert await made.stop() == 0
    await made.close()


async def test_ready_once_synced_and_alive_while_syncing(cluster, running):
    cluster.faults.configure(latency=1.0, verbs=["list"], resources=["pods"])  # holds the first pod list back
    await running.start()
    assert await running.get("/readyz") == (500, "caches not synced\n")
    assert await running.get("/healthz") == (200, "ok\n")  # starting up is not a liveness failure
    cluster.faults.clear()
    await running.answers("/readyz", 200, "ok")
    assert await running.get("/healthz") == (200, "ok\n")


async def test_healthz_fails_when_an_informer_task_dies(running):
    await running.start()
    await running.answers("/readyz", 200)
    running.manager.controller.services._task.cancel()
    _, text = await running.answers("/healthz", 500, f"informer services with labels {UID_LABEL}: task not running")
    assert text.count("\n") == 1  # only the dead one is named
    assert (await running.get("/readyz"))[0] == 200  # liveness, not readiness


async def test_healthz_fails_while_an_informer_keeps_crashing_and_recovers(api_client, running):
    await running.start()
    await running.answers("/readyz", 200)  # synced: every informer's reflector made (healthz is 200 before)
    informer = running.manager.controller.services

    def broken(*args):
        raise RuntimeError("index function failed")

    # Every event and every relist now crashes the reflector, this one and each one started after it.
    informer._apply = informer._replace = informer._reflector._apply = broken
    await client.CoreV1Api(api_client).create_namespaced_service(
        "default", {"metadata": {"name": "poke", "labels": {UID_LABEL: "poke"}},  # selected: a child's label
                    "spec": {"ports": [{"port": 80}]}})
    _, text = await running.answers("/healthz", 500, f"informer services with labels {UID_LABEL}: crashed")
    assert "index function failed" in text
    del informer._apply, informer._replace  # fixed: the next restart lists, and the informer is healthy again
    await running.answers("/healthz", 200, "ok")


@pytest.mark.usefixtures("restore_logging")
async def test_every_reconcile_line_carries_the_job_and_a_reconcile_id(api_client, running):
    stream = io.StringIO()
    logs.configure("debug", "json", stream)
    await running.start()
    jobs = Jobs(api_client)
    await jobs.submit(genericjob("traced", {"worker": 2}, script=QUICK))
    await jobs.wait_phase("traced", "Succeeded")
    assert await running.stop() == 0
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    reconciles = [r for r in records if r["event"] == "reconciled"]
    assert len(reconciles) >= 2
    assert {r["job"] for r in reconciles} == {"default/traced"}
    assert len({r["reconcile_id"] for r in reconciles}) == len(reconciles)
    assert all(r["result"] in ("success", "requeue", "requeue_after", "error") for r in reconciles)
    outside = [r for r in records if r["event"] in ("caches synced", "stopped")]
    assert outside and not any("reconcile_id" in r for r in outside)  # the binding ends with the reconcile
