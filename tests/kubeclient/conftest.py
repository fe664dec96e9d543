"""The credential tests' clocks (tests/kubeclient/clock.py): `clock` for the client alone, `cluster_clock` for the
client and the in-process localcluster's authenticator (its tokens expire by it)."""

from __future__ import annotations

import pytest

from .clock import FakeClock, drive_cluster


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def cluster_clock(cluster, clock: FakeClock, monkeypatch) -> FakeClock:
    drive_cluster(cluster, clock, monkeypatch)
    return clock
