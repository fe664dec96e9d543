"""The whole `run` program: API client, controller, leader election, HTTP endpoints, signals.

    manager = Manager(rest_client, ManagerConfig(...))     # rest_client: a kubeclient.rest.RestClient
    exit_code = await manager.run()                         # until manager.stop() (a signal)

The order follows the design notes (shared/design/CONTROLLER.md, "Leader election"):
1. the HTTP endpoints come up first, so probes and scrapes answer during start-up;
1a. the admission webhook (webhook_server.py, when configured) listens too, on every replica and at once: it
   needs neither the caches nor the lease; /readyz waits for its certificate;
1b. the start-up checks (preflight.py) make one small request per watched resource and the Lease,
   so that bad credentials, missing RBAC, a missing CRD or a silent server end the process with a
   message saying what to do, instead of informers retrying in silence until --sync-timeout;
2. the informers start and sync whether or not we lead: a standby replica keeps warm caches and
   is ready (/readyz 200), so a handover only waits for the lease, not for a relist;
3. workers run only while we hold the lease: they start in `on_started_leading`, which then
   waits until the elector cancels it;
4. losing the lease cancels the workers at once and `run()` returns 1: the process exits rather
   than ever reconciling without the lease (a fresh process stands by again);
5. `stop()` (SIGTERM) stops taking work, lets in-flight reconciles finish within the shutdown
   timeout, releases the lease (the elector does so when cancelled), and `run()` returns 0.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog
import uvloop
from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

from controller.runtime.certs import POLL_SECONDS, CertificateError, CertWatcher, server_context
from controller.runtime.controller import ControllerConfig, Runnable
from controller.runtime.leader import LeaderElectionConfig, LeaderElector
from controller.runtime.metrics import RequestMetrics
from controller.runtime.metrics_auth import DelegatingAuth
from controller.runtime.preflight import PreflightError, preflight
from controller.runtime.server import Server
from controller.runtime.webhook_server import Webhook, WebhookConfig
from informers import SyncTimeoutError
from kubeclient import loading
from kubeclient.kube_config_parts import ConfigException
from kubeclient.rest import RestClient
from kubeclient.settings import ClientSettings

log = structlog.get_logger("controller.runtime.manager")

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
USER_AGENT = "genericjob-controller/0.1.0"  # the program's name and version (pyproject), not a kind's
EXIT_OK, EXIT_FAILED = 0, 1
EVENT_FLUSH_SECONDS = 2.0  # what stopping the event recorder may add to the drain


@dataclass(frozen=True)
class ManagerConfig:
    controller: ControllerConfig = field(default_factory=ControllerConfig)
    leader_election: LeaderElectionConfig | None = None  # None: lead unconditionally (a single replica)
    metrics_address: str = ":8443"
    health_address: str = ":8081"
    # HTTPS /metrics for callers the API server authenticates and authorises (see metrics_auth.py);
    # False: plain HTTP for anyone, as `local` and the test harnesses use it.
    metrics_secure: bool = True
    metrics_cert_dir: str | None = None  # tls.crt and tls.key; None: a self-signed certificate made at start
    metrics_cert_poll: float = POLL_SECONDS  # how often the directory's files are re-read (renewals)
    sync_timeout: float = 120.0
    # What runs under the manager: (rest client, controller config, registry) -> Controller. The command
    # line gives the job controller of the kinds it serves (controller/kinds/registry.py).
    make_controller: Callable[[RestClient, ControllerConfig, CollectorRegistry], Runnable] | None = None
    # The admission webhook: its port and certificates (None: not served), and what serves it: (rest client,
    # webhook config, registry) -> Webhook, the kinds' handlers (controller/jobs/schema/admission.py make_webhook).
    webhook: WebhookConfig | None = None
    make_webhook: Callable[[RestClient, WebhookConfig, CollectorRegistry], Webhook] | None = None


def new_registry() -> CollectorRegistry:
    """The program's own registry (not prometheus_client's global one), with process and GC metrics."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


class Manager:
    def __init__(self, rest: RestClient, config: ManagerConfig, registry: CollectorRegistry | None = None
                 ) -> None:
        self.config = config
        self.registry = registry if registry is not None else new_registry()
        if config.make_controller is None:
            raise ValueError("ManagerConfig.make_controller is not set: nothing to run")
        self.controller = config.make_controller(rest, config.controller, self.registry)
        self.server = Server(self.registry, self.controller.problems, self._unready,
                             metrics_auth=DelegatingAuth(rest) if config.metrics_secure else None)
        self.webhook: Webhook | None = None
        if config.webhook is not None:
            if config.make_webhook is None:
                raise ValueError("ManagerConfig.webhook is set but make_webhook is not: nothing to serve it")
            self.webhook = config.make_webhook(rest, config.webhook, self.registry)
        self.elector: LeaderElector | None = None
        if config.leader_election is not None:
            self.elector = LeaderElector(rest, config.leader_election, self._lead, self._stopped_leading,
                                         on_new_leader=self._new_leader, registry=self.registry)
        self._stop = asyncio.Event()
        self._synced = False
        self.exit_reason = ""

    def stop(self) -> None:
        """Shut down cleanly: finish in-flight reconciles, release the lease, return 0. Safe from a signal."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    async def run(self) -> int:
        self._warn_about_timings()
        watcher: CertWatcher | None = None
        try:
            tls = None
            if self.config.metrics_secure and self.config.metrics_cert_dir:
                watcher = CertWatcher(self.config.metrics_cert_dir, self.config.metrics_cert_poll, self.registry)
                tls = watcher.context
            elif self.config.metrics_secure:
                tls = server_context(None)
            await self.server.start(self.config.metrics_address, self.config.health_address, metrics_tls=tls)
        except (CertificateError, ValueError) as err:
            log.error("cannot serve metrics", error=str(err))
            await self.server.stop()
            return self._exit(EXIT_FAILED, "cannot serve metrics")
        except OSError as err:  # the port is taken, or the address is not ours
            log.error("cannot listen", error=str(err))
            await self.server.stop()
            return self._exit(EXIT_FAILED, "cannot listen")
        try:
            if self.webhook is not None:
                await self.webhook.start()
        except (CertificateError, ValueError) as err:
            log.error("cannot serve the admission webhook", error=str(err))
            await self.server.stop()
            return self._exit(EXIT_FAILED, "cannot serve the admission webhook")
        except OSError as err:
            log.error("cannot listen for the admission webhook", error=str(err))
            await self.server.stop()
            return self._exit(EXIT_FAILED, "cannot listen")
        # A renewed certificate (cert-manager's) is served without a restart.
        watching = asyncio.create_task(watcher.watch(), name="metrics-cert-watcher") if watcher else None
        try:
            return await self._run()
        finally:
            if watching is not None:
                watching.cancel()
                await asyncio.gather(watching, return_exceptions=True)
            self._synced = False
            await self.controller.stop()  # workers are stopped by now: this stops the informers
            if self.webhook is not None:  # answering until the last moment: the API server may still call
                await self.webhook.stop()
            await self.server.stop()
            log.info("stopped", reason=self.exit_reason)

    async def _run(self) -> int:
        started = asyncio.get_running_loop().time()
        try:
            if not await self._unless_stopped(self._preflight()):
                return self._exit(EXIT_OK, "stopped during the start-up checks")
        except PreflightError as err:
            log.error(str(err))
            return self._exit(EXIT_FAILED, "start-up check failed")
        self.controller.start_informers()
        remaining = max(self.config.sync_timeout - (asyncio.get_running_loop().time() - started), 1.0)
        try:
            if not await self._unless_stopped(self.controller.wait_for_sync(remaining)):
                return self._exit(EXIT_OK, "stopped before the caches synced")
        except SyncTimeoutError as err:
            log.error("caches did not sync", error=str(err))
            return self._exit(EXIT_FAILED, "caches did not sync")
        self._synced = True
        log.info("caches synced")
        if self.elector is None:
            self.controller.run_workers()
            log.info("running workers without leader election", workers=self.config.controller.workers)
            await self._stop.wait()
            await self.controller.stop_workers(drain=True)
            return self._exit(EXIT_OK, "stop requested")
        try:
            if not await self._unless_stopped(self.elector.run()):
                return self._exit(EXIT_OK, "stop requested")  # the cancelled elector drained and released
        except Exception:
            log.exception("leading failed")
            return self._exit(EXIT_FAILED, "leading failed")
        # run() returned by itself: a renewal failed or another holder took the lease.
        return self._exit(EXIT_FAILED, "leadership lost")

    async def _preflight(self) -> None:
        """Fail fast, saying what to do, on what would otherwise be retried in silence until --sync-timeout."""
        election = self.config.leader_election
        await preflight(self.controller.client.rest,
                        [(informer.resource, informer.namespace) for informer in self.controller.factory.informers],
                        lease=(election.namespace, election.lease_name) if election else None,
                        timeout=self.config.sync_timeout, hint=getattr(self.controller, "missing_api_hint", None))

    async def _unless_stopped(self, work: Awaitable) -> bool:
        """Await `work` unless stop() comes first, in which case cancel it (and wait for it). True if it ended."""
        task = asyncio.ensure_future(work)
        stopped = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return False
        task.result()  # its exception, if any
        return True

    def _exit(self, code: int, reason: str) -> int:
        self.exit_reason = reason
        return code

    # --- leader election callbacks ---------------------------------------------------------

    async def _lead(self) -> None:
        """Run the workers until the elector cancels this; then drain them (shutdown) or drop them (lease lost)."""
        log.info("started leading", identity=self.elector.identity if self.elector else "")
        self.controller.run_workers()
        try:
            await asyncio.Future()  # until cancelled
        finally:
            await self.controller.stop_workers(drain=self.stopping)

    def _stopped_leading(self) -> None:
        if self.stopping:
            log.info("stopped leading for shutdown")
        else:
            log.error("leader election lost: exiting")

    def _new_leader(self, identity: str) -> None:
        if self.elector is not None and identity != self.elector.identity:
            log.info("new leader elected", leader=identity)

    # --- readiness ------------------------------------------------------------------------

    def _unready(self) -> str | None:
        if self.stopping:
            return "shutting down"
        if not self._synced:
            return "caches not synced"
        return self.webhook.unready() if self.webhook is not None else None

    def _warn_about_timings(self) -> None:
        """The drain happens while nobody renews the lease: it must end before the lease could expire."""
        election = self.config.leader_election
        if election is None:
            return
        budget = election.lease_duration - election.retry_period
        if self.config.controller.shutdown_timeout + EVENT_FLUSH_SECONDS > budget:
            log.warning("the shutdown timeout may outlast the lease: in-flight reconciles are cut off when it "
                        "could expire, and the lease is then left to expire instead of being released",
                        shutdown_timeout=self.config.controller.shutdown_timeout,
                        lease_duration=election.lease_duration, retry_period=election.retry_period)


# --- the program ----------------------------------------------------------------------------


def in_cluster() -> bool:
    return loading.in_cluster(SERVICE_ACCOUNT_DIR)


def pod_namespace(default: str = "default") -> str:
    """The namespace this pod runs in (its service account's), else `default`."""
    try:
        with open(f"{SERVICE_ACCOUNT_DIR}/namespace") as f:
            return f.read().strip() or default
    except OSError:
        return default


async def client_settings(kubeconfig: str | None) -> ClientSettings:
    """controller-runtime's order: --kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config (kubeclient/loading.py),
    with credentials that refresh."""
    settings = await loading.load_settings(kubeconfig)
    if settings.source == "in-cluster":
        log.info("using in-cluster configuration")
    else:
        log.info("using kubeconfig", source=settings.source)
    return settings


def _on_signals(loop: asyncio.AbstractEventLoop, manager: Manager) -> None:
    """The first SIGTERM/SIGINT shuts down cleanly; a second one exits at once."""
    def handle(signum: int) -> None:
        if manager.stopping:
            log.warning("second signal: exiting at once", signal=signal.Signals(signum).name)
            os._exit(EXIT_FAILED)
        log.info("shutting down", signal=signal.Signals(signum).name)
        manager.stop()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, handle, signum)


async def run_program(config: ManagerConfig, kubeconfig: str | None) -> int:
    disable_created_metrics()  # no *_created series: controller-runtime has none, and they double the page
    try:
        settings = await client_settings(kubeconfig)
    except (ConfigException, OSError) as err:
        log.error("no usable cluster configuration", error=str(err))
        return EXIT_FAILED
    registry = new_registry()
    async with RestClient(settings, observer=RequestMetrics(registry), user_agent=USER_AGENT) as rest:
        manager = Manager(rest, config, registry)
        _on_signals(asyncio.get_running_loop(), manager)
        election = config.leader_election
        log.info("starting", namespaces=",".join(config.controller.watched_namespaces()) or "(all)",
                 workers=config.controller.workers,
                 event_loop=type(asyncio.get_running_loop()).__module__.partition(".")[0],
                 leader_election=election is not None,
                 lease=f"{election.namespace}/{election.lease_name}" if election else None,
                 identity=election.identity if election else None)
        return await manager.run()


# The cyclic collector's first threshold (the default is 700 container allocations). Decoded JSON and reconciles
# make containers by the thousand and almost never a cycle (what they drop, reference counting frees): at 700 a
# --qps 0 burst of 200 jobs ran 189 collections for 48 ms of CPU, at 10,000 it ran 12 for 21 ms. Cyclic garbage
# (rare here) waits longer before it is freed.
GC_YOUNG_THRESHOLD = 10_000


def main(config: ManagerConfig, kubeconfig: str | None) -> int:
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)
    # uvloop: an asyncio event loop on libuv, its transports and TLS written in C. The controller's CPU is mostly
    # the loop's: reading watch streams and answers through TLS, waking tasks. A --qps 0 burst of 500 jobs took
    # ~7% less CPU than on asyncio's own loop (BENCHMARKS.md, issue 27). Nothing here depends on which loop runs.
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(run_program(config, kubeconfig))


__all__ = ["Manager", "ManagerConfig", "client_settings", "in_cluster", "main", "new_registry",
           "pod_namespace", "run_program"]
