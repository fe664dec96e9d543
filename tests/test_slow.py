"""tests/slow.py: which tests are slow, the guard on the others' processes, and the order xdist runs them in."""

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


def test_the_long_tests_come_first_then_the_slow_then_the_fast():
    items = [Item("localcluster/test_a.py"), Item("program/test_b.py", marked=True),
             Item("controller/model/test_engine_model.py", marked=True), Item("program/test_readme.py"),
             Item("program/test_readme.py", marked=True)]
    assert slow.run_order(items) == [items[4], items[2], items[1], items[0], items[3]]  # LONG's order, then slow


@pytest.mark.parametrize(("dist", "sizes"), [("worksteal", [25, 25, 25, 25]), ("load", [6, 6, 6, 6])])
def test_each_worker_starts_with_its_share_of_the_long_tests(dist, sizes):
    """xdist sends each worker a run of the collection in order (worksteal: a quarter each; load: chunks of a
    quarter of that): each run starts with the long tests, one per worker, the longest first; the others keep their
    order, a module's tests together."""
    long = [Item("controller/model/test_engine_model.py", marked=True) for _ in range(5)]
    long.insert(3, Item("e2e/test_real_torch.py", marked=True))  # before the model's, in LONG
    others = [Item("program/test_b.py", marked=True) for _ in range(10)] + [Item("informers/test_c.py")] * 84
    assert slow.first_batches(100, 4, dist, None) == sizes
    order = slow.run_order(others[:50] + long + others[50:], workers=4, dist=dist)
    assert sorted(map(id, order)) == sorted(map(id, others + long))
    runs, start = [], 0
    for size in sizes:
        runs.append(order[start:start + size])
        start += size
    expected = sorted(long, key=slow.rank)
    assert expected[0] is long[3]
    assert [run[0] for run in runs] == expected[:4] and [run[1] for run in runs[:2]] == expected[4:]
    assert [item for item in order if item not in long] == others  # in their order, runs of a module together
def test_without_xdist_or_with_a_mode_of_another_order_the_long_tests_just_come_first():
    items = [Item("informers/test_c.py"), Item("controller/model/test_engine_model.py", marked=True)]
    assert slow.run_order(items, workers=0) == slow.run_order(items, workers=4, dist="loadfile") == items[::-1]


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
