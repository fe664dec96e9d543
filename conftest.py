"""The guard on the processes a fast test starts (tests/slow.py's ProcessGuard), for every test of the repository's
suite: the controller's (tests/) and localcluster's own (packages/localcluster/localcluster_tests), hence here, above
both (a hook that takes a test applies only to those under its conftest)."""

from __future__ import annotations

import pytest

from tests import slow


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if item.get_closest_marker("slow"):
        return (yield)
    with slow.ProcessGuard(item).watching():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    slow.fail_refused(item, report)
    return report
