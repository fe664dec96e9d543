"""Prometheus metrics for work queues, named and labelled as controller-runtime's.

The hot path only bumps plain ints and bisects into a bucket list; a custom
collector turns that state into metric families when the registry is scraped.
This costs far less per item than prometheus_client's locked metric objects,
and lets the unfinished-work gauges be computed at scrape time instead of by a
periodic task (client-go refreshes them every 500 ms).

One collector is registered per `CollectorRegistry` and carries every queue
registered on it, each as a `name`/`controller` label pair. Like a labelled
Prometheus child, the state of a name is shared by every queue created with that
name on that registry, so a queue re-created under the same name (e.g. after a
leader-election restart) keeps its counters monotonic.

Scrapes from another thread (prometheus_client's HTTP server) only copy the
state: `list(dict.values())` and `list(list)` run without releasing the GIL.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left
from collections.abc import Hashable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from workqueue.clock import Clock

# controller-runtime: prometheus.ExponentialBuckets(10e-9, 10, 10), i.e. 1e-8 s .. 10 s.
# Parsed from decimal literals so the bounds (and their `le` labels) carry no rounding noise.
DURATION_BUCKETS: tuple[float, ...] = tuple(float(f"1e{i - 8}") for i in range(10))
_BUCKET_LABELS = (*map(floatToGoString, DURATION_BUCKETS), "+Inf")

_LABELS = ("name", "controller")


class _Histogram:
    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        # counts[i] holds observations in (DURATION_BUCKETS[i-1], DURATION_BUCKETS[i]];
        # the extra last slot is the +Inf bucket.
        self.counts = [0] * (len(DURATION_BUCKETS) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(DURATION_BUCKETS, value)] += 1
        self.sum += value

    def cumulative(self) -> tuple[list[tuple[str, float]], float]:
        counts, total_sum = list(self.counts), self.sum
        buckets: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip(_BUCKET_LABELS, counts, strict=True):
            running += count
            buckets.append((bound, running))
        return buckets, total_sum


class QueueMetrics:
    """Metric state of one queue name; the queue calls these hooks on every transition."""

    __slots__ = (
        "_add_times",
        "_start_times",
        "adds",
        "clock",
        "depth",
        "queue_duration",
        "retries",
        "work_duration",
    )

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.depth = 0
        self.adds = 0
        self.retries = 0
        self.queue_duration = _Histogram()
        self.work_duration = _Histogram()
        self._add_times: dict[Hashable, float] = {}
        self._start_times: dict[Hashable, float] = {}

    def added(self, key: Hashable, now: float) -> None:
        """A key became dirty. As in client-go, depth counts dirty keys, so a key re-added
        while being processed counts before done() actually queues it."""
        self.adds += 1
        self.depth += 1
        self._add_times.setdefault(key, now)

    def got(self, key: Hashable, now: float) -> None:
        self.depth -= 1
        self._start_times[key] = now
        added = self._add_times.pop(key, None)
        if added is not None:
            self.queue_duration.observe(now - added)

    def finished(self, key: Hashable, now: float) -> None:
        started = self._start_times.pop(key, None)
        if started is not None:
            self.work_duration.observe(now - started)

    def retried(self) -> None:
        self.retries += 1

    def unfinished(self) -> tuple[float, float]:
        """(total seconds of in-progress work, seconds of the longest-running item)."""
        now = self.clock.now()
        ages = [now - started for started in list(self._start_times.values())]
        return sum(ages), max(ages, default=0.0)


class _WorkqueueCollector:
    def __init__(self) -> None:
        self.queues: dict[str, QueueMetrics] = {}

    def describe(self) -> Iterator[Metric]:
        # Names only, so the registry can detect clashes with other collectors.
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        yield from self._families(dict(self.queues))

    def _families(self, queues: dict[str, QueueMetrics] | None = None) -> Iterator[Metric]:
        depth = GaugeMetricFamily(
            "workqueue_depth", "Current depth of workqueue", labels=_LABELS)
        adds = CounterMetricFamily(
            "workqueue_adds", "Total number of adds handled by workqueue", labels=_LABELS)
        queue_duration = HistogramMetricFamily(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            labels=_LABELS)
        work_duration = HistogramMetricFamily(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels=_LABELS)
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
            "threads by observing the rate at which this increases.",
            labels=_LABELS)
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=_LABELS)
        retries = CounterMetricFamily(
            "workqueue_retries", "Total number of retries handled by workqueue", labels=_LABELS)

        for name, m in (queues or {}).items():
            labels = [name, name]
            depth.add_metric(labels, m.depth)
            adds.add_metric(labels, m.adds)
            queue_duration.add_metric(labels, *m.queue_duration.cumulative())
            work_duration.add_metric(labels, *m.work_duration.cumulative())
            total, oldest = m.unfinished()
            unfinished.add_metric(labels, total)
            longest.add_metric(labels, oldest)
            retries.add_metric(labels, m.retries)
        yield from (depth, adds, queue_duration, work_duration, unfinished, longest, retries)


# Weak keys: a registry dropped by its owner (e.g. a test's) takes its collector along.
_collectors: weakref.WeakKeyDictionary[CollectorRegistry, _WorkqueueCollector] = (
    weakref.WeakKeyDictionary()
)


def queue_metrics(registry: CollectorRegistry, name: str, clock: Clock) -> QueueMetrics:
    """The metric state for queue `name` on `registry`, created and registered on first use."""
    if not name:
        raise ValueError("a queue needs a name to report metrics")
    collector = _collectors.get(registry)
    if collector is None:
        collector = _WorkqueueCollector()
        registry.register(collector)  # may raise on a name clash: remember it only once registered
        _collectors[registry] = collector
    metrics = collector.queues.get(name)
    if metrics is None:
        metrics = collector.queues[name] = QueueMetrics(clock)
    elif metrics.clock != clock:
        # Durations measured against two time bases cannot share one histogram.
        raise ValueError(f"workqueue {name!r} is already registered with a different clock")
    return metrics
