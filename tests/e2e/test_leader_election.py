"""Leader election in-process on either server: two controllers campaign for one Lease, only the leader's workers
run, and when the leader dies without releasing the Lease the standby takes it over once it has expired, bumps
leaseTransitions and finishes the next job. On localcluster and on the real API server (its Lease validation and
update semantics are the real ones)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from controller.jobs.execution.controller import JobController
from controller.kinds.genericjob.kind import GENERICJOB
from controller.runtime.leader import LeaderElectionConfig, LeaderElector

from .conftest import QUICK, genericjob, until

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)
LEASE = "genericjob-controller-e2e"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


class Candidate:
    """One controller whose workers run only while its elector holds the Lease."""

    def __init__(self, rest_client, config, identity: str, election: LeaderElectionConfig | None = None) -> None:
        self.controller = JobController(GENERICJOB, rest_client, config)
        self.leading = asyncio.Event()
        self.elector = LeaderElector(rest_client, election or LeaderElectionConfig(
            LEASE, "default", identity, lease_duration=2.0, renew_deadline=1.5, retry_period=0.25,
            release_on_cancel=False), self._lead, lambda: None)
        self.election: asyncio.Task | None = None

    async def _lead(self) -> None:
        self.controller.run_workers()
        self.leading.set()
        await asyncio.Event().wait()

    async def start(self) -> None:
        self.controller.start_informers()
        await self.controller.wait_for_sync(10)
        self.election = asyncio.create_task(self.elector.run())

    async def crash(self) -> None:
        """Stop campaigning and working without releasing the Lease, as a killed process."""
        if self.election is not None:
            self.election.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.election
        await self.controller.stop()


async def test_the_standby_takes_over_an_expired_lease_and_finishes_the_next_job(cluster, rest_client, config,
                                                                                  jobs):
    one, two = Candidate(rest_client, config, "one"), Candidate(rest_client, config, "two")
    await one.start()
    await asyncio.wait_for(one.leading.wait(), 15)
    await two.start()
    try:
        await jobs.submit(genericjob("first", script=QUICK))
        await jobs.wait_phase("first", "Succeeded")
        assert not two.leading.is_set()
        lease = await rest_client.call("GET", f"{LEASES}/{LEASE}")
        assert lease["spec"]["holderIdentity"] == "one"
        transitions = lease["spec"].get("leaseTransitions", 0)

        await one.crash()
        await until(two.leading.is_set, 30, "the standby leading once the lease expired")
        lease = await rest_client.call("GET", f"{LEASES}/{LEASE}")
        assert lease["spec"]["holderIdentity"] == "two"
        assert lease["spec"]["leaseTransitions"] == transitions + 1
        await jobs.submit(genericjob("second", script=QUICK))
        await jobs.wait_phase("second", "Succeeded")
    finally:
        await one.crash()
        await two.crash()
