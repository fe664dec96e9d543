"""Which tests are slow (the `slow` marker, pyproject.toml: `make test-fast` leaves them out), the guard that keeps
the others from starting processes, and the order the suite runs in.

A test is slow (`is_slow`) when it

- uses a fixture that starts processes (kubectl, helm, the project's programs, pods' processes): a fixture
  decorated with `starts_processes` (localcluster.testing's), such as localcluster_tests/conftest.py's `kubectl`,
  or the `cluster` fixture (localcluster's plugin) under the `runner("process")` marker;
- is marked `slow` itself (a test, a class or a module's `pytestmark`): one that starts processes in its own body,
  or runs long without starting any (a real framework, every CEL rule of the CRDs compiled, a long exploration);
- or lives in a folder slow as a whole (`SLOW_FOLDERS`).

A test that is not slow and starts a process other than the `ALLOWED` ones fails, saying so (`ProcessGuard`): what
makes a test slow is what it uses, and the guard keeps that true as tests change.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from localcluster.testing import started_by_fixtures, starts_processes

__all__ = ["starts_processes"]  # localcluster.testing's, for the tests here

TESTS = Path(__file__).parent

# Slow as a whole: e2e, whose 282 tests each run whole controllers in-process against a cluster and wait on them
# (a median of 1.4 s a test with `-n 4` on the loaded 2-core machine, 591 s in all: more than the rest of the fast
# tests together). The other folders follow what their tests use, measured the same way: tests/program, tests/chaos,
# tests/bench and tests/controller/model mix tests that start processes or run minutes (marked, or slow by their
# fixtures) with unit tests of milliseconds; tests/mutation's tests take 0.1 s in all.
SLOW_FOLDERS = ("e2e",)

# The processes a fast test may start, by the name of the program: what the code under test starts as it always
# does, in a few milliseconds.
ALLOWED = {
    "openssl": "LocalCluster's certificates and keys (localcluster/auth/host_commands.py)",
    "ldconfig": "ctypes.util.find_library('c'), once a process, as a LocalCluster starts (process_guard.py)",
    "plugin.py": "tests/kubeclient's exec credential plugin, which kubeclient/exec_plugin.py runs",
}

# Known long poles, by module, the longest first as far as measured (on the quiet machine, with `-n 4`: the chaos run
# 40 s, a bench scenario up to 23 s, a part of the documentation's commands 10 s, a shard of the engine's model 8 s;
# the real frameworks' runs, minutes when installed). Modules, not test ids: those change as tests are split or
# renamed. Their slow tests run first, one per worker, so that no long test starts last with the others idle.
LONG = ("e2e/test_real_torch.py", "e2e/test_real_tensorflow.py", "chaos/test_chaos.py", "bench/test_bench_smoke.py",
        "program/test_readme.py", "controller/model/test_engine_model*.py")


def relative(item: pytest.Item) -> str:
    """The test's file under tests/ (localcluster's own tests: from the repository's root)."""
    return (item.path.relative_to(TESTS) if item.path.is_relative_to(TESTS) else
            item.path.relative_to(TESTS.parent)).as_posix()


def is_slow(item: pytest.Item) -> bool:
    """Whether `make test-fast` leaves `item` out: it is marked slow, uses a fixture that starts processes (the
    fixtures it asks for and those they ask for), or lives in a slow folder."""
    if item.get_closest_marker("slow") or relative(item).startswith(tuple(f"{f}/" for f in SLOW_FOLDERS)):
        return True
    return started_by_fixtures(item)


def rank(item: pytest.Item) -> int:
    """0, 1, ... for a slow test of LONG's modules, in LONG's order; then the other slow tests; the fast ones last."""
    slow = item.get_closest_marker("slow") is not None
    long = [index for index, pattern in enumerate(LONG) if fnmatch.fnmatch(relative(item), pattern)]
    return long[0] if slow and long else len(LONG) if slow else len(LONG) + 1


def run_order(items: list[pytest.Item], workers: int = 0, dist: str = "no", maxschedchunk: int | None = None
              ) -> list[pytest.Item]:
    """The known long tests first, the other slow ones next, the fast ones last, each in collection order; with
    xdist, the long ones dealt so that each worker's first batch starts with its share of them. xdist hands each
    worker a contiguous run of the collection (worksteal: a 1/n of it; load: chunks of a quarter of that, then more
    as they finish), and a worker runs its run in order, lending its tail to idle workers: in plain order every long
    test would go to the first worker, one after the other. The rest stays in order, a module's tests together (its
    module-scoped fixtures set up once a worker)."""
    ranked = sorted(items, key=rank)  # stable
    sizes = first_batches(len(ranked), workers, dist, maxschedchunk)
    if not sizes:
        return ranked
    hands: list[list[pytest.Item]] = [[] for _ in sizes]
    long = [item for item in ranked if rank(item) < len(LONG)]
    dealt = 0
    for item in long:  # in turn, the longest first
        open_hands = [hand for hand, size in zip(hands, sizes, strict=True) if len(hand) < size]
        if not open_hands:
            break
        min(open_hands, key=len).append(item)
        dealt += 1
    rest = ranked[dealt:]
    for hand, size in zip(hands, sizes, strict=True):
        take = size - len(hand)
        hand.extend(rest[:take])
        rest = rest[take:]
    return [item for hand in hands for item in hand] + rest


def first_batches(count: int, workers: int, dist: str, maxschedchunk: int | None) -> list[int]:
    """How many tests of the collection's head each worker gets first, in order (xdist 3.8's schedulers)."""
    if workers < 2 or count < 2 * workers:
        return []
    if dist == "worksteal":  # WorkStealingScheduling.check_schedule: the whole collection, evenly
        sizes = []
        for index in range(workers):
            sizes.append((count - sum(sizes)) // (workers - index))
        return sizes
    if dist == "load":  # LoadScheduling.schedule
        return [max(min(count // workers // 4, maxschedchunk or count), 2)] * workers
    return []


def _program(args, executable=None) -> str:
    """The name of the program a Popen, os.system or os.posix_spawn call runs."""
    if executable is None:
        if isinstance(args, (str, bytes)):  # a command line (a shell's, os.system's) or a lone program
            executable = (os.fsdecode(args).split() or ["sh"])[0]
        else:
            executable = args if isinstance(args, os.PathLike) else args[0]
    return Path(os.fsdecode(executable)).name


REFUSED = pytest.StashKey[list[str]]()


class ProcessGuard:
    """While a test that is not slow runs (its set-up, call and tear-down), a process it starts other than the
    ALLOWED ones fails it, with a message saying to mark it slow. It watches subprocess.Popen (which asyncio's
    subprocesses use too), os.system, os.posix_spawn and os.fork."""

    def __init__(self, item: pytest.Item) -> None:
        self.item = item

    def refuse(self, program: str) -> None:
        frames = [f"{Path(frame.filename).relative_to(TESTS.parent)}:{frame.lineno} ({frame.name})"
                  for frame in traceback.extract_stack() if Path(frame.filename).is_relative_to(TESTS)
                  and frame.filename != __file__]
        message = (f"{self.item.nodeid} started `{program}` (from {', '.join(frames[-3:]) or 'outside tests/'}) "
                   f"but is not marked slow: a test that starts processes "
                   f"(kubectl, helm, the project's programs, pods') is slow. Mark it `@pytest.mark.slow`, or give it "
                   f"the process through a fixture decorated with `starts_processes` (tests/slow.py). Tests not "
                   f"marked slow may start only {', '.join(ALLOWED)}.")
        self.item.stash.setdefault(REFUSED, []).append(message)
        pytest.fail(message, pytrace=False)

    @contextmanager
    def watching(self) -> Iterator[None]:
        guard = self
        execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]  # Popen's one way to start
        originals = {name: getattr(os, name) for name in ("system", "posix_spawn", "posix_spawnp", "fork")
                     if hasattr(os, name)}

        def checked_execute_child(popen, args, executable, *rest, **kwargs):
            program = _program(args, executable)
            if program not in ALLOWED:
                guard.refuse(program)
            return execute_child(popen, args, executable, *rest, **kwargs)

        def checked(name: str) -> Callable:
            original = originals[name]

            def call(*args, **kwargs):
                program = "fork" if name == "fork" else _program(args[0])
                if program not in ALLOWED:
                    guard.refuse(program)
                return original(*args, **kwargs)

            return call

        subprocess.Popen._execute_child = checked_execute_child  # type: ignore[attr-defined]
        for name in originals:
            setattr(os, name, checked(name))
        try:
            yield
        finally:
            subprocess.Popen._execute_child = execute_child  # type: ignore[attr-defined]
            for name, original in originals.items():
                setattr(os, name, original)


def fail_refused(item: pytest.Item, report: pytest.TestReport) -> None:
    """A refused process fails the phase that started it even if the code under test caught the failure; a phase
    that failed otherwise (a wait that timed out for the process that never ran) says it too."""
    refused = item.stash.get(REFUSED, [])
    if refused and report.passed:
        report.outcome = "failed"
        report.longrepr = "\n".join(refused)
    elif refused:
        report.sections.append(("processes refused", "\n".join(refused)))
    refused.clear()
