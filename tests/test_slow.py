"""tests/slow.py: which tests are slow, and the guard on the others' processes."""

from __future__ import annotations

import asyncio
import subprocess
from types import SimpleNamespace

import pytest

from tests import slow


class Item:
    """What slow.py reads of a pytest item: its path, its markers, its fixtures' definitions."""

    def __init__(self, path: str, marked: bool = False, fixtures: tuple = ()) -> None:
        self.path = slow.TESTS / path
        self.nodeid = f"tests/{path}::test"
        self.marked = marked
        self._fixtureinfo = SimpleNamespace(name2fixturedefs={f.__name__: [SimpleNamespace(func=f)] for f in fixtures})
        self.stash = pytest.Stash()

    def get_closest_marker(self, name: str):
        return SimpleNamespace(args=("process",)) if name == "runner" or (name == "slow" and self.marked) else None

    def __repr__(self) -> str:
        return self.nodeid


def plain_fixture():
    pass


@slow.starts_processes
def kubectl_fixture():
    pass


@slow.starts_processes(when=lambda item: item.get_closest_marker("runner").args[0] == "process")
def cluster_fixture():
    pass


def test_a_test_is_slow_by_its_mark_its_fixtures_or_its_folder():
    assert not slow.is_slow(Item("localcluster/test_x.py", fixtures=(plain_fixture,)))
    assert slow.is_slow(Item("localcluster/test_x.py", marked=True))
    assert slow.is_slow(Item("localcluster/test_x.py", fixtures=(plain_fixture, kubectl_fixture)))
    assert slow.is_slow(Item("localcluster/test_x.py", fixtures=(cluster_fixture,)))  # under runner("process")
    assert slow.is_slow(Item("e2e/test_x.py"))
    assert not slow.is_slow(Item("program/test_kubectl_x.py"))  # a name says nothing


def test_a_process_started_by_a_test_not_marked_slow_fails_it_saying_what_to_do():
    item = Item("localcluster/test_x.py")
    with slow.ProcessGuard(item).watching(), pytest.raises(pytest.fail.Exception) as failed:
        subprocess.run(["true"], check=True)
    assert "tests/localcluster/test_x.py::test started `true`" in str(failed.value)
    assert "Mark it `@pytest.mark.slow`" in str(failed.value) and "starts_processes" in str(failed.value)
    report = SimpleNamespace(passed=True, outcome="passed", longrepr=None)
    slow.fail_refused(item, report)  # failed even if the code under test swallowed the exception
    assert report.outcome == "failed" and "started `true`" in report.longrepr


async def test_asyncios_subprocesses_are_watched_too_and_the_allowed_ones_run():
    item = Item("localcluster/test_x.py")
    before = subprocess.Popen._execute_child  # type: ignore[attr-defined]
    with slow.ProcessGuard(item).watching():
        with pytest.raises(pytest.fail.Exception, match="started `kubectl`"):
            await asyncio.create_subprocess_exec("/nowhere/kubectl", "version")
        allowed = await asyncio.create_subprocess_exec("openssl", "version", stdout=asyncio.subprocess.DEVNULL)
        assert await allowed.wait() == 0
    assert subprocess.Popen._execute_child is before  # type: ignore[attr-defined]  # put back
