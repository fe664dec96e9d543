"""The HTTP endpoints a cluster scrapes and probes: /metrics, /healthz, /readyz.

    server = Server(registry, problems=controller.problems, unready=lambda: None if synced else "not synced",
                    metrics_auth=DelegatingAuth(rest_client))      # None: plain HTTP, no authentication
    await server.start(metrics=":8443", health=":8081", metrics_tls=server_context(None))
    ...
    await server.stop()

Secure metrics (`metrics_tls` and `metrics_auth`, the default of `run`): /metrics over HTTPS, each
request authenticated and authorised by the API server (metrics_auth.py). /healthz and /readyz stay
plain HTTP on their own listener, for the kubelet's probes. Plain metrics on the health address are
one listener for all three; secure metrics on the health address are refused (the probes would need
HTTPS and a token), except that port 0 twice means two listeners, each on a port of its own.

/healthz is a liveness check: it is answered on the event loop, so a blocked loop fails it by
timing out, and it fails with 500 naming the problem when `problems()` reports one (an informer
whose task died). /readyz answers 200 unless `unready()` gives a reason (500 with that reason).
An address of "0" (or empty) turns that listener off; port 0 lets the OS pick one, and `start()`
returns what was bound.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from apimachinery.serving import BoundedSite, ConnectionLimits, bound_address, runner_options

log = structlog.get_logger("controller.runtime.server")

# Each listener's bounds (apimachinery/serving.py): scrapers and probes are a handful, each request quick.
ENDPOINT_LIMITS = ConnectionLimits(max_connections=64, handshake_timeout=5.0, header_timeout=30.0)


def parse_address(address: str) -> tuple[str, int] | None:
    """"host:port", ":port" (every interface) or "[::1]:port"; None for "0" or "" (off)."""
    if address in ("", "0"):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"invalid address {address!r}: expected host:port or :port")
    return host.strip("[]") or "0.0.0.0", int(port)


class Server:
    def __init__(self, registry: CollectorRegistry, problems: Callable[[], list[str]],
                 unready: Callable[[], str | None], metrics_auth=None,
                 limits: ConnectionLimits = ENDPOINT_LIMITS) -> None:
        """`metrics_auth`: an aiohttp middleware's owner (`DelegatingAuth`) every /metrics request must pass."""
        self.registry = registry
        self.metrics_auth = metrics_auth
        self.problems = problems
        self.unready = unready
        self.limits = limits
        self._runners: list[web.AppRunner] = []
        self.sites: dict[str, BoundedSite] = {}  # "metrics" / "health" -> its listener
        self.addresses: dict[str, str] = {}  # "metrics" / "health" -> the "host:port" bound

    async def start(self, metrics: str, health: str, metrics_tls: ssl.SSLContext | None = None
                    ) -> dict[str, str]:
        """Listen; `metrics_tls` serves /metrics over HTTPS. ValueError for secure metrics on the health port."""
        metrics_at, health_at = parse_address(metrics), parse_address(health)
        routes = {"metrics": [web.get("/metrics", self.metrics)],
                  "health": [web.get("/healthz", self.healthz), web.get("/readyz", self.readyz)]}
        secure = metrics_tls is not None or self.metrics_auth is not None
        if secure and shares_listener(metrics, health):
            raise ValueError(same_address_error(metrics))
        schemes = {"metrics": "https" if metrics_tls is not None else "http", "health": "http"}
        if metrics_at is not None and metrics_at == health_at and not secure:
            bound = await self._listen("metrics", metrics_at, routes["metrics"] + routes["health"])
            self.addresses = {"metrics": bound, "health": bound}
        else:
            for name, where in (("metrics", metrics_at), ("health", health_at)):
                if where is not None:
                    middlewares = [self.metrics_auth.middleware] if name == "metrics" and self.metrics_auth else []
                    self.addresses[name] = await self._listen(name, where, routes[name], middlewares,
                                                              metrics_tls if name == "metrics" else None)
        for name, bound in self.addresses.items():
            log.info(f"serving {name}", address=bound, scheme=schemes[name],
                     **({"authentication": self.metrics_auth is not None} if name == "metrics" else {}))
        return self.addresses

    async def _listen(self, name: str, where: tuple[str, int], routes: list, middlewares: list | None = None,
                      tls: ssl.SSLContext | None = None) -> str:
        app = web.Application(middlewares=middlewares or [])
        app.add_routes(routes)
        # Probes every few seconds: no access log.
        runner = web.AppRunner(app, access_log=None, handle_signals=False, **runner_options(self.limits))
        await runner.setup()
        self._runners.append(runner)
        site = self.sites[name] = BoundedSite(runner, where[0], where[1], tls, self.limits)
        await site.start()
        return bound_address(runner)

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners = []
        if self.metrics_auth is not None:
            await self.metrics_auth.close()
        self.sites = {}

    # --- handlers -------------------------------------------------------------------------

    async def metrics(self, request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        return web.Response(body=encoder(self.registry), headers={"Content-Type": content_type})

    async def healthz(self, request: web.Request) -> web.Response:
        problems = self.problems()
        if problems:
            return web.Response(status=500, text="\n".join(problems) + "\n")
        return web.Response(text="ok\n")

    async def readyz(self, request: web.Request) -> web.Response:
        reason = self.unready()
        if reason:
            return web.Response(status=500, text=f"{reason}\n")
        return web.Response(text="ok\n")


def same_address_error(address: str) -> str:
    return (f"--metrics-address and --health-address are both {address}: secure metrics (HTTPS, a token) and the "
            "kubelet's plain HTTP probes need two ports; give them different addresses, or pass "
            "--no-metrics-secure to serve all three endpoints on one plain HTTP listener")


def shares_listener(metrics: str, health: str) -> bool:
    """The two addresses are one listener (the same host and a fixed port)."""
    metrics_at = parse_address(metrics)
    return metrics_at is not None and metrics_at == parse_address(health) and metrics_at[1] != 0


__all__ = ["ENDPOINT_LIMITS", "Server", "parse_address", "same_address_error", "shares_listener"]
