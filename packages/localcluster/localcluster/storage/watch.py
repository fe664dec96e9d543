"""Watchers: the per-request view of the event stream, with the cacher's filtering rules.

A watcher is fed synchronously by the store listener, so no event can slip between the
history replay and the live stream. A watcher whose client falls behind is closed, as the
apiserver's cacher closes it; the client re-watches from its last version. The cacher gives each
watcher a channel of `channel_size` events (its suggestedWatchChannelSize: the window's capacity
over 75 s, at least 10 and at most 100, or for a resource with an indexed trigger 1000, and 10 for a watch
that selects one value of the trigger's field); when an event finds it full, the dispatcher waits for room at most its
time budget (100 ms at most, 50 ms more each second) and then closes the watcher
("Forcing watcher close due to unresponsiveness"). Here the channel is the events queued while
the stream's writer is blocked on a client that does not read (its socket full): past
`channel_size` of them for BUDGET seconds, the watcher is closed. Events queued while the writer
is merely not scheduled yet (one request writing many objects at once: a garbage-collected
cascade) are no backlog: a Go server's writers run beside its dispatcher.
"""

from __future__ import annotations

import asyncio
import math
from collections import defaultdict, deque

from apimachinery.selectors import LabelSelector

from ..validation import FieldSelector
from .store import ADDED, DELETED, MODIFIED, Event, StorageKey
from .watch_cache import FRESH

BUDGET = 0.1  # the cacher's dispatch time budget at its fullest (time_budget.go maxBudget)
CHANNEL_MIN, CHANNEL_MAX = 10, 100  # minWatchChanSize, maxWatchChanSizeWithoutIndex
CHANNEL_MAX_INDEXED, CHANNEL_MAX_TRIGGERED = 1000, 10  # ...WithIndexWithoutTrigger, ...WithIndexAndTrigger
# The resources whose registry gives the cacher an indexed trigger (their StoreOptions' TriggerFunc): the kubelet
# watches its node's pods and each Secret and ConfigMap its pods mount by that field.
TRIGGERS: dict[StorageKey, str] = {("", "pods"): "spec.nodeName", ("", "secrets"): "metadata.name",
                                   ("", "configmaps"): "metadata.name"}


def channel_size(capacity: int, key: StorageKey, fields: FieldSelector | None) -> int:
    """The cacher's channel for a new watcher: about a second of its window's events (capacity / 75 s), bounded
    by the resource's index and whether the watch selects one value of its trigger's field."""
    trigger = TRIGGERS.get(key)
    if trigger is None:
        bound = CHANNEL_MAX
    elif fields is not None and fields.exact_value(trigger) is not None:
        bound = CHANNEL_MAX_TRIGGERED
    else:
        bound = CHANNEL_MAX_INDEXED
    return min(max(math.ceil(capacity / FRESH), CHANNEL_MIN), bound)


class Watcher:
    def __init__(self, key: StorageKey, namespace: str | None, labels: LabelSelector | None,
                 fields: FieldSelector | None, start_rv: int, max_buffer: int,
                 channel: int | None = CHANNEL_MAX) -> None:
        self.key = key
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.start_rv = start_rv
        self.max_buffer = max_buffer
        self.buffer: deque[tuple[str, dict]] = deque()
        self.wake = asyncio.Event()
        self.closed = False
        self.channel = channel  # None: never closed for a full channel (a benchmark's throughput)
        self.writing = False  # the stream's writer is in a write: the client has not taken the last yet
        self._overflow: asyncio.TimerHandle | None = None  # the budget's timer, once the channel overflowed

    def matches(self, obj: dict) -> bool:
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        if self.labels is not None and not self.labels.matches(meta.get("labels")):
            return False
        return self.fields is None or self.fields.matches(obj)

    def offer(self, ev: Event) -> None:
        if self.closed or ev.rv <= self.start_rv:
            return
        item = self.translate(ev)
        if item is None:
            return
        self.buffer.append(item)
        if len(self.buffer) > self.max_buffer:
            self.close()
        elif self._overflowing() and self._overflow is None:
            self._overflow = asyncio.get_running_loop().call_later(BUDGET, self._unresponsive)
        self.wake.set()

    def _overflowing(self) -> bool:
        """The writer waits on the client and more events than the channel holds queue behind it."""
        return self.writing and self.channel is not None and len(self.buffer) > self.channel

    def _unresponsive(self) -> None:
        self._overflow = None
        if self._overflowing():
            self.close()

    def write_started(self) -> None:
        self.writing = True

    def write_done(self) -> None:
        """The client took what was written: the backlog is the writer's next write, no more a full channel."""
        self.writing = False
        if self._overflow is not None:
            self._overflow.cancel()
            self._overflow = None

    def translate(self, ev: Event) -> tuple[str, dict] | None:
        """An object that starts or stops matching the selectors is seen as added or deleted."""
        now = ev.type != DELETED and self.matches(ev.obj)
        old = ev.old
        before = old is not None and self.matches(old)
        if ev.type == DELETED:
            return (DELETED, ev.obj) if before else None
        if now:
            return (MODIFIED if before else ADDED, ev.obj)
        if old is not None and before:  # stopped matching: the previous state, at this event's version
            return (DELETED, {**old, "metadata": {**old["metadata"], "resourceVersion": str(ev.rv)}})
        return None

    def close(self) -> None:
        self.closed = True
        if self._overflow is not None:
            self._overflow.cancel()
            self._overflow = None
        self.wake.set()


class WatchHub:
    """Routes store events to the watchers of their resource."""

    def __init__(self) -> None:
        self.watchers: dict[StorageKey, set[Watcher]] = defaultdict(set)

    def on_event(self, ev: Event) -> None:
        watchers = self.watchers.get(ev.key)
        if watchers:
            for watcher in tuple(watchers):
                watcher.offer(ev)

    def add(self, watcher: Watcher) -> None:
        self.watchers[watcher.key].add(watcher)

    def discard(self, watcher: Watcher) -> None:
        self.watchers[watcher.key].discard(watcher)

    def close_all(self) -> int:
        count = 0
        for watchers in self.watchers.values():
            for watcher in tuple(watchers):
                watcher.close()
                count += 1
        return count

    def count(self) -> int:
        return sum(len(w) for w in self.watchers.values())
