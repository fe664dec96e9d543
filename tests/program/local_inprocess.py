"""`genericjob-controller local` in the test's own process, for what needs no process of its own to prove its point.

    done = run_in_process(tmp_path, "--apply", str(job))             # to its end: the console script's entry point
    assert done.returncode == 1 and "finished in" in done.stdout

    async with LocalRun(tmp_path, "--logs") as running:              # in the background, in the test's event loop
        await Kubectl(running.kubeconfig, tmp_path).ok("apply", "-f", str(job))
        await running.line(r"finished: job\\s+Succeeded")

The program is the same (its flags parsed by the CLI, its cluster, controller, webhook and pods, its lines on
stdout and its logs on stderr), without a Python start-up and its imports per test. What needs a process stays
one (subprocesses.LocalProcess): a signal from outside, the exit status the shell sees, a terminal or a pipe.

A run has `cwd` as the working directory (where `.cache/` and the pods' working directory are) and `env` added to
the environment (the pods' TMPDIR, PATH) while it runs; both, and the logging configuration it sets, are put back
after. Nothing bounds it but the events it waits for and the test's own timeout (pytest-timeout): the end's waits
for why a replica failed (its pod's last state and its log, 2 s at most for a user) wait up to PATIENT seconds here,
since a test asserts what they bring, and a loaded machine can take longer than 2 s to bring it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import re
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import structlog

from controller.__main__ import main
from controller.cmd import cli
from controller.devtools import local, progress, reasons
from controller.devtools.terminal import Terminal
from controller.runtime import logs
from localcluster.testing import until

from .subprocesses import LINE_TIMEOUT, READY_TIMEOUT, LocalLines


@dataclass
class Done:
    """A run to its end, as subprocess.run's CompletedProcess says it."""

    returncode: int
    stdout: str
    stderr: str


class Output(io.StringIO):
    """What the program prints, as it comes; `on_write` is told of every write."""

    def __init__(self) -> None:
        super().__init__()
        self.on_write: Callable[[], None] | None = None

    def write(self, text: str) -> int:
        written = super().write(text)
        if self.on_write is not None:
            self.on_write()
        return written

    @property
    def lines(self) -> list[str]:
        return self.getvalue().splitlines()


PATIENT = 30.0  # seconds the end of a run waits for failed replicas' reasons and logs (a user's run: 2 s)


@contextlib.contextmanager
def as_a_process(cwd: Path, env: dict[str, str] | None = None) -> Iterator[None]:
    """The working directory and environment of the run, and the logging configuration it sets, put back after;
    meanwhile the end's waits for failure reasons are PATIENT."""
    waits = progress.REASON_WAIT, reasons.LOG_TIMEOUT
    progress.REASON_WAIT = reasons.LOG_TIMEOUT = PATIENT
    old_cwd = os.getcwd()
    old_env = {name: os.environ.get(name) for name in env or {}}
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logger.level for name, logger in logging.root.manager.loggerDict.items()
              if isinstance(logger, logging.Logger)}
    structlog_config = structlog.get_config()
    tempfile.gettempdir()  # the process's, read (and kept by tempfile) before a TMPDIR meant for the pods is set
    os.chdir(cwd)
    os.environ.update(env or {})
    try:
        yield
    finally:
        progress.REASON_WAIT, reasons.LOG_TIMEOUT = waits
        os.chdir(old_cwd)
        for name, value in old_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        structlog.configure(**structlog_config)
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, logger in logging.root.manager.loggerDict.items():
            if isinstance(logger, logging.Logger):
                logger.setLevel(levels.get(name, logging.NOTSET))


def run_in_process(cwd: Path, *flags: str, env: dict[str, str] | None = None, stdout: Output | None = None) -> Done:
    """`genericjob-controller local FLAGS...` to its end: the console script's entry point (controller.__main__.main,
    its own asyncio.run), its exit code (a usage error's SystemExit too), stdout (into `stdout` if given, for a
    test that watches it as it comes) and stderr."""
    out, err = stdout or Output(), io.StringIO()
    with as_a_process(cwd, env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["local", *flags])
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return Done(code, out.getvalue(), err.getvalue())


def printed(out: Output, *patterns: str) -> bool:
    """Whether the output has a line matching each of the regular expressions."""
    text = out.getvalue()
    return all(re.search(pattern, text, re.MULTILINE) for pattern in patterns)


def hold_deadline_until(monkeypatch: pytest.MonkeyPatch, condition: Callable[[], bool],
                        timeout: float = LINE_TIMEOUT) -> None:
    """For the rest of the test, `--timeout`'s deadline held until `condition()` holds (then its own time, counted
    from the apply as always, runs out as it would; at once if it has already passed): a test of what a timeout does
    to jobs in a given state gets them in that state whatever the machine's load, rather than racing them against
    the clock."""
    real = local._deadline

    async def deadline(seconds: float | None, started: float) -> None:
        # Never reached: the deadline falls all the same, and the test's assertions say what the jobs were doing.
        with contextlib.suppress(pytest.fail.Exception):
            await until(condition, timeout, "the state the deadline waits for")
        await real(seconds, started)

    monkeypatch.setattr(local, "_deadline", deadline)


class LocalRun(LocalLines):
    """`genericjob-controller local FLAGS...` in the background, in the test's event loop: local.run as main() runs
    it (the CLI's parsing and checks, its logging, a Terminal as stdout), its output lines collected as they come.
    Stopped by a signal it handles (SIGINT or SIGTERM: `stop`), else cancelled as the test ends."""

    def __init__(self, cwd: Path, *flags: str, env: dict[str, str] | None = None, ready: str = r"^ready: ") -> None:
        self.cwd = cwd
        self.flags = flags
        self.env = env
        self.ready = ready
        self.out = Output()
        self.err = io.StringIO()
        self.task: asyncio.Task[int] | None = None
        self._stack = contextlib.ExitStack()
        self._new_line = asyncio.Event()

    async def __aenter__(self) -> LocalRun:
        self._stack.enter_context(as_a_process(self.cwd, self.env))
        try:
            args = cli.parse_args(["local", *self.flags])
            logs.configure(args.log_level, "console", stream=self.err, deps_level=args.log_level_deps)
            terminal = Terminal(self.out)
            self._stack.enter_context(contextlib.redirect_stdout(terminal))
            self.out.on_write = self._new_line.set
            self.task = asyncio.get_running_loop().create_task(local.run(args, terminal))
            self.task.add_done_callback(lambda _: self._new_line.set())
            await self.line(self.ready, timeout=READY_TIMEOUT)
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            if self.task is not None and not self.task.done():
                self.task.cancel()
            if self.task is not None:
                await asyncio.gather(self.task, return_exceptions=True)
        finally:
            self._stack.close()

    @property
    def lines(self) -> list[str]:
        return self.out.lines

    async def line(self, pattern: str, timeout: float = LINE_TIMEOUT) -> re.Match:
        """The first output line (from the start) matching the regular expression."""
        search = re.compile(pattern).search
        try:
            async with asyncio.timeout(timeout):
                while True:
                    self._new_line.clear()
                    found = next((m for m in map(search, self.lines) if m), None)
                    if found:
                        return found
                    if self.task is not None and self.task.done():
                        outcome = self.task.exception() if not self.task.cancelled() else "cancelled"
                        pytest.fail(f"local ended ({outcome or self.task.result()}) before printing {pattern!r}:\n"
                                    + "\n".join(self.lines) + "\n" + self.err.getvalue())
                    await self._new_line.wait()
        except TimeoutError:
            pytest.fail(f"local printed no line matching {pattern!r} in {timeout}s:\n" + "\n".join(self.lines))

    async def stop(self, signum: int = signal.SIGINT, timeout: float = 60.0) -> int:
        """Send this process the signal (Ctrl-C by default), which the run handles (its loop's handler, as under
        main()), and wait for its exit code."""
        assert self.task is not None
        if not self.task.done():
            handler = signal.getsignal(signum)
            # Never a signal to the test's process that nothing of the run's would catch.
            assert getattr(handler, "__name__", "") == "_sighandler_noop", f"no asyncio handler for {signum}: {handler}"
            signal.raise_signal(signum)
        async with asyncio.timeout(timeout):
            return await self.task
