"""The audit log: writes to pods, Services and custom objects, for checkers in other processes.

`GET /_localcluster/audit?since=N` answers the records from position N on, in resourceVersion
order. Unlike a watch, it is neither dropped nor compacted when the cluster drops watches or
expires its history; but it keeps only the last `size` records (a ring), so that a long-running
server's memory stays bounded. Positions are absolute (the first record ever written is 0), so a
reader keeps its place as old records go: the answer's `next` is where to ask from next time, and
its `first` is the position of the oldest record kept. A reader whose `since` is below `first`
has missed `first - since` records and must say so rather than carry on as if it had seen them.
"""

from __future__ import annotations

import itertools
import time
from collections import deque

from ..errors import ApiError

DEFAULT_SIZE = 10_000  # records kept (about 1 KB each in memory), as many as the watch history's events


class AuditLog:
    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.records: deque[dict] = deque(maxlen=max(size, 1))
        self.next = 0  # the position the next record will take

    @property
    def first(self) -> int:
        """The position of the oldest record kept (== next when none is)."""
        return self.next - len(self.records)

    def resize(self, size: int) -> None:
        """Keep at most `size` records from now on (the newest, if there are more already)."""
        self.records = deque(self.records, maxlen=max(size, 1))

    def on_event(self, ev) -> None:
        """A store listener: record a write to a pod, a Service or a custom object."""
        group, plural = ev.key
        custom = "." in group and not group.endswith("k8s.io")
        if plural not in ("pods", "services") and not custom:
            return
        meta = ev.obj["metadata"]
        self.records.append({
            "rv": ev.rv, "type": ev.type, "resource": plural, "namespace": meta.get("namespace") or "",
            "name": meta["name"], "uid": meta.get("uid", ""), "labels": meta.get("labels") or {},
            "phase": (ev.obj.get("status") or {}).get("phase"), "deleting": bool(meta.get("deletionTimestamp")),
            "time": time.time()})
        self.next += 1

    def since(self, position: str | int) -> dict:
        """The answer to `GET audit?since=position`: `first`, `next` and the records kept from `position` on."""
        try:
            start = int(position)
        except ValueError:
            message = f"since must be a record position (an integer), not {position!r}"
            raise ApiError(400, "BadRequest", message) from None
        skip = max(start - self.first, 0)
        return {"first": self.first, "next": self.next, "records": list(itertools.islice(self.records, skip, None))}
