"""Metrics of the runtime: reconciles and workers with controller-runtime's names, the Event
recorder's backlog, and API requests with client-go's. The job metrics are the engine's
(controller/jobs/execution/metrics.py).

Several controllers may share one registry (one per job kind): each family is registered once per
registry (`shared`), and every series carries the controller's name."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

T = TypeVar("T")

_families: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # registry -> {key: families}


def shared(registry: CollectorRegistry, key: str, make: Callable[[], T]) -> T:
    """The metric families `make()` registers on `registry`, made once per registry and key, so that the
    controllers of several kinds can share a registry."""
    by_key = _families.setdefault(registry, {})
    if key not in by_key:
        by_key[key] = make()
    return by_key[key]

class Children:
    """The labelled children of metric families, each made on first use and kept: `labels()` takes a lock and
    builds a key on every call, which in a burst of 500 jobs was some 17,000 calls and a few percent of the CPU."""

    def __init__(self) -> None:
        self._made: dict[tuple, object] = {}

    def __call__(self, family, *labels: str):
        key = (family, labels)
        child = self._made.get(key)
        if child is None:
            child = self._made[key] = family.labels(*labels)
        return child


# controller-runtime's reconcile time buckets (pkg/internal/controller/metrics).
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
                     0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
                     40, 50, 60)


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None, name: str) -> None:
        self.enabled = registry is not None
        self.name = name  # the `controller` label
        if registry is None:
            return
        families = shared(registry, "controller", lambda: _controller_families(registry))
        self.reconcile_total, self.reconcile_errors, self.reconcile_time, self.max_concurrent, \
            self.active_workers = families
        self._child = Children()

    def observe_reconcile(self, seconds: float, result: str) -> None:
        if not self.enabled:
            return
        self._child(self.reconcile_time, self.name).observe(seconds)
        self._child(self.reconcile_total, self.name, result).inc()
        if result == "error":
            self._child(self.reconcile_errors, self.name).inc()

    def workers(self, active_delta: int = 0, maximum: int | None = None) -> None:
        if not self.enabled:
            return
        if maximum is not None:
            self.max_concurrent.labels(self.name).set(maximum)
        if active_delta:
            self._child(self.active_workers, self.name).inc(active_delta)


def _controller_families(registry: CollectorRegistry) -> tuple:
    return (Counter("controller_runtime_reconcile_total", "Total number of reconciliations per controller",
                    ["controller", "result"], registry=registry),
            Counter("controller_runtime_reconcile_errors_total", "Total number of reconciliation errors per "
                    "controller", ["controller"], registry=registry),
            Histogram("controller_runtime_reconcile_time_seconds", "Length of time per reconciliation per "
                      "controller", ["controller"], buckets=RECONCILE_BUCKETS, registry=registry),
            Gauge("controller_runtime_max_concurrent_reconciles", "Maximum number of concurrent reconciles per "
                  "controller", ["controller"], registry=registry),
            Gauge("controller_runtime_active_workers", "Number of currently used workers per controller",
                  ["controller"], registry=registry))

class EventMetrics:
    """The event recorder's backlog and outcome (an Event is best effort: dropped ones are counted here)."""

    def __init__(self, registry: CollectorRegistry | None, name: str) -> None:
        self.enabled = registry is not None
        if registry is None:
            return
        backlog, outcomes = shared(registry, "events", lambda: (
            Gauge("genericjob_events_pending", "Events queued or being sent", ["controller"], registry=registry),
            Counter("genericjob_events_total", "Events (and repeat-count patches) sent or dropped",
                    ["controller", "result"], registry=registry)))
        self.backlog = backlog.labels(name)
        self.outcomes = {result: outcomes.labels(name, result) for result in ("sent", "dropped")}

    def pending(self, count: int) -> None:
        if self.enabled:
            self.backlog.set(count)

    def sent(self) -> None:
        if self.enabled:
            self.outcomes["sent"].inc()

    def dropped(self) -> None:
        if self.enabled:
            self.outcomes["dropped"].inc()


class RequestMetrics:
    """client-go's rest_client metrics, labelled by verb and resource instead of host and method."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter("rest_client_requests_total", "API server requests, by verb, resource and HTTP "
                                "status code (<error> when no response came)", ["verb", "resource", "code"],
                                registry=registry)
        self.latency = Histogram("rest_client_request_duration_seconds", "Seconds until the API server's response "
                                 "headers arrived (a watch: until it opened)", ["verb", "resource"],
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
                                 registry=registry)

        self._child = Children()

    def observe(self, verb: str, resource: str, code: str, seconds: float) -> None:
        self._child(self.requests, verb, resource, code).inc()
        self._child(self.latency, verb, resource).observe(seconds)
