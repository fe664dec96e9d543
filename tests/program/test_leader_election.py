"""Two `genericjob-controller run` processes against one localcluster, electing a leader with a Lease.

Timings are short (lease 2 s, renew deadline 1.5 s, retry 0.25 s) so handovers take seconds.
"""

from __future__ import annotations

import asyncio
import signal

import pytest

from controller.runtime.leader import micro_time
from tests.e2e.conftest import QUICK, genericjob

from .subprocesses import LEASE, ControllerProcess, LocalClusterProcess, Samples, until

pytestmark = pytest.mark.slow  # each test runs the programs

WRITES = ("create", "update", "patch", "delete", "deletecollection")


async def leader_of(cluster: LocalClusterProcess, *candidates: ControllerProcess
                    ) -> tuple[ControllerProcess, list[ControllerProcess]]:
    """The candidate holding the Lease once its own /metrics says it leads, and the others."""
    async def elected():
        lease = await cluster.lease()
        if lease is None:
            return None
        holder = next((c for c in candidates if c.identity == lease["spec"].get("holderIdentity")), None)
        return holder if holder is not None and await holder.leading() else None

    leader = await until(elected, what="a leader")
    return leader, [c for c in candidates if c is not leader]


def writes(samples: Samples) -> dict[tuple[str, str], float]:
    """(verb, resource) -> requests, for every write other than to the Lease."""
    found: dict[tuple[str, str], float] = {}
    for s in samples.all("rest_client_requests_total"):
        if s.labels["verb"] in WRITES and s.labels["resource"] != "leases":
            key = (s.labels["verb"], s.labels["resource"])
            found[key] = found.get(key, 0) + s.value
    return found


async def test_only_the_leader_reconciles_and_a_killed_leader_is_replaced_within_the_lease(tmp_path):
    async with LocalClusterProcess(tmp_path) as cluster, ControllerProcess(cluster) as one, \
            ControllerProcess(cluster) as two:
        leader, [standby] = await leader_of(cluster, one, two)
        await cluster.jobs.submit(genericjob("first", {"worker": 2}, script=QUICK))
        await cluster.jobs.wait_phase("first", "Succeeded")

        # Only the leader wrote: the standby made no write at all, and the API server saw exactly the
        # leader's status writes and pod creates (nobody else writes those here).
        leader_writes = writes(await leader.metrics())
        assert leader_writes[("create", "pods")] == 2 and leader_writes[("update", "genericjobs/status")] >= 2
        standby_metrics = await standby.metrics()
        assert writes(standby_metrics) == {}
        assert standby_metrics.value("leader_election_master_status", name="genericjob-controller") == 0
        assert standby_metrics.value("rest_client_requests_total", verb="watch", resource="pods") >= 1  # warm

        async def server_agrees():
            seen, ours = await cluster.requests(), writes(await leader.metrics())
            keys = (("update", "genericjobs/status"), ("create", "pods"))
            return all(seen.get(key) == ours.get(key) for key in keys)

        await until(server_agrees, what="the API server's count of status writes and pod creates")

        # SIGKILL: no release; the standby takes over once the lease has expired by its own clock.
        transitions = (await cluster.lease())["spec"].get("leaseTransitions", 0)
        loop = asyncio.get_running_loop()
        leader.send(signal.SIGKILL)
        killed = loop.time()
        await until(standby.leading, timeout=15, what="the standby leading")
        handover = loop.time() - killed
        lease, retry = LEASE["lease_duration"], LEASE["retry_period"]
        # Safety is exact: never before the lease has expired (less a retry period of clock skew between polls).
        # Liveness is bounded loosely: a loaded machine (the CI's two cores under the whole suite) delays both
        # processes and our metrics polls by seconds; a standby that waited four leases (8 s) would still fail.
        assert lease - 1.5 * retry <= handover <= 2 * lease + 4 * retry + 3.0, handover
        assert await leader.exit_code() == -signal.SIGKILL
        spec = (await cluster.lease())["spec"]
        assert spec["holderIdentity"] == standby.identity and spec["leaseTransitions"] == transitions + 1

        await cluster.jobs.submit(genericjob("second", script=QUICK))
        await cluster.jobs.wait_phase("second", "Succeeded")


async def test_sigterm_releases_the_lease_and_the_standby_takes_over_at_once(tmp_path):
    slow_expiry = {"lease_duration": 6.0, "renew_deadline": 4.0, "retry_period": 0.25}
    async with LocalClusterProcess(tmp_path) as cluster, ControllerProcess(cluster, lease=slow_expiry) as one, \
            ControllerProcess(cluster, lease=slow_expiry) as two:
        leader, [standby] = await leader_of(cluster, one, two)
        leader.send(signal.SIGTERM)
        assert await leader.exit_code() == 0
        # Released as it stopped: no holder (or already the standby), so the standby need not wait the 6 s an
        # unreleased lease would take to expire.
        assert (await cluster.lease())["spec"].get("holderIdentity") in ("", None, standby.identity)
        await until(standby.leading, timeout=10, what="the standby leading")
        events = [r["event"] for r in leader.logs]
        assert events.index("released lease") < events.index("stopped")
        await cluster.jobs.submit(genericjob("after", script=QUICK))
        await cluster.jobs.wait_phase("after", "Succeeded")

        # The new leader stops cleanly as well, releasing the lease for whoever comes next.
        standby.send(signal.SIGTERM)
        assert await standby.exit_code() == 0
        assert not (await cluster.lease())["spec"].get("holderIdentity")


async def test_a_leader_that_loses_its_lease_exits_1_at_once(tmp_path):
    async with LocalClusterProcess(tmp_path) as cluster, ControllerProcess(cluster) as controller:
        leader, _ = await leader_of(cluster, controller)
        lease = await cluster.lease()
        now = micro_time()
        lease["spec"].update(holderIdentity="someone-else", acquireTime=now, renewTime=now, leaseDurationSeconds=60)
        await cluster.replace_lease(lease)  # as if another replica had taken it over
        assert await leader.exit_code(timeout=10) == 1
        # At its next renewal, seeing the other holder, not after retrying until the renew deadline (what the logs
        # say, not the time it took: on a loaded machine the exit itself can take longer than the deadline).
        events = [r["event"] for r in leader.logs]
        assert "lease taken by another holder" in events, events
        assert "failed to renew lease within the renew deadline" not in events, events
        assert any(r["event"] == "leader election lost: exiting" for r in leader.logs)
        assert next(r for r in leader.logs if r["event"] == "stopped")["reason"] == "leadership lost"
