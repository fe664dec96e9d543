"""Kubernetes Events on the objects a controller reconciles: best effort, aggregated, never blocking a
reconcile.

A reconcile hands events over with `record()` (synchronous, after the status write they describe
succeeded); a few background senders write them, through a client with its own rate limit (as
controller-runtime's recorder builds its own client from the same config), so a backlog of Events
never delays a pod create and a pod create never delays an Event. An event identical to one sent for the same job
within `dedupe_seconds` (same type, reason and message) is not a new Event object: the existing one
gets its `count` and `lastTimestamp` bumped, as client-go's correlator does, so `kubectl describe`
shows "x2" for a pod created twice instead of losing the second. Repeats that arrive before their
PATCH is sent share it, and the queue is bounded, so a conflict storm or a flapping replica cannot
flood the API server.

A message is cut to MESSAGE_LIMIT bytes of UTF-8, the API server's limit on an Event's note (Go's
len(), so bytes, though its error says "characters"), at a character boundary: 1,000 Chinese
characters keep 341 of them, not a split one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

import structlog

from controller.runtime.client import KubeClient
from controller.runtime.metrics import EventMetrics
from controller.runtime.timestamps import utc_stamp

log = structlog.get_logger("controller.runtime.events")
COMPONENT = "genericjob-controller"  # the program's name (its Deployment's), not a kind's: `kubectl describe` shows it
MESSAGE_LIMIT = 1024  # bytes: NoteLengthLimit of k8s.io/kubernetes pkg/apis/core/validation/events.go


def truncate_utf8(text: str, limit: int) -> str:
    """`text` cut to at most `limit` bytes of UTF-8, never inside a character (a lone surrogate, which no
    JSON encoder would send, becomes "?")."""
    if len(text) <= limit and text.isascii():  # ASCII: a byte a character, and no surrogate to replace
        return text
    raw = text.encode("utf-8", "replace")
    return raw[:limit].decode("utf-8", "ignore")  # "ignore" drops only the leading bytes of a character cut


@dataclass
class _Sent:
    """An Event object already asked for, and its repeats since."""

    namespace: str
    name: str
    first_seen: float  # monotonic
    count: int = 1
    last_timestamp: str = ""
    patch_queued: bool = False
    created: bool = False  # False until the create succeeded: nothing to patch before
    settled: asyncio.Event = field(default_factory=asyncio.Event)  # set once the create was answered or failed


class EventRecorder:
    def __init__(self, client: KubeClient, *, max_queue: int = 10_000, dedupe_seconds: float = 600.0,
                 host: str = "", senders: int = 4, metrics: EventMetrics | None = None) -> None:
        self.client = client
        self.max_queue = max_queue
        self.dedupe_seconds = dedupe_seconds
        self.host = host
        self.senders = max(1, senders)
        self.metrics = metrics or EventMetrics(None, "")
        # ("create", event, sent) or ("patch", None, sent), in the order recorded.
        self._queue: deque[tuple[str, dict | None, _Sent]] = deque()
        self._recent: OrderedDict[tuple, _Sent] = OrderedDict()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._in_flight = 0
        self._tasks: list[asyncio.Task] = []
        self.dropped = 0
        self.sent = 0
        self._last_ns = 0  # the time in the last Event name made, so no two names are the same

    @property
    def pending(self) -> int:
        """Events queued or being sent."""
        return len(self._queue) + self._in_flight

    def record(self, job: dict, event_type: str, reason: str, message: str) -> None:
        meta = job["metadata"]
        message = truncate_utf8(message, MESSAGE_LIMIT)
        key = (meta["uid"], event_type, reason, message)
        now = time.monotonic()
        sent = self._recent.get(key)
        if sent is not None and now - sent.first_seen < self.dedupe_seconds:
            sent.count += 1
            sent.last_timestamp = utc_stamp()
            if not sent.patch_queued:
                sent.patch_queued = self._enqueue(("patch", None, sent))
            return
        event = self._event(job, event_type, reason, message)
        sent = _Sent(meta["namespace"], event["metadata"]["name"], now, last_timestamp=event["lastTimestamp"])
        if not self._enqueue(("create", event, sent)):
            return
        self._recent[key] = sent
        self._recent.move_to_end(key)
        while len(self._recent) > self.max_queue:
            self._recent.popitem(last=False)

    def _enqueue(self, item: tuple[str, dict | None, _Sent]) -> bool:
        if len(self._queue) >= self.max_queue:
            self._drop()
            return False
        self._queue.append(item)
        self.metrics.pending(self.pending)
        self._idle.clear()
        self._wake.set()
        return True

    def _drop(self) -> None:
        self.dropped += 1
        self.metrics.dropped()

    def _event(self, job: dict, event_type: str, reason: str, message: str) -> dict:
        meta = job["metadata"]
        # Named as client-go's recorder names Events, `<object>.<hex of the time in ns>`
        # (fmt.Sprintf("%v.%x", ref.Name, t.UnixNano())), so `kubectl get events` lists them in order.
        # Two Events in the same nanosecond (a coarse clock) get the next one: names stay unique.
        self._last_ns = ns = max(time.time_ns(), self._last_ns + 1)
        stamp = utc_stamp(ns)
        return {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{ns:x}", "namespace": meta["namespace"]},
            "involvedObject": {"apiVersion": job["apiVersion"], "kind": job["kind"], "name": meta["name"],
                               "namespace": meta["namespace"], "uid": meta["uid"],
                               "resourceVersion": meta.get("resourceVersion", "")},
            "type": event_type, "reason": reason, "message": message,
            "source": {"component": COMPONENT, "host": self.host},
            "reportingComponent": COMPONENT, "reportingInstance": self.host,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run()) for _ in range(self.senders)]

    async def stop(self, drain_timeout: float = 2.0) -> None:
        """Send what is queued (within a bound), then stop."""
        if not self._tasks:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), drain_timeout)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            while self._queue:
                item = self._queue.popleft()
                self._in_flight += 1
                try:
                    await self._send(*item)
                finally:
                    self._in_flight -= 1
                    self.metrics.pending(self.pending)
            self._wake.clear()
            if self._in_flight == 0:
                self._idle.set()

    async def _send(self, action: str, event: dict | None, sent: _Sent) -> None:
        try:
            if action == "create":
                assert event is not None  # a create carries its Event (a patch, None: it sends only counts)
                try:
                    await self.client.create_event(event)
                    sent.created = True
                finally:
                    sent.settled.set()
            else:
                # Another sender may still be creating the Event this patch counts on.
                await sent.settled.wait()
                sent.patch_queued = False
                if not sent.created:
                    return  # its create failed: the repeat goes the same way
                await self.client.patch_event(sent.namespace, sent.name,
                                              {"count": sent.count, "lastTimestamp": sent.last_timestamp})
            self.sent += 1
            self.metrics.sent()
        except Exception as exc:  # best effort: an event is never worth a retry storm
            self._drop()
            log.debug("event not sent", action=action, name=sent.name, error=str(exc))
