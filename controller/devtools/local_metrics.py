"""`local --metrics-address ADDR`: the controller's Prometheus /metrics, the page `run` serves, for a look at a
local run (a platform team checking its dashboards or alerts against real series).

    metrics = LocalMetrics()                        # before the controller is made: it registers into it
    controller = make_controller(client, config, metrics.registry)
    url = await metrics.start("127.0.0.1:9090")     # "http://127.0.0.1:9090/metrics"
    ...
    await metrics.stop()

Plain HTTP with no authentication, where `run` serves HTTPS and has the API server review every scraper's
token (metrics_auth.py). Here the API server is this process, and its one credential is the instance's
admin token, which may run anything as this user: asking a scraper for it would hand that key to every
Prometheus or curl pointed at the page. The page holds no secret (job and namespace names, counts,
latencies), and `:PORT` means the loopback address, so by default only this machine can read it; a host
that is not a loopback address is served as asked, with a warning that says who may read it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from prometheus_client import CollectorRegistry, disable_created_metrics

from controller.runtime.manager import new_registry
from controller.runtime.server import Server, parse_address
from localcluster import is_loopback

LOOPBACK = "127.0.0.1"


def metrics_address(text: str) -> str:
    """The flag's type: HOST:PORT, or :PORT for the loopback address (port 0: a free one)."""
    try:
        where = parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if where is None:
        raise argparse.ArgumentTypeError(f"invalid address {text!r}: expected host:port or :port")
    host = LOOPBACK if text.rpartition(":")[0] == "" else where[0]
    return f"[{host}]:{where[1]}" if ":" in host else f"{host}:{where[1]}"


def exposure_warning(address: str) -> str | None:
    host = address.rpartition(":")[0].strip("[]")
    if is_loopback(host):
        return None
    return (f"WARNING: serving /metrics on {address}, not a loopback address, without authentication: anyone who "
            "can reach it may read the jobs' names, namespaces and counts")


class LocalMetrics:
    """The program's metrics registry (what the controller, its client and the process report) and the plain
    HTTP listener that serves it."""

    def __init__(self) -> None:
        disable_created_metrics()  # as under `run`: no *_created series, the same page
        self.registry: CollectorRegistry = new_registry()
        self._server: Server | None = None

    async def start(self, address: str, problems: Callable[[], list[str]]) -> str:
        """Listen on `address` (HOST:PORT, as `metrics_address` gives it); the URL of the page. OSError when the
        address cannot be bound."""
        self._server = Server(self.registry, problems, unready=lambda: None, metrics_auth=None)
        try:
            bound = (await self._server.start(metrics=address, health="0"))["metrics"]
        except OSError:
            await self.stop()
            raise
        return f"http://{bound}/metrics"

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop()
            self._server = None


__all__ = ["LocalMetrics", "exposure_warning", "metrics_address"]
