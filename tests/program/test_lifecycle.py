"""A Manager with leader election, in-process: a standby is ready and idle; a clean shutdown of a leader
stops taking work, lets in-flight reconciles finish within the shutdown timeout, then releases the lease
and returns 0."""

from __future__ import annotations

import asyncio
import dataclasses
import socket

import pytest
from kubernetes_asyncio import client

from controller.runtime.leader import LeaderElectionConfig, micro_time
from controller.runtime.manager import Manager
from tests.e2e.conftest import QUICK, Jobs, genericjob, phase

from .inprocess import Running, cluster_with_crds, manager_config
from .subprocesses import until

LEASE_NAME = "genericjob-controller"


@pytest.fixture
async def cluster():
    async with cluster_with_crds() as running:
        yield running


async def holder(api_client) -> str:
    lease = await client.CoordinationV1Api(api_client).read_namespaced_lease(LEASE_NAME, "default")
    return lease.spec.holder_identity or ""


class HeldReconcile:
    """Holds the first reconcile of one job until released; records what it saw when it went on."""

    def __init__(self, manager: Manager, api_client, key: str) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.holder_when_released: str | None = None
        self.cancelled = False
        self.finished = False
        self._api = api_client
        self._key = key
        self._reconcile = manager.controller.reconciler.reconcile
        manager.controller.reconciler.reconcile = self.reconcile

    async def reconcile(self, key: str):
        if key != self._key or self.started.is_set():
            return await self._reconcile(key)
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        self.holder_when_released = await holder(self._api)
        result = await self._reconcile(key)
        self.finished = True
        return result


def election() -> LeaderElectionConfig:
    return LeaderElectionConfig(LEASE_NAME, "default", lease_duration=4, renew_deadline=3, retry_period=0.2)


async def test_in_flight_reconciles_finish_before_the_lease_is_released(api_client, rest_client):
    manager = Manager(rest_client, manager_config(election(), shutdown_timeout=3.0))
    held = HeldReconcile(manager, api_client, "default/held")
    running = Running(manager)
    try:
        await running.start()
        await Jobs(api_client).submit(genericjob("held", script=QUICK))
        await asyncio.wait_for(held.started.wait(), 10)
        manager.stop()
        await until(lambda: manager.controller.queue.shutting_down, what="the queue refusing new work")
        assert not running.task.done()  # waiting for the reconcile
        held.release.set()
        assert await running.exit_code() == 0
    finally:
        await running.close()
    assert held.finished and not held.cancelled
    assert held.holder_when_released == manager.elector.identity  # it ran under the lease
    assert await holder(api_client) == ""  # released afterwards
    assert phase(await Jobs(api_client).get("held")) is not None  # its status write went through


async def test_a_reconcile_that_outlasts_the_shutdown_timeout_is_cut_off(api_client, rest_client):
    manager = Manager(rest_client, manager_config(election(), shutdown_timeout=0.5))
    held = HeldReconcile(manager, api_client, "default/stuck")  # never released
    running = Running(manager)
    try:
        await running.start()
        await Jobs(api_client).submit(genericjob("stuck", script=QUICK))
        await asyncio.wait_for(held.started.wait(), 10)
        loop = asyncio.get_running_loop()
        stopping = loop.time()
        manager.stop()
        assert await running.exit_code() == 0
        assert 0.5 <= loop.time() - stopping < 3.0
    finally:
        await running.close()
    assert held.cancelled and not held.finished
    assert await holder(api_client) == ""


async def test_a_standby_is_ready_and_idle_and_stops_without_touching_the_lease(api_client, rest_client):
    now = micro_time()
    lease = {"metadata": {"name": LEASE_NAME}, "spec": {"holderIdentity": "the-leader", "leaseDurationSeconds": 60,
                                                        "acquireTime": now, "renewTime": now}}
    leases = client.CoordinationV1Api(api_client)
    await leases.create_namespaced_lease("default", lease)
    manager = Manager(rest_client, manager_config(election()))
    running = Running(manager)
    try:
        await running.start()
        await running.answers("/readyz", 200, "ok")  # synced while standing by: ready to take over at once
        await Jobs(api_client).submit(genericjob("waiting", script=QUICK))
        await until(lambda: len(manager.controller.jobs.store) == 1, what="the job in the standby's cache")
        assert manager.registry.get_sample_value("leader_election_master_status", {"name": LEASE_NAME}) == 0
        assert not manager.controller.runtime.working and len(manager.controller.queue) == 1  # queued, not worked on
        assert await running.stop() == 0
    finally:
        await running.close()
    assert phase(await Jobs(api_client).get("waiting")) is None  # nobody reconciled it
    assert await holder(api_client) == "the-leader"


async def test_a_taken_port_is_an_error(rest_client):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        host, port = taken.getsockname()
        config = dataclasses.replace(manager_config(), metrics_address=f"{host}:{port}")
        manager = Manager(rest_client, config)
        assert await asyncio.wait_for(manager.run(), 10) == 1
        assert manager.exit_reason == "cannot listen"
