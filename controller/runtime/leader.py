"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's leaderelection semantics.

    config = LeaderElectionConfig("genericjob-controller", "kube-system")
    elector = LeaderElector(rest_client, config, on_started_leading=controller.run_workers,
                            on_stopped_leading=lambda: log.error("leadership lost"))
    await elector.run()     # returns once leadership is over: the caller exits non-zero

A candidate reads the Lease every retry period (jittered) and takes it when it is free or expired;
the leader renews it every retry period. Only local times decide expiry: another holder's lease
lasts until the local time we last saw its record change plus its leaseDurationSeconds, so a skewed
remote clock (renewTime) cannot make us take a live lease. Every write is a PUT conditional on the
resourceVersion we read: of two racing candidates one gets 409 and backs off.

Where this differs from client-go, it is on the safe side:
- The renew deadline runs from the start of our last successful write, not from the start of a
  renewal round (up to a retry period later), so giving up always precedes expiry when
  lease_duration > renew_deadline, whatever the retry period.
- A leader that sees another holder stops at once instead of retrying until the deadline.
- run() waits for the leading task to finish (up to when the lease could expire) before releasing
  the lease or calling on_stopped_leading; on_stopped_leading is called only if we led.
- The leading task ending on its own ends the term (client-go would keep renewing a lease nobody
  works under); its exception, if any, is raised from run().
- on_new_leader is not called for a released lease (an empty holder is nobody); it is called
  synchronously from the election loop, so it must not block.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog
from prometheus_client import CollectorRegistry, Gauge

from informers import ApiStatusError
from kubeclient.rest import TRANSIENT_ERRORS, RestClient

log = structlog.get_logger("leader")

JITTER_FACTOR = 1.2  # client-go's: a wait is retry_period plus up to 1.2 retry periods more
LEASES_PATH = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
RELEASED_LEASE_SECONDS = 1  # client-go's release: an empty holder whose lease lapses in a second
# What an attempt may fail with; anything else is a bug and propagates.
_ATTEMPT_ERRORS = (ApiStatusError, *TRANSIENT_ERRORS)


def micro_time(moment: datetime | None = None) -> str:
    """A MicroTime as the API server writes it: always six fractional digits and Z."""
    return (moment or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    """Hostname plus a random suffix, so two processes on one host (or a restart) never share an identity."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaderElectionConfig:
    lease_name: str
    namespace: str
    identity: str | None = None  # None: default_identity()
    lease_duration: float = 15.0  # how long others wait, after the lease last changed, to take it over
    renew_deadline: float = 10.0  # how long the leader keeps retrying a renewal before it gives up
    retry_period: float = 2.0  # the pause between attempts
    release_on_cancel: bool = True  # give the lease up when run() is cancelled (clean shutdown)

    def __post_init__(self) -> None:
        if self.identity is None:
            object.__setattr__(self, "identity", default_identity())
        _validate(self)


def _validate(config: LeaderElectionConfig) -> None:
    """client-go's checks, plus whole seconds: the Lease stores an integer leaseDurationSeconds."""
    if not config.lease_name or not config.namespace or not config.identity:
        raise ValueError("lease_name, namespace and identity must not be empty")
    for name in ("lease_duration", "renew_deadline", "retry_period"):
        if getattr(config, name) <= 0:
            raise ValueError(f"{name} must be greater than zero")
    if config.lease_duration != int(config.lease_duration):
        # Others would read a truncated duration and could take over before our renew deadline.
        raise ValueError("lease_duration must be a whole number of seconds")
    if config.lease_duration <= config.renew_deadline:
        raise ValueError("lease_duration must be greater than renew_deadline")
    if config.renew_deadline <= JITTER_FACTOR * config.retry_period:
        raise ValueError(f"renew_deadline must be greater than retry_period*{JITTER_FACTOR}")


def _jittered(period: float) -> float:
    return period * (1 + random.random() * JITTER_FACTOR)


def _failure(task: asyncio.Task) -> BaseException | None:
    """The exception a finished task raised (cancellation is no failure); None while it runs."""
    if not task.done() or task.cancelled():
        return None
    return task.exception()


# A registry refuses a second metric of the same name, so electors sharing a registry share one gauge.
_GAUGES: weakref.WeakKeyDictionary[CollectorRegistry, Gauge] = weakref.WeakKeyDictionary()


def _master_status_gauge(registry: CollectorRegistry | None) -> Gauge | None:
    if registry is None:
        return None
    gauge = _GAUGES.get(registry)
    if gauge is None:
        gauge = Gauge("leader_election_master_status", "Gauge of if the reporting system is master of the relevant "
                      "lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the "
                      "lease. Please make sure to group by name.", ["name"], registry=registry)
        _GAUGES[registry] = gauge
    return gauge


class LeaderElector:
    def __init__(self, rest: RestClient, config: LeaderElectionConfig,
                 on_started_leading: Callable[[], Awaitable[object]],
                 on_stopped_leading: Callable[[], object],
                 on_new_leader: Callable[[str], object] | None = None,
                 clock: Callable[[], float] | None = None,
                 registry: CollectorRegistry | None = None) -> None:
        self.config = config
        self.identity: str = config.identity or ""
        self._api = rest
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._clock = clock or time.monotonic  # local seconds; only differences matter
        self._path = f"{LEASES_PATH.format(namespace=config.namespace)}/{config.lease_name}"
        self._log = log.bind(lease=f"{config.namespace}/{config.lease_name}", identity=self.identity)
        self._lease: dict | None = None  # the Lease last read or written: our writes carry its resourceVersion
        self._observed: dict = {}  # its spec, the election record
        self._observed_at = 0.0  # local time the record last changed as far as we saw
        self._written_at = 0.0  # local time our last successful write was sent: the lease is ours from then on
        self._reported_leader: str | None = None
        self._leading_task: asyncio.Task | None = None
        self._leading = False
        self._gauge = _master_status_gauge(registry)
        self._set_gauge(False)

    @property
    def is_leader(self) -> bool:
        """True from acquiring the lease until we stop leading (renewal failed, cancelled, or the work ended)."""
        return self._leading

    @property
    def holder(self) -> str | None:
        """The holder in the record we last observed; None if we saw none (never read, or released)."""
        return self._observed.get("holderIdentity") or None

    # --- the election loop ---------------------------------------------------------------

    async def run(self) -> None:
        """Stand by until the lease is ours, then lead until it is not.

        Returns when a renewal missed its deadline (on_stopped_leading has been called and the leading
        task cancelled: the caller must not carry on working) or when the leading task ended by itself.
        Cancelling run() stops the leading task and, with release_on_cancel, releases the lease.
        """
        await self._acquire()
        work = self._start_leading()
        try:
            work_ended = await self._renew_while_leading(work)
        except asyncio.CancelledError:
            await self._stop_leading(work, release=self.config.release_on_cancel)
            if (error := _failure(work)) is not None:
                self._log.error("leading task failed", exc_info=error)
            raise
        except BaseException:
            await self._stop_leading(work, release=False)
            raise
        # Work that ended by itself left nothing running under the lease: safe to hand it over.
        await self._stop_leading(work, release=work_ended and self.config.release_on_cancel)
        if (error := _failure(work)) is not None:
            if work_ended:
                raise error
            self._log.error("leading task failed", exc_info=error)

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to take or keep the lease, within renew_deadline. True if we hold it now.

        For one-shot use and tests; never alongside run(), which makes its own attempts.
        """
        return await self._attempt(self.config.renew_deadline)

    async def release(self) -> bool:
        """Give the lease up if we hold it: empty holder, leaseDurationSeconds 1, leaseTransitions kept.

        Only call it once the work guarded by the lease has stopped; run() does so itself on
        cancellation. Returns False if the release failed (the lease then expires on its own).
        """
        if self._leading_task is not None and not self._leading_task.done():
            raise RuntimeError("release() while the leading task still runs: cancel run() instead")
        deadline = asyncio.get_running_loop().time() + self.config.renew_deadline
        try:
            lease = await self._get(deadline)
            if lease is None:
                return True
            self._observe(lease)
            if self.holder != self.identity:
                return True
            await self._write(lease, self._released_record(), deadline)
        except _ATTEMPT_ERRORS as err:
            self._log.warning("failed to release lease", error=str(err))
            return False
        self._log.info("released lease")
        return True

    async def _acquire(self) -> None:
        self._log.info("attempting to acquire lease")
        while True:
            if await self._attempt(self.config.renew_deadline):
                self._log.info("acquired lease")
                return
            await asyncio.sleep(_jittered(self.config.retry_period))

    def _start_leading(self) -> asyncio.Task:
        self._leading = True
        self._set_gauge(True)
        self._leading_task = asyncio.create_task(self._lead(), name=f"leading {self.config.lease_name}")
        return self._leading_task

    async def _lead(self) -> None:
        await self._on_started_leading()

    async def _renew_while_leading(self, work: asyncio.Task) -> bool:
        """Renew every retry period. True when the work ended by itself, False when a renewal failed."""
        while True:
            await asyncio.wait({work}, timeout=self.config.retry_period)
            if work.done():
                return True
            if not await self._renew_before_deadline():
                return False

    async def _renew_before_deadline(self) -> bool:
        """Retry every retry period until renew_deadline after our last successful write."""
        deadline = self._written_at + self.config.renew_deadline
        while (remaining := deadline - self._clock()) > 0:
            if await self._attempt(remaining):
                return True
            if self.holder and self.holder != self.identity:
                self._log.warning("lease taken by another holder", holder=self.holder)
                return False  # someone else holds it: waiting for the deadline would only prolong the overlap
            await asyncio.sleep(min(self.config.retry_period, max(deadline - self._clock(), 0.0)))
        self._log.warning("failed to renew lease within the renew deadline", renew_deadline=self.config.renew_deadline)
        return False

    async def _stop_leading(self, work: asyncio.Task, release: bool) -> None:
        self._leading = False
        self._set_gauge(False)
        stopped = await self._cancel_work(work)
        if release and stopped:
            await self.release()
        self._log.info("stopped leading")
        try:
            self._on_stopped_leading()
        except Exception:
            self._log.exception("on_stopped_leading failed")

    async def _cancel_work(self, work: asyncio.Task) -> bool:
        """Cancel the leading task and wait for it, but only while the lease surely stays ours.

        Others take over no earlier than lease_duration after our last write reached the server,
        hence after we sent it. True if the task has finished.
        """
        work.cancel()
        grace = max(self._written_at + self.config.lease_duration - self._clock(), 0.0)
        await asyncio.wait({work}, timeout=grace)
        if not work.done():
            self._log.error("leading task still running after the lease may have expired")
            return False
        return True

    def _set_gauge(self, leading: bool) -> None:
        if self._gauge is not None:
            self._gauge.labels(self.config.lease_name).set(1 if leading else 0)

    # --- one attempt: client-go's tryAcquireOrRenew ---------------------------------------

    async def _attempt(self, timeout: float) -> bool:
        """Take or keep the lease within `timeout`; every failure is an ordinary False."""
        started = self._clock()
        try:
            won = await self._try_acquire_or_renew(asyncio.get_running_loop().time() + timeout)
        except ApiStatusError as err:
            if err.code == 409:  # someone else wrote the lease since we read it: the next attempt rereads
                self._log.info("lost a race for the lease", error=str(err))
            else:
                self._log.warning("lease request failed", error=str(err))
            won = False
        except TRANSIENT_ERRORS as err:
            self._log.warning("lease request failed", error=repr(err))
            won = False
        if won:
            self._written_at = started
        self._report_new_leader()
        return won

    async def _try_acquire_or_renew(self, deadline: float) -> bool:
        now = self._clock()
        if self.holder == self.identity and self._observed_valid(now) and await self._fast_renew(deadline):
            return True
        lease = await self._get(deadline)
        if lease is None:
            await self._create(deadline)
            return True
        self._observe(lease)
        holder = self.holder
        if holder and holder != self.identity and self._observed_valid(now):
            self._log.debug("lease held by another holder and not expired", holder=holder)
            return False
        record = self._renewal_record() if holder == self.identity else self._takeover_record()
        await self._write(lease, record, deadline)
        return True

    async def _fast_renew(self, deadline: float) -> bool:
        """Renew with the Lease we last wrote, skipping the GET; on any failure the caller rereads."""
        assert self._lease is not None
        try:
            await self._write(self._lease, self._renewal_record(), deadline)
        except _ATTEMPT_ERRORS as err:
            self._log.info("optimistic renewal failed, rereading the lease", error=str(err) or repr(err))
            return False
        return True

    def _observed_valid(self, now: float) -> bool:
        """Whether the observed record has not expired by our own clock; its renewTime is never read."""
        return self._observed_at + int(self._observed.get("leaseDurationSeconds") or 0) > now

    def _observe(self, lease: dict) -> None:
        """Keep the lease for its resourceVersion; restart the expiry clock only if the record changed."""
        self._lease = lease
        spec = lease.get("spec") or {}
        if spec != self._observed:
            self._observed = spec
            self._observed_at = self._clock()

    def _report_new_leader(self) -> None:
        holder = self._observed.get("holderIdentity") or ""
        if self._lease is None or holder == self._reported_leader:
            return
        self._reported_leader = holder
        if holder and self._on_new_leader is not None:  # a released lease has no leader to report
            try:
                self._on_new_leader(holder)
            except Exception:
                self._log.exception("on_new_leader failed")

    # --- election records -----------------------------------------------------------------

    def _record(self, now: str, acquire_time: str, transitions: int) -> dict:
        return {**self._observed, "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.config.lease_duration),
                "acquireTime": acquire_time, "renewTime": now, "leaseTransitions": transitions}

    def _renewal_record(self) -> dict:
        """Still ours: acquireTime and leaseTransitions stay as they are."""
        now = micro_time()
        return self._record(now, self._observed.get("acquireTime") or now, self._observed.get("leaseTransitions") or 0)

    def _takeover_record(self) -> dict:
        """A new term (from another holder, or from a released lease): one more transition."""
        now = micro_time()
        return self._record(now, now, (self._observed.get("leaseTransitions") or 0) + 1)

    def _released_record(self) -> dict:
        now = micro_time()
        return {**self._observed, "holderIdentity": "", "leaseDurationSeconds": RELEASED_LEASE_SECONDS,
                "acquireTime": now, "renewTime": now, "leaseTransitions": self._observed.get("leaseTransitions") or 0}

    # --- requests -------------------------------------------------------------------------

    async def _get(self, deadline: float) -> dict | None:
        try:
            return await self._request("GET", self._path, deadline)
        except ApiStatusError as err:
            if err.code == 404:
                return None
            raise

    async def _create(self, deadline: float) -> None:
        now = micro_time()
        spec = {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.config.lease_duration),
                "acquireTime": now, "renewTime": now, "leaseTransitions": 0}
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.config.lease_name, "namespace": self.config.namespace}, "spec": spec}
        self._observe_own_write(await self._request("POST", LEASES_PATH.format(namespace=self.config.namespace),
                                                    deadline, body))

    async def _write(self, lease: dict, spec: dict, deadline: float) -> None:
        """PUT the lease with its resourceVersion: 409 if anyone wrote it since we read it."""
        body = {**lease, "spec": spec}
        self._observe_own_write(await self._request("PUT", self._path, deadline, body))

    def _observe_own_write(self, lease: dict | None) -> None:
        if lease is None:  # (the Lease API answers a write with the Lease: an empty answer is a broken server)
            raise ValueError("an empty answer where the Lease written was due")
        self._lease = lease
        self._observed = lease.get("spec") or {}
        self._observed_at = self._clock()

    async def _request(self, method: str, path: str, deadline: float, body: dict | None = None) -> dict | None:
        """One request, cut off at `deadline` (event loop time) with TimeoutError; its answer (None: empty).

        The asyncio timeout bounds it: the client's own timeout is set a second later, so that it never
        fires first and the attempt never outlives its deadline.
        """
        async with asyncio.timeout_at(deadline):
            timeout = max(deadline - asyncio.get_running_loop().time(), 0.0) + 1.0
            return await self._api.call(method, path, body, timeout=timeout)


__all__ = ["JITTER_FACTOR", "LeaderElectionConfig", "LeaderElector", "default_identity", "micro_time"]
