"""Kubernetes Events on GenericJobs: best effort, deduplicated, never blocking a reconcile.

A reconcile hands events over with `record()` (synchronous, after the status write they describe
succeeded); one background task writes them. An identical event (same job, type, reason and
message) within `dedupe_seconds` is dropped, and the queue is bounded, so a conflict storm or a
flapping replica cannot flood the API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import OrderedDict, deque
from datetime import UTC, datetime

import structlog

from .kube import KubeClient

log = structlog.get_logger("controller.events")
COMPONENT = "genericjob-controller"


class EventRecorder:
    def __init__(self, client: KubeClient, *, max_queue: int = 10_000, dedupe_seconds: float = 600.0,
                 host: str = "") -> None:
        self.client = client
        self.max_queue = max_queue
        self.dedupe_seconds = dedupe_seconds
        self.host = host
        self._queue: deque[dict] = deque()
        self._recent: OrderedDict[tuple, float] = OrderedDict()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task | None = None
        self.dropped = 0
        self.sent = 0

    def record(self, job: dict, event_type: str, reason: str, message: str) -> None:
        meta = job["metadata"]
        key = (meta["uid"], event_type, reason, message)
        now = time.monotonic()
        seen = self._recent.get(key)
        if seen is not None and now - seen < self.dedupe_seconds:
            return
        self._recent[key] = now
        self._recent.move_to_end(key)
        while len(self._recent) > self.max_queue:
            self._recent.popitem(last=False)
        if len(self._queue) >= self.max_queue:
            self.dropped += 1
            return
        self._queue.append(self._event(job, event_type, reason, message))
        self._idle.clear()
        self._wake.set()

    def _event(self, job: dict, event_type: str, reason: str, message: str) -> dict:
        meta = job["metadata"]
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": meta["namespace"]},
            "involvedObject": {"apiVersion": job["apiVersion"], "kind": job["kind"], "name": meta["name"],
                               "namespace": meta["namespace"], "uid": meta["uid"],
                               "resourceVersion": meta.get("resourceVersion", "")},
            "type": event_type, "reason": reason, "message": message[:1024],
            "source": {"component": COMPONENT, "host": self.host},
            "reportingComponent": COMPONENT, "reportingInstance": self.host,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self, drain_timeout: float = 2.0) -> None:
        """Send what is queued (within a bound), then stop."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), drain_timeout)
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._task = None

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                event = self._queue.popleft()
                try:
                    await self.client.create_event(event)
                    self.sent += 1
                except Exception as exc:  # best effort: an event is never worth a retry storm
                    self.dropped += 1
                    log.debug("event not sent", reason=event["reason"], error=str(exc))
            self._idle.set()
