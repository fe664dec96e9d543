"""Leader election against localcluster over HTTP, with short timings (lease 1 s, renew 0.7 s, retry 0.2 s)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import time
from datetime import UTC, datetime

import orjson
import pytest
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException
from prometheus_client import CollectorRegistry

from controller.runtime.leader import LeaderElectionConfig, LeaderElector, micro_time
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient
from localcluster.testing import until

LEASE = "genericjob-leader"
NAMESPACE = "default"
TIMING = {"lease_duration": 1.0, "renew_deadline": 0.7, "retry_period": 0.2}
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class Candidate:
    """One elector, with events for what its callbacks saw."""

    def __init__(self, api: RestClient | None, identity: str, registry: CollectorRegistry | None = None,
                 clock=None, **settings) -> None:
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()
        self.work_cancelled = asyncio.Event()
        self.work_done_before_stop: bool | None = None
        self.leaders: list[str] = []
        self.registry = registry
        cfg = LeaderElectionConfig(LEASE, NAMESPACE, identity=identity, **{**TIMING, **settings})
        self.elector = LeaderElector(api, cfg, self._work, self._stopped, self.leaders.append, clock=clock,
                                     registry=registry)
        self.task: asyncio.Task | None = None

    @property
    def identity(self) -> str:
        return self.elector.identity

    async def _work(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()  # a controller's workers: run until cancelled
        finally:
            self.work_cancelled.set()

    def _stopped(self) -> None:
        self.work_done_before_stop = self.work_cancelled.is_set()
        self.stopped.set()

    def start(self) -> Candidate:
        self.task = asyncio.create_task(self.elector.run())
        return self

    async def cancel(self) -> None:
        """Cancel run(): a clean shutdown, releasing the lease if the config says so."""
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(self.task, 5)

    def gauge(self) -> float | None:
        assert self.registry is not None
        return self.registry.get_sample_value("leader_election_master_status", {"name": LEASE})


@pytest.fixture
async def second_client(cluster):
    """A separate client, as a second replica of the controller would have."""
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
    async with client.ApiClient(configuration) as api:
        yield api


@pytest.fixture
async def candidates():
    """Builds candidates, each on the controller's client (RestClient) for the settings of the kubernetes_asyncio
    client given, and cancels whatever is still running at the end (before the clients close)."""
    made: list[Candidate] = []
    clients: list[RestClient] = []

    def make(api: client.ApiClient, *args, **kwargs) -> Candidate:
        clients.append(RestClient(settings_from_configuration(api.configuration)))
        made.append(Candidate(clients[-1], *args, **kwargs))
        return made[-1]

    yield make
    for candidate in made:
        if candidate.task is not None and not candidate.task.done():
            await candidate.cancel()
    for rest in clients:
        await rest.close()


async def first_to_lead(*contenders: Candidate, timeout: float = 5.0) -> Candidate:
    waits = {asyncio.create_task(c.started.wait()): c for c in contenders}
    done, pending = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    assert done, "nobody became leader"
    return waits[done.pop()]


async def read_lease(api: client.ApiClient) -> dict:
    """The Lease as raw JSON, so MicroTime strings are seen exactly as the server stores them."""
    response = await client.CoordinationV1Api(api).read_namespaced_lease(LEASE, NAMESPACE, _preload_content=False)
    try:
        return orjson.loads(await response.read())
    finally:
        response.release()


async def write_lease(api: client.ApiClient, spec: dict, resource_version: str | None = None) -> None:
    leases = client.CoordinationV1Api(api)
    if resource_version is None:
        await leases.create_namespaced_lease(NAMESPACE, {"metadata": {"name": LEASE}, "spec": spec})
    else:
        body = {"metadata": {"name": LEASE, "resourceVersion": resource_version}, "spec": spec}
        await leases.replace_namespaced_lease(LEASE, NAMESPACE, body)


async def take_lease(api: client.ApiClient, holder: str) -> float:
    """Overwrite the holder as a rogue client would; retried if a renewal slips in between read and write."""
    while True:
        lease = await read_lease(api)
        try:
            await write_lease(api, {**lease["spec"], "holderIdentity": holder}, lease["metadata"]["resourceVersion"])
        except ApiException as err:
            if err.status != 409:
                raise
            continue
        return time.monotonic()


async def renew_times(api: client.ApiClient, count: int, timeout: float = 5.0) -> list[str]:
    """Watch the lease until `count` distinct renewTimes have been seen; they must never repeat or go back."""
    seen: list[str] = []
    async with asyncio.timeout(timeout):
        while len(seen) < count:
            renew = (await read_lease(api))["spec"]["renewTime"]
            if not seen or renew != seen[-1]:
                seen.append(renew)
            await asyncio.sleep(0.02)
    return seen


def parse(micro: str) -> datetime:
    return datetime.strptime(micro, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


# --- configuration ---------------------------------------------------------------------------

@pytest.mark.parametrize(("settings", "message"), [
    ({"lease_duration": 10.0, "renew_deadline": 10.0}, "lease_duration must be greater than renew_deadline"),
    ({"lease_duration": 5.0, "renew_deadline": 6.0}, "lease_duration must be greater than renew_deadline"),
    ({"renew_deadline": 2.4, "retry_period": 2.0}, r"renew_deadline must be greater than retry_period\*1.2"),
    ({"retry_period": 0.0}, "retry_period must be greater than zero"),
    ({"renew_deadline": -1.0}, "renew_deadline must be greater than zero"),
    ({"lease_duration": 15.5}, "whole number of seconds"),
    ({"identity": ""}, "must not be empty"),
])
def test_config_rejects_unsafe_settings(settings, message):
    with pytest.raises(ValueError, match=message):
        LeaderElectionConfig(LEASE, NAMESPACE, **settings)


def test_config_defaults_and_identity():
    one, two = LeaderElectionConfig(LEASE, NAMESPACE), LeaderElectionConfig(LEASE, NAMESPACE)
    assert (one.lease_duration, one.renew_deadline, one.retry_period, one.release_on_cancel) == (15.0, 10.0, 2.0, True)
    assert one.identity.startswith(socket.gethostname() + "_")
    assert one.identity != two.identity  # a random suffix: a restarted replica is a new candidate
    assert LeaderElectionConfig(LEASE, NAMESPACE, **TIMING, identity="me").identity == "me"


def test_micro_time_always_has_six_fractional_digits():
    assert micro_time(datetime(2026, 11, 22, 2, 6, 13, tzinfo=UTC)) == "2026-11-22T02:06:13.000000Z"
    assert micro_time(datetime(2026, 11, 22, 2, 6, 13, 123456, tzinfo=UTC)) == "2026-11-22T02:06:13.123456Z"
    assert MICRO_TIME.match(micro_time())


# --- electing --------------------------------------------------------------------------------

async def test_one_candidate_leads_the_other_stands_by(api_client, second_client, candidates):
    a = candidates(api_client, "a").start()
    b = candidates(second_client, "b").start()
    leader = await first_to_lead(a, b)
    standby = b if leader is a else a
    # Twice the lease duration of renewals: the standby never sees the lease expire, so never leads.
    await renew_times(api_client, count=10)
    assert not standby.started.is_set()
    assert leader.elector.is_leader and not standby.elector.is_leader
    assert leader.elector.holder == standby.elector.holder == leader.identity
    assert standby.leaders == [leader.identity]
    assert (await read_lease(api_client))["spec"]["holderIdentity"] == leader.identity
    assert not standby.task.done()


async def test_leader_lease_fields(api_client, candidates):
    a = candidates(api_client, "a").start()
    await asyncio.wait_for(a.started.wait(), 5)
    first = (await read_lease(api_client))["spec"]
    assert first["holderIdentity"] == "a"
    assert first["leaseDurationSeconds"] == 1
    assert first["leaseTransitions"] == 0
    assert MICRO_TIME.match(first["acquireTime"]) and MICRO_TIME.match(first["renewTime"])

    renewals = await renew_times(api_client, count=4)
    assert [parse(r) for r in renewals] == sorted(parse(r) for r in renewals)  # always forward
    later = (await read_lease(api_client))["spec"]
    assert later["acquireTime"] == first["acquireTime"]  # renewing keeps the term's start
    assert later["leaseTransitions"] == 0
    assert all(MICRO_TIME.match(r) for r in renewals)
    assert a.elector.is_leader and a.leaders == ["a"]


async def test_killed_leader_hands_over_after_the_lease_duration(api_client, second_client, candidates):
    a = candidates(api_client, "a", release_on_cancel=False).start()
    await asyncio.wait_for(a.started.wait(), 5)
    acquired_by_a = (await read_lease(api_client))["spec"]["acquireTime"]
    b = candidates(second_client, "b").start()
    await until(lambda: b.leaders == ["a"])

    killed = time.monotonic()
    await a.cancel()  # no release: the lease stays "a"'s until it expires in b's eyes
    assert (await read_lease(api_client))["spec"]["holderIdentity"] == "a"
    await asyncio.wait_for(b.started.wait(), 5)
    handover = time.monotonic() - killed

    # a renewed at most a retry period before dying; b waits a full lease from when it saw that renewal,
    # plus up to one jittered retry period (2.2 x 0.2 s) to notice.
    assert 0.7 < handover < 2.5
    spec = (await read_lease(api_client))["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert spec["acquireTime"] != acquired_by_a
    assert b.leaders == ["a", "b"]
    assert a.stopped.is_set() and a.work_done_before_stop  # a stopped its work before saying it stopped


async def test_clean_release_hands_over_at_once(api_client, second_client, candidates):
    slow = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.2}  # a long lease, to tell apart
    a = candidates(api_client, "a", **slow).start()
    await asyncio.wait_for(a.started.wait(), 5)
    b = candidates(second_client, "b", **slow).start()
    await until(lambda: b.leaders == ["a"])

    released = time.monotonic()
    await a.cancel()
    await asyncio.wait_for(b.started.wait(), 5)
    handover = time.monotonic() - released

    assert handover < 1.0  # about one jittered retry period (at most 0.44 s), not the 3 s lease
    spec = (await read_lease(api_client))["spec"]
    assert (spec["holderIdentity"], spec["leaseTransitions"], spec["leaseDurationSeconds"]) == ("b", 1, 3)
    assert a.stopped.is_set() and a.work_done_before_stop


async def test_release_record(api_client, candidates):
    a = candidates(api_client, "a").start()
    await asyncio.wait_for(a.started.wait(), 5)
    with pytest.raises(RuntimeError):
        await a.elector.release()  # the work still runs under the lease: refuse
    await a.cancel()
    lease = await read_lease(api_client)
    spec = lease["spec"]
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["renewTime"]) and MICRO_TIME.match(spec["acquireTime"])
    assert a.elector.holder is None and not a.elector.is_leader
    assert a.stopped.is_set()

    assert await a.elector.release()  # not ours any more: nothing to write
    assert (await read_lease(api_client))["metadata"]["resourceVersion"] == lease["metadata"]["resourceVersion"]


# --- losing the lease ------------------------------------------------------------------------

async def test_leader_that_cannot_renew_stops_within_the_renew_deadline(cluster, api_client, candidates):
    registry = CollectorRegistry()
    a = candidates(api_client, "a", registry=registry).start()
    await asyncio.wait_for(a.started.wait(), 5)
    assert a.gauge() == 1.0

    cluster.faults.configure(error_rate=1.0, verbs=["update", "get"], resources=["leases"])
    failing = time.monotonic()
    await asyncio.wait_for(a.stopped.wait(), 3)
    stopped_after = time.monotonic() - failing

    # The deadline runs from a's last successful write, before the faults: it stops before the lease
    # (1 s from that write) could expire for anyone else.
    assert stopped_after < TIMING["lease_duration"]
    assert a.work_done_before_stop
    await asyncio.wait_for(a.task, 1)  # run() returned, without raising
    assert not a.elector.is_leader
    assert a.gauge() == 0.0
    assert cluster.faults.injected["500"] >= 1


async def test_leader_with_hanging_requests_stops_within_the_renew_deadline(cluster, api_client, candidates):
    a = candidates(api_client, "a").start()
    await asyncio.wait_for(a.started.wait(), 5)
    cluster.faults.configure(latency=5.0, verbs=["update", "get"], resources=["leases"])
    hanging = time.monotonic()
    await asyncio.wait_for(a.stopped.wait(), 3)
    # Every request is bounded by what is left of the renew deadline, so a hung server cannot hold us.
    assert time.monotonic() - hanging < TIMING["lease_duration"]
    await asyncio.wait_for(a.task, 1)
    cluster.faults.clear()


async def test_leader_whose_lease_is_taken_stops_at_once(api_client, second_client, candidates):
    a = candidates(api_client, "a", renew_deadline=0.9, lease_duration=2.0).start()
    await asyncio.wait_for(a.started.wait(), 5)
    taken = await take_lease(second_client, "intruder")
    await asyncio.wait_for(a.stopped.wait(), 3)
    # a's next renewal (within a retry period) gets 409, rereads, sees another holder and stops there;
    # waiting out its renew deadline would have taken at least 0.9 - 0.2 s.
    assert time.monotonic() - taken < 0.6
    await asyncio.wait_for(a.task, 1)
    assert a.elector.holder == "intruder" and a.leaders == ["a", "intruder"]


async def test_conflicting_update_backs_off(cluster, api_client, second_client, candidates):
    await write_lease(api_client, {"holderIdentity": "", "leaseDurationSeconds": 1, "leaseTransitions": 3})
    # Deadlines no loaded machine reaches (TIMING's 0.7 s to renew, 1 s lease: a GET and a PUT held back 0.3 s could
    # miss them): what is checked is the conflict, not the timing.
    patient = {"lease_duration": 30.0, "renew_deadline": 20.0}
    a = candidates(api_client, "a", **patient)
    b = candidates(second_client, "b", **patient)
    # Both read the free lease; their PUTs, held back together, reach the server one after the other.
    cluster.faults.configure(latency=0.3, verbs=["update"], resources=["leases"])
    won = await asyncio.gather(a.elector.try_acquire_or_renew(), b.elector.try_acquire_or_renew())
    cluster.faults.clear()

    assert sorted(won) == [False, True]
    winner, loser = (a, b) if won[0] else (b, a)
    assert cluster.faults.requests[("update", "leases", 409)] == 1
    assert not await loser.elector.try_acquire_or_renew()  # rereads: held by the winner and not expired
    assert loser.elector.holder == winner.identity and loser.leaders == [winner.identity]
    spec = (await read_lease(api_client))["spec"]
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == (winner.identity, 4)


async def test_conflicting_candidates_elect_one_leader(cluster, api_client, second_client, candidates):
    await write_lease(api_client, {"holderIdentity": "", "leaseDurationSeconds": 1, "leaseTransitions": 0})
    cluster.faults.configure(latency=0.3, verbs=["update"], resources=["leases"])
    a = candidates(api_client, "a").start()
    b = candidates(second_client, "b").start()
    leader = await first_to_lead(a, b)
    standby = b if leader is a else a
    await until(lambda: standby.elector.holder == leader.identity)
    assert cluster.faults.requests[("update", "leases", 409)] >= 1
    assert not standby.task.done() and not standby.started.is_set()  # backed off, still standing by


# --- remote clocks ---------------------------------------------------------------------------

class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_expiry_uses_local_observation_never_the_remote_renew_time(api_client, candidates):
    # A holder whose clock is decades behind: by its renewTime the lease expired long ago.
    ghost = {"holderIdentity": "ghost", "leaseDurationSeconds": 1, "leaseTransitions": 4,
             "acquireTime": "2000-01-01T00:00:00.000000Z", "renewTime": "2000-01-01T00:00:00.000000Z"}
    await write_lease(api_client, ghost)
    clock = FakeClock()
    c = candidates(api_client, "c", clock=clock)

    assert not await c.elector.try_acquire_or_renew()  # first seen now: valid for a second from now
    clock.now = 100.9
    lease = await read_lease(api_client)
    await write_lease(api_client, {**ghost, "renewTime": "2000-01-01T00:00:01.000000Z"},
                      lease["metadata"]["resourceVersion"])  # the ghost renews, still in the past
    clock.now = 101.5
    assert not await c.elector.try_acquire_or_renew()  # a changed record restarts the local clock
    clock.now = 102.4
    assert not await c.elector.try_acquire_or_renew()
    clock.now = 102.6
    assert await c.elector.try_acquire_or_renew()  # a full lease without a change: expired

    spec = (await read_lease(api_client))["spec"]
    assert spec["holderIdentity"] == "c"
    assert spec["leaseTransitions"] == 5
    assert parse(spec["acquireTime"]).year > 2000 and spec["acquireTime"] == spec["renewTime"]
    assert c.leaders == ["ghost", "c"]


async def test_missing_lease_is_created(api_client, candidates):
    c = candidates(api_client, "c")
    assert await c.elector.try_acquire_or_renew()
    lease = await read_lease(api_client)
    assert lease["metadata"]["namespace"] == NAMESPACE
    spec = lease["spec"]
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"], spec["leaseTransitions"]) == ("c", 1, 0)
    assert spec["acquireTime"] == spec["renewTime"] and MICRO_TIME.match(spec["renewTime"])


# --- the leading work ------------------------------------------------------------------------

async def test_failed_work_ends_the_term_and_releases(api_client, rest_client):
    async def fail() -> None:
        raise RuntimeError("workers crashed")

    stopped = asyncio.Event()
    cfg = LeaderElectionConfig(LEASE, NAMESPACE, identity="a", **TIMING)
    elector = LeaderElector(rest_client, cfg, fail, stopped.set)
    with pytest.raises(RuntimeError, match="workers crashed"):
        await asyncio.wait_for(elector.run(), 5)
    assert stopped.is_set() and not elector.is_leader
    assert (await read_lease(api_client))["spec"]["holderIdentity"] == ""  # handed over, nobody works under it


# --- metrics ---------------------------------------------------------------------------------

async def test_master_status_gauge(api_client, second_client, candidates):
    a = candidates(api_client, "a", registry=CollectorRegistry())
    b = candidates(second_client, "b", registry=CollectorRegistry())
    assert a.gauge() == b.gauge() == 0.0
    a.start()
    await asyncio.wait_for(a.started.wait(), 5)
    b.start()
    await until(lambda: b.leaders == ["a"])
    assert (a.gauge(), b.gauge()) == (1.0, 0.0)
    await a.cancel()
    await asyncio.wait_for(b.started.wait(), 5)
    assert (a.gauge(), b.gauge()) == (0.0, 1.0)


def test_electors_share_a_registry():
    registry = CollectorRegistry()
    cfg = LeaderElectionConfig(LEASE, NAMESPACE, **TIMING)
    for _ in range(2):  # a second gauge of the same name would be refused by the registry
        LeaderElector(None, cfg, asyncio.Event().wait, lambda: None, registry=registry)
    assert registry.get_sample_value("leader_election_master_status", {"name": LEASE}) == 0.0
