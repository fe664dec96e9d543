"""Standard output for a command whose reader may leave early: `local --apply jobs.yaml | head -5`.

Once the pipe is closed a write raises BrokenPipeError. The Terminal catches it, drops every later
line, tells its owner (`on_closed`, so the command can stop as on Ctrl-C) and points the descriptor
at /dev/null, so that the interpreter's own last flush at exit does not fail again with a traceback.
A program learns of a closed pipe only when it writes, and a job may print nothing for minutes:
`watch` also has the event loop tell it as soon as the reader goes (the kernel reports an error
on a pipe's write end that has no reader left).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import stat
from collections.abc import Callable
from typing import TextIO


class Terminal:
    """A text stream for `print`: writes to `stream` until its reader has gone, then to nowhere."""

    def __init__(self, stream: TextIO, on_closed: Callable[[], None] | None = None) -> None:
        self.stream = stream
        self.on_closed = on_closed
        self.closed = False

    def write(self, text: str) -> int:
        if not self.closed:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._lost()
        return len(text)

    def flush(self) -> None:
        if not self.closed:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._lost()

    def isatty(self) -> bool:
        return not self.closed and self.stream.isatty()

    def watch(self, loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
        """Notice the reader's going without writing (stdout a pipe only); returns the call that stops watching."""
        try:
            fd = self.stream.fileno()
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                return lambda: None
        except (OSError, ValueError):
            return lambda: None

        def check() -> None:  # called when the descriptor reports an event: on a write end, an error or hang-up
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            if any(events & select.POLLERR for _, events in poller.poll(0)):
                loop.remove_reader(fd)
                if not self.closed:
                    self._lost()

        def stop() -> None:
            with contextlib.suppress(ValueError, OSError):  # the loop closed already
                loop.remove_reader(fd)

        loop.add_reader(fd, check)
        return stop

    def _lost(self) -> None:
        self.closed = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # not a real descriptor (a test's StringIO): nothing to flush at exit
            pass
        if self.on_closed is not None:
            self.on_closed()


__all__ = ["Terminal"]
