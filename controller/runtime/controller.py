"""A controller: informers feed a rate-limited work queue; workers hand its keys to a reconciler.

    controller = Controller(rest_client, ControllerConfig(workers=4), name="some", reconciler=some_reconciler)
    controller.start_informers()            # may run while standing by for leadership
    await controller.wait_for_sync(30)
    controller.run_workers()                # only while leading
    await controller.stop()                 # stop taking work, finish in-flight reconciles

Nothing here knows what is reconciled: the controller is given a reconciler (`Reconciling`, as controller-runtime's
Controller is given its Reconciler), and whoever builds it (the job engine's: controller/jobs/execution/controller.py)
makes its informers with `informer()` and registers handlers that only compute a key and enqueue it.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
from dataclasses import dataclass
from typing import Protocol

import structlog
from prometheus_client import CollectorRegistry

from apimachinery.errors import ApiStatusError
from controller.runtime.client import KubeClient
from controller.runtime.echoes import Echoes
from controller.runtime.events import EventRecorder
from controller.runtime.metrics import ControllerMetrics, EventMetrics
from controller.runtime.result import Result, WritesFailed
from informers import Informer, InformerFactory, InformerOptions, Resource
from informers.informer import Transform
from informers.namespaces import InformerGroup
from kubeclient.rest import RestClient
from workqueue import RateLimitingQueue, ShutDown

log = structlog.get_logger("controller")

# Five minutes: a working informer hears from its watch at least every minute (bookmarks) and re-lists
# within seconds of a 410, so this is minutes of blindness, not a slow moment.
INFORMER_STALE_AFTER = 300.0


@dataclass(frozen=True)
class ControllerConfig:
    """The worker loop's settings; a controller's own extend it (the job engine's:
    controller/jobs/execution/config.py)."""

    namespace: str | None = None  # one namespace to watch; None: see `namespaces`
    namespaces: tuple[str, ...] = ()  # namespaces to watch; with `namespace` unset and this empty: every one
    workers: int = 4
    qps: float = 20.0
    burst: int = 30
    request_timeout: float = 30.0
    informer_options: InformerOptions | None = None
    shutdown_timeout: float = 10.0
    identity: str = ""
    # Liveness: an informer with no proof of a current cache for this long fails /healthz (0: off).
    informer_stale_after: float = INFORMER_STALE_AFTER

    def watched_namespaces(self) -> tuple[str, ...]:
        """The namespaces watched; () for every namespace."""
        names = (self.namespace,) if self.namespace else ()
        return tuple(dict.fromkeys((*names, *self.namespaces)))


class Reconciling(Protocol):
    """What a Controller's workers call (controller-runtime's Reconciler)."""

    async def reconcile(self, key: str) -> Result: ...

    def current_version(self, key: str) -> str | None:
        """The resourceVersion of `key` in the primary cache (None when absent): see Controller._await_newer."""
        ...


class Runnable(Protocol):
    """What the manager runs and checks: a Controller (or what puts one together, as the job engine's JobController),
    or a ControllerGroup of several sharing one factory."""

    @property
    def client(self) -> KubeClient: ...

    @property
    def factory(self) -> InformerFactory: ...

    def start_informers(self) -> None: ...

    async def wait_for_sync(self, timeout: float) -> None: ...

    def run_workers(self) -> None: ...

    async def stop_workers(self, drain: bool = True) -> None: ...

    async def stop(self) -> None: ...

    def healthy(self) -> bool: ...

    def problems(self) -> list[str]: ...


async def start_all(runnable: Runnable, sync_timeout: float) -> None:
    """Informers, sync, workers: the whole of a Runnable, for tests and single-replica runs (its `start`)."""
    runnable.start_informers()
    await runnable.wait_for_sync(sync_timeout)
    runnable.run_workers()


async def stop_all(runnable: Runnable) -> None:
    """Stop taking work, let in-flight reconciles finish within a bound, then stop everything (a Runnable's `stop`)."""
    await runnable.stop_workers()
    await runnable.factory.stop()


class Controller:
    _informers_started = False  # set by start_informers(); until then /healthz has nothing to judge

    def __init__(self, rest: RestClient, config: ControllerConfig | None = None,
                 registry: CollectorRegistry | None = None, *, name: str,
                 factory: InformerFactory | None = None, reconciler: Reconciling | None = None) -> None:
        """`name`: the work queue's and the `controller` label of its metrics; `factory`: an informer factory
        shared with other controllers (a ControllerGroup), by default one of its own; `reconciler`: what the workers
        call, given here or set before `run_workers` (a reconciler made with this controller's client, recorder and
        echoes, as the job engine's, can only be set once they are made)."""
        self.reconciler = reconciler
        self.config = config = config or ControllerConfig()
        self.metrics = ControllerMetrics(registry, name)
        self.client = KubeClient(rest, qps=config.qps, burst=config.burst, timeout=config.request_timeout)
        self.factory = factory if factory is not None else \
            InformerFactory(rest, options=config.informer_options, registry=registry)
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name=name, registry=registry)
        # Keys parked until a version of their object arrives (echoes.py): the watch handlers report arrivals.
        self.echoes = Echoes(lambda key: self.queue.add(key))
        # Events get their own request budget, as controller-runtime's recorder has its own client.
        self.recorder = EventRecorder(self.client.with_own_limit(), host=config.identity or socket.gethostname(),
                                      metrics=EventMetrics(registry, name))
        self._workers: list[asyncio.Task] = []

    def informer(self, resource: Resource, label_selector: str | None = None,
                 transform: Transform | None = None) -> Informer | InformerGroup:
        """The resource in every namespace, in the one watched, or in each of several (one informer
        per namespace, as controller-runtime's multi-namespace cache: RBAC may allow no more); with
        `label_selector`, only the objects it selects are listed, watched and cached; with `transform`,
        each object is cut down to what the controller reads as it enters the cache."""
        namespaces = self.config.watched_namespaces()
        if len(namespaces) < 2:
            return self.factory.informer(resource, namespaces[0] if namespaces else None, label_selector, transform)
        return InformerGroup({namespace: self.factory.informer(resource, namespace, label_selector, transform)
                              for namespace in namespaces})

    # --- lifecycle ------------------------------------------------------------------------

    def start_informers(self) -> None:
        self._informers_started = True
        self.factory.start()

    async def wait_for_sync(self, timeout: float) -> None:
        await self.factory.wait_for_sync(timeout)

    def run_workers(self) -> None:
        if self.reconciler is None:
            raise RuntimeError("a controller's workers need a reconciler")
        self.recorder.start()
        self.metrics.workers(maximum=self.config.workers)
        self._workers = [asyncio.get_running_loop().create_task(self._worker(i)) for i in range(self.config.workers)]

    async def start(self, sync_timeout: float = 60.0) -> None:
        await start_all(self, sync_timeout)

    async def stop(self) -> None:
        await stop_all(self)

    async def stop_workers(self, drain: bool = True) -> None:
        """Stop taking work; with `drain`, let in-flight reconciles finish within the shutdown timeout and
        send the queued Events. Without it (leadership lost) everything in flight is cancelled at once."""
        if drain:
            drained = await self.queue.shutdown_with_drain(timeout=self.config.shutdown_timeout)
            if not drained:
                log.warning("reconciles still running at shutdown", timeout=self.config.shutdown_timeout)
        else:
            self.queue.shutdown()
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        await self.recorder.stop(drain_timeout=2.0 if drain else 0.0)

    @property
    def working(self) -> bool:
        """Are the workers running (only a leader's do)?"""
        return bool(self._workers)

    def healthy(self) -> bool:
        return self.factory.healthy() and all(not t.done() for t in self._workers)

    def problems(self) -> list[str]:
        """What keeps this process from working, for a liveness check: [] when all is well.

        An informer whose task died, or that crashed and has not listed since; a synced informer with
        no completed list, watch opened or watch event for longer than `informer_stale_after` (blind:
        its watches keep failing, or its relists never catch up); and a worker that exited. An
        informer still waiting for its first list is not a problem here (that is readiness).
        """
        found: list[str] = []
        if not self._informers_started:
            return found  # the start-up checks are still running: starting is not a liveness failure
        stale_after = self.config.informer_stale_after
        for status in self.factory.status():
            if not status.running:
                found.append(f"informer {status.resource}: task not running")
            elif status.restarts and not status.healthy:
                found.append(f"informer {status.resource}: crashed {status.restarts} time(s), not listed since; "
                             f"last error: {status.last_error}")
            elif stale_after and status.synced and (status.last_sync_age or 0.0) > stale_after:
                why = f"; last error: {status.last_error}" if status.last_error else ""
                found.append(f"informer {status.resource}: no list or watch event for {status.last_sync_age:.0f} s "
                             f"(more than --informer-stale-after {stale_after:g} s){why}")
        dead = [i for i, task in enumerate(self._workers) if task.done()]
        if dead:
            found.append(f"workers {dead} exited")
        return found

    # --- workers --------------------------------------------------------------------------

    def _await_newer(self, key: str, lost_at: str) -> None:
        """Reconcile `key` as soon as the cache holds a newer version than the one a write lost with (or the one
        its own last write replaced): at once if it came while the write was in flight, else when a watch handler
        reports it (`echoes.arrived`)."""
        assert self.reconciler is not None  # (a worker's result brings it here)
        if self.reconciler.current_version(key) not in (None, lost_at):
            self.queue.add(key)
        else:
            self.echoes.park(key, lost_at)

    async def _worker(self, index: int) -> None:
        reconciler = self.reconciler
        assert reconciler is not None  # (run_workers checks)
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            self.metrics.workers(active_delta=1)
            started = time.perf_counter()
            result = "error"
            # Every log line of this reconcile, wherever it is written, carries the job and this id.
            bound = structlog.contextvars.bind_contextvars(job=key, reconcile_id=_reconcile_id())
            try:
                outcome = await reconciler.reconcile(key)
                if outcome.requeue_after is None and outcome.lost_at is not None:
                    self.queue.forget(key)
                    self._await_newer(key, outcome.lost_at)  # nothing failed: no retry, no backoff
                    result = "requeue"
                elif outcome.requeue_after is None:
                    self.queue.forget(key)
                    result = "success"
                elif outcome.requeue_after > 0:
                    self.queue.forget(key)
                    self.queue.add_after(key, outcome.requeue_after)
                    result = "requeue_after"
                else:
                    if outcome.lost_at is not None:
                        self._await_newer(key, outcome.lost_at)
                    self.queue.add_rate_limited(key)  # the fallback, should the newer version never come
                    result = "requeue"
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("reconcile failed", job=key, error=str(exc), exc_info=not _expected(exc))
                self.queue.add_rate_limited(key)
                wake_up = getattr(exc, "wake_up", None)  # WritesFailed: a deadline the backoff must not delay
                if wake_up is not None:
                    self.queue.add_after(key, wake_up)
            finally:
                elapsed = time.perf_counter() - started
                log.debug("reconciled", result=result, seconds=round(elapsed, 6))
                structlog.contextvars.reset_contextvars(**bound)
                self.metrics.observe_reconcile(elapsed, result)
                self.metrics.workers(active_delta=-1)
                self.queue.done(key)


def _reconcile_id() -> str:
    """Twelve random hex digits, as `uuid4().hex[:12]` gave, without making a UUID (and reading the OS's entropy)
    once a reconcile: the id only tells one reconcile's log lines from another's."""
    return f"{_ids.getrandbits(48):012x}"


_ids = random.Random()  # its own generator: drawing ids leaves the random module's sequence (and its seed) alone


def _expected(exc: Exception) -> bool:
    """API errors and timeouts are part of life; anything else deserves a traceback."""
    return isinstance(exc, ApiStatusError | TimeoutError | OSError | WritesFailed)
