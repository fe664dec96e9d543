"""The admission webhook's HTTPS server: AdmissionReviews in, answers out, one path per webhook.

    webhook = Webhook(rest_client, {"/validate-...-genericjob": review_genericjob}, WebhookConfig(port=9443))
    await webhook.start()             # listens at once; handshakes succeed once a certificate is served
    webhook.unready()                 # a reason while no certificate is served (for /readyz), else None
    await webhook.stop()

Each handler takes the decoded AdmissionReview and returns the one to send back (pure and fast: the kinds'
decisions, controller/jobs/schema/admission.py); it raises `BadRequest` for a body that is not a review it can answer.
The server is generic and knows no kind. What it guarantees, as controller-runtime's webhook server does:

- POST only (405 otherwise), `Content-Type: application/json` (400 otherwise), a body of at most `max_body`
  (3 MiB, the API server's own request limit; 413 past it); a body that is not an AdmissionReview is 400 with a
  message. The API server treats any of these as a failed call (its failurePolicy decides), as it would a crash.
- A time bound per request, `timeout` (5 s, half the API server's 10 s): reading the body and deciding. A costly
  review (counted before it is decoded: costly_reviews.py) is decoded and decided in a worker process, so that no
  review stalls the event loop (whose other work is the controller's: its lease, its informers, /metrics); past
  the bound, or when the client goes away, the work is stopped (the worker killed) and the answer is 500: the API
  server's failurePolicy decides, not us. Handlers are picklable for it (a module's function, or a partial of one).
- A `dryRun` request is answered like any other: no decision has side effects.
- Metrics, controller-runtime's names, `webhook` the path: `controller_runtime_webhook_requests_total{webhook,
  code}` (code: the HTTP status), `controller_runtime_webhook_latency_seconds{webhook}`,
  `controller_runtime_webhook_requests_in_flight{webhook}`.
- Logs: a denial at debug (kind, namespace/name, operation, the message), an error at warning.

Certificates: `cert_dir` (--webhook-cert-dir, cert-manager's mode) serves tls.crt/tls.key from a directory,
re-read when they change (certs.CertWatcher); without it the controller keeps its own (webhook_certs.CertKeeper:
a Secret, the caBundle, rotation). Either way the listener starts at once and is served on every replica, not
only the leader: admission needs no leadership.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from apimachinery.serving import BoundedSite, ConnectionLimits, bound_address, runner_options
from controller.runtime.certs import POLL_SECONDS, CertWatcher
from controller.runtime.costly_reviews import BadRequest, Handler, ReviewPool, costly, decide
from controller.runtime.metrics import Children, shared
from controller.runtime.webhook_certs import CertKeeper, CertKeeperConfig
from kubeclient.rest import RestClient

log = structlog.get_logger("controller.runtime.webhook_server")

DEFAULT_PORT = 9443
MAX_BODY = 3 * 1024 * 1024  # the API server's own limit on a request body
REQUEST_TIMEOUT = 5.0  # the API server waits 10 s (timeoutSeconds) at most
JSON = "application/json"
# The listener's bounds (apimachinery/serving.py). The API server's calls take milliseconds and reuse a few
# connections; 128 open connections hold at most ~32 MiB of TLS buffers. A connection must finish its handshake in
# 5 s and then its request's head within 30 s (the same timer closes it after 30 s idle): cut within 35 s.
WEBHOOK_LIMITS = ConnectionLimits(max_connections=128, handshake_timeout=5.0, header_timeout=30.0)

@dataclass(frozen=True)
class WebhookConfig:
    port: int = DEFAULT_PORT  # 0: the OS picks one (the command line's 0 turns the webhook off instead)
    host: str = ""  # every address
    cert_dir: str | None = None  # tls.crt and tls.key, re-read when they change; None: the controller's own
    cert_poll: float = POLL_SECONDS
    keeper: CertKeeperConfig | None = None  # without cert_dir: the Secret, the configuration, the durations
    max_body: int = MAX_BODY
    timeout: float = REQUEST_TIMEOUT
    limits: ConnectionLimits = WEBHOOK_LIMITS


class WebhookMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        registry = registry if registry is not None else CollectorRegistry()
        self.requests, self.latency, self.in_flight = shared(registry, "webhook", lambda: (
            Counter("controller_runtime_webhook_requests_total", "Total number of admission requests by HTTP "
                    "status code.", ["webhook", "code"], registry=registry),
            Histogram("controller_runtime_webhook_latency_seconds", "Histogram of the latency of processing "
                      "admission requests", ["webhook"], registry=registry),
            Gauge("controller_runtime_webhook_requests_in_flight", "Current number of admission requests being "
                  "served.", ["webhook"], registry=registry)))
        self.child = Children()


class WebhookServer:
    """The listener and its handlers; the TLS context is given to `start` (see Webhook for the certificates)."""

    def __init__(self, handlers: Mapping[str, Handler], registry: CollectorRegistry | None = None, *,
                 max_body: int = MAX_BODY, timeout: float = REQUEST_TIMEOUT,
                 limits: ConnectionLimits = WEBHOOK_LIMITS) -> None:
        self.handlers = dict(handlers)
        self.limits = limits
        self.site: BoundedSite | None = None
        self.metrics = WebhookMetrics(registry)
        self.max_body, self.timeout = max_body, timeout
        self._runner: web.AppRunner | None = None
        self._pool: ReviewPool | None = None
        self.address = ""

    async def start(self, host: str, port: int, tls) -> str:
        """Listen (TLS); the "host:port" bound. OSError when the port is taken."""
        # Its processes start with the first costly review, not here: most servers never meet one (every local
        # run and test starts a webhook), and the forkserver's imports cost a second of CPU.
        self._pool = ReviewPool(self.handlers)
        app = web.Application(client_max_size=self.max_body)
        for path in self.handlers:
            app.router.add_post(path, self._instrumented(path))
        # handler_cancellation: a request whose client has gone (the API server gave up) stops being decided.
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, handler_cancellation=True,
                                     **runner_options(self.limits))
        await self._runner.setup()
        self.site = BoundedSite(self._runner, host or None, port, tls, self.limits)
        await self.site.start()
        self.address = bound_address(self._runner)
        log.info("serving the admission webhook", address=self.address, scheme="https", paths=",".join(self.handlers))
        return self.address

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._pool is not None:
            await self._pool.stop()
            self._pool = None

    def _instrumented(self, path: str):
        metrics = self.metrics
        in_flight, latency = metrics.child(metrics.in_flight, path), metrics.child(metrics.latency, path)

        async def handle(request: web.Request) -> web.StreamResponse:
            started = time.perf_counter()
            in_flight.inc()
            status = 500
            try:
                response = await self._answer(path, request)
                status = response.status
                return response
            except web.HTTPException as err:  # 413 from the body's limit
                status = err.status
                raise
            finally:
                in_flight.dec()
                latency.observe(time.perf_counter() - started)
                metrics.child(metrics.requests, path, str(status)).inc()

        return handle

    async def _answer(self, path: str, request: web.Request) -> web.Response:
        if request.content_type != JSON:
            return _error(400, f"contentType={request.content_type or '(none)'}, expected {JSON}")
        try:
            async with asyncio.timeout(self.timeout):
                body = await request.read()
                if not body:
                    return _error(400, "request body is empty")
                if costly(body) and self._pool is not None:
                    about, answer = await self._pool.decide(self.handlers[path], body)
                else:
                    about, answer = decide(self.handlers[path], body)
        except TimeoutError:
            log.warning("an admission request took too long; answered 500", webhook=path, timeout=self.timeout)
            return _error(500, f"the admission review took longer than {self.timeout:g}s")
        except BadRequest as err:
            log.warning("bad admission request", webhook=path, error=str(err))
            return _error(400, str(err))
        except web.HTTPException:
            raise
        except Exception as err:  # a bug in a decision: answered, logged, never a crash of the server
            log.warning("admission review failed", webhook=path, error=repr(err), exc_info=True)
            return _error(500, f"admission review failed: {err!r}")
        _log_denial(path, about)
        return web.Response(body=answer, content_type=JSON)


def _error(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message + "\n")


def _log_denial(path: str, about: dict) -> None:
    status = about.pop("denied", None)
    if status is None:
        return
    log.debug("admission request denied", webhook=path, **about, code=status.get("code"), message=status.get("message"))


class Webhook:
    """The server and its certificates, started and stopped together; see the module's doc."""

    def __init__(self, rest: RestClient | None, handlers: Mapping[str, Handler], config: WebhookConfig,
                 registry: CollectorRegistry | None = None) -> None:
        if config.cert_dir is None and (config.keeper is None or rest is None):
            raise ValueError("the webhook needs a certificate directory, or an API client and CertKeeperConfig to "
                             "keep its own")
        self.config, self.registry, self.rest = config, registry, rest
        self.server = WebhookServer(handlers, registry, max_body=config.max_body, timeout=config.timeout,
                                    limits=config.limits)
        self.certificates: CertWatcher | CertKeeper | None = None
        self._task: asyncio.Task | None = None

    @property
    def address(self) -> str:
        return self.server.address

    async def start(self) -> str:
        """Listen, and keep the certificate served current. CertificateError (a bad --webhook-cert-dir), OSError
        (the port); the "host:port" bound."""
        if self.config.cert_dir is not None:
            watcher = CertWatcher(self.config.cert_dir, self.config.cert_poll, self.registry,
                                  flag="--webhook-cert-dir", what="webhook")
            self.certificates, work = watcher, watcher.watch()
        else:
            assert self.rest is not None and self.config.keeper is not None  # without cert_dir: checked in __init__
            keeper = CertKeeper(self.rest, self.config.keeper)
            self.certificates, work = keeper, keeper.run()
        try:
            address = await self.server.start(self.config.host, self.config.port, self.certificates.context)
        except BaseException:
            work.close()
            await self.server.stop()
            raise
        self._task = asyncio.create_task(work, name="webhook-certificates")
        return address

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.server.stop()

    def unready(self) -> str | None:
        """Why the webhook cannot answer yet (for /readyz), or None."""
        if self.certificates is None or not self.certificates.serving:
            return "the admission webhook has no certificate to serve yet"
        return None


__all__ = ["DEFAULT_PORT", "MAX_BODY", "WEBHOOK_LIMITS", "BadRequest", "Handler", "Webhook", "WebhookConfig",
           "WebhookServer"]
