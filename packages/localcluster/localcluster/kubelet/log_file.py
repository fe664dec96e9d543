"""A container instance's output as the process runner keeps it: a file appended as the output arrives,
trimmed to about its last bytes, read from absolute positions (so `kubectl logs -f` keeps its place)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import BinaryIO


class LogFile:
    """One container instance's output: appended as it arrives, trimmed to about the last `limit` bytes.

    Positions are absolute (bytes written since the instance started), so a follower keeps its
    place when the front of the file is trimmed away.
    """

    def __init__(self, path: Path, limit: int) -> None:
        self.path = path
        self.limit = max(limit, 1)
        self.size = 0  # bytes in the file
        self.dropped = 0  # bytes trimmed from its front
        self.closed = False
        self._file: BinaryIO | None = open(path, "wb")  # kept open while the instance runs
        self._changed = asyncio.Event()

    @property
    def end(self) -> int:
        return self.dropped + self.size

    def write(self, data: bytes) -> None:
        if self._file is None:
            return
        self._file.write(data)
        self._file.flush()
        self.size += len(data)
        if self.size > self.limit + self.limit // 4:
            self._trim()
        self._wake()

    def _trim(self) -> None:
        assert self._file is not None
        self._file.close()
        with open(self.path, "rb") as f:
            f.seek(self.size - self.limit)
            keep = f.read()
        cut = keep.find(b"\n")
        if 0 <= cut < len(keep) - 1:
            keep = keep[cut + 1:]  # start at a line
        with open(self.path, "wb") as f:
            f.write(keep)
        self.dropped += self.size - len(keep)
        self.size = len(keep)
        self._file = open(self.path, "ab")

    def read(self, since: int = 0) -> tuple[bytes, int]:
        """What is kept from absolute position `since` on, and the position after it."""
        start = min(max(since - self.dropped, 0), self.size)
        with open(self.path, "rb") as f:
            f.seek(start)
            data = f.read(self.size - start)
        return data, self.dropped + start + len(data)

    def waiter(self) -> asyncio.Event:
        """An event set at the next write or at close (take it before reading, so no write is missed)."""
        return self._changed

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

