"""Run the real kubectl against a LocalCluster, as subprocesses with timeouts."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from localcluster import LocalCluster

# scripts/install_kubectl.py puts it next to the virtualenv's python (CI runs it before pytest).
KUBECTL = Path(sys.executable).parent / "kubectl"
TIMEOUT = 20.0
# A developer's ~/.kube/kuberc could change defaults (aliases, --server-side): keep runs hermetic.
ENV = {**os.environ, "KUBERC": "off"}


def kubectl_binary() -> Path:
    if not KUBECTL.exists():
        pytest.fail(f"kubectl is not installed at {KUBECTL}; run "
                    f"`{sys.executable} scripts/install_kubectl.py --dest {KUBECTL.parent}` first")
    return KUBECTL


@dataclass
class Result:
    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def check(self) -> Result:
        assert self.code == 0, f"kubectl {' '.join(self.args)} exited {self.code}:\n{self.err}{self.out}"
        return self

    def rows(self) -> list[list[str]]:
        """Table output split into cells (columns are separated by two or more spaces)."""
        return [re.split(r"\s{2,}", line.strip()) for line in self.out.splitlines() if line.strip()]

    def table(self) -> dict[str, dict[str, str]]:
        """Table output as {NAME: {COLUMN: cell}}, cut at the header's column starts (kubectl's columns are
        left-aligned), so an empty cell stays in its column."""
        header, *lines = [line for line in self.out.splitlines() if line.strip()]
        columns = list(re.finditer(r"\S+(?: \S+)*", header))  # "NOMINATED NODE" is one column
        starts, names = [m.start() for m in columns], [m.group() for m in columns]
        table = {}
        for line in lines:
            cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
            table[cells[0]] = dict(zip(names, cells, strict=True))
        return table


class Kubectl:
    """kubectl with a kubeconfig for `cluster` and a cache directory of its own.

    kubectl caches discovery and OpenAPI per host:port; a fresh directory per test keeps one
    test's cache (a port reused later, CRDs of another test) from leaking into the next.
    """

    def __init__(self, cluster: LocalCluster | Path, workdir: Path, namespace: str = "default") -> None:
        """For a cluster in this process, or a kubeconfig's path (a cluster served by another process)."""
        self.binary = kubectl_binary()
        self.kubeconfig = cluster if isinstance(cluster, Path) else \
            cluster.write_kubeconfig(workdir / "kubeconfig", namespace=namespace)
        self.cache = workdir / "cache"

    def _argv(self, args: tuple[str, ...]) -> list[str]:
        return [str(self.binary), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache), *args]

    async def run(self, *args: str, stdin: str | None = None, timeout: float = TIMEOUT,
                  env: dict[str, str] | None = None) -> Result:
        """Run to the end; `env` adds variables (KUBE_EDITOR, say) to the hermetic environment."""
        proc = await asyncio.create_subprocess_exec(
            *self._argv(args), stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**ENV, **(env or {})})
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin is not None else None),
                                              timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise AssertionError(f"kubectl {' '.join(args)} did not finish within {timeout}s") from None
        return Result(args, proc.returncode or 0, out.decode(), err.decode())

    async def ok(self, *args: str, stdin: str | None = None) -> Result:
        return (await self.run(*args, stdin=stdin)).check()

    @contextlib.asynccontextmanager
    async def stream(self, *args: str) -> AsyncIterator[Lines]:
        """A long-running kubectl (`get -w`) whose output lines can be awaited; killed on exit."""
        proc = await asyncio.create_subprocess_exec(
            *self._argv(args), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=ENV)
        try:
            yield Lines(proc, args)
        finally:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()


class Lines:
    def __init__(self, proc: asyncio.subprocess.Process, args: tuple[str, ...]) -> None:
        self.proc = proc
        self.args = args
        self.seen: list[str] = []

    async def until(self, pattern: str, timeout: float = TIMEOUT) -> str:
        """The next output line matching the regular expression `pattern`."""
        assert self.proc.stdout is not None
        try:
            async with asyncio.timeout(timeout):
                while True:
                    raw = await self.proc.stdout.readline()
                    if not raw:
                        err = await self.proc.stderr.read() if self.proc.stderr else b""
                        raise AssertionError(f"kubectl {' '.join(self.args)} ended before printing {pattern!r}; "
                                             f"printed {self.seen}; stderr: {err.decode()}")
                    line = raw.decode().rstrip("\n")
                    self.seen.append(line)
                    if re.search(pattern, line):
                        return line
        except TimeoutError:
            raise AssertionError(f"no line matching {pattern!r} from kubectl {' '.join(self.args)} within "
                                 f"{timeout}s; printed {self.seen}") from None
