"""Prometheus metrics for informers, read from their plain counters at scrape time.

The hot path only bumps ints on `InformerStats`; this collector turns them into metric
families when the registry is scraped, so an event costs no metric-object locking.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from informers.informer import Informer

_LABELS = ["resource", "namespace", "label_selector"]

# (metric name, help, the InformerStats field it reads)
_COUNTERS = [
    ("informer_lists", "Completed LISTs, the first one included.", "lists"),
    ("informer_relists", "Completed LISTs after the first (410 Gone, crashes).", "relists"),
    ("informer_watches", "Watch requests opened.", "watches"),
    ("informer_errors", "Failed requests, watch ERROR events, stalled and short watches.", "errors"),
    ("informer_watchdog_timeouts", "Watches replaced because nothing arrived for too long.", "watchdog_timeouts"),
    ("informer_restarts", "Crashes of the informer task, each followed by a restart.", "restarts"),
]


class InformerCollector(Collector):
    def __init__(self, informers: Callable[[], Iterable[Informer]]) -> None:
        self._informers = informers

    def collect(self) -> Iterator[Metric]:
        informers = list(self._informers())
        events = CounterMetricFamily("informer_events", "Watch events received, by type.", labels=[*_LABELS, "type"])
        counters = [CounterMetricFamily(name, text, labels=_LABELS) for name, text, _ in _COUNTERS]
        synced = GaugeMetricFamily("informer_synced", "1 once the cache is filled and handed to every handler.",
                                   labels=_LABELS)
        objects = GaugeMetricFamily("informer_objects", "Objects in the cache.", labels=_LABELS)
        backlog = GaugeMetricFamily("informer_handler_backlog", "Notifications waiting for handlers.",
                                    labels=_LABELS)
        last_event = GaugeMetricFamily("informer_last_event_timestamp_seconds",
                                       "Wall-clock time of the last watch event, bookmarks included.", labels=_LABELS)
        sync_age = GaugeMetricFamily(
            "informer_last_sync_age_seconds",
            "Seconds since the informer last had proof its cache is current: any watch event (bookmarks included), "
            "a completed list or a watch answered 200 (unless the watch they lead to fails before its first event). "
            "Absent until the first list.", labels=_LABELS)
        now = time.monotonic()
        for informer in informers:
            labels = [str(informer.resource), informer.namespace or "", informer.label_selector or ""]
            stats = informer.stats
            for kind, count in (("ADDED", stats.added), ("MODIFIED", stats.modified), ("DELETED", stats.deleted),
                                ("BOOKMARK", stats.bookmarks)):
                events.add_metric([*labels, kind], count)
            for family, (_, _, field) in zip(counters, _COUNTERS, strict=True):
                family.add_metric(labels, getattr(stats, field))
            synced.add_metric(labels, 1.0 if informer.has_synced else 0.0)
            objects.add_metric(labels, len(informer.store))
            backlog.add_metric(labels, informer.handler_backlog)
            if stats.last_event_time is not None:
                last_event.add_metric(labels, stats.last_event_time)
            age = stats.sync_age(now)
            if age is not None:
                sync_age.add_metric(labels, age)
        yield events
        yield from counters
        yield from (synced, objects, backlog, last_event, sync_age)
