"""The envtest tier's fixtures (a pytest plugin of tests/conftest.py): the session's control plane, started
once per session (per xdist worker) by the first test that asks for it, and the `real` marker its tests get.

Where there are no assets the tier is skipped with one line on how to get them; in CI (the environment's CI,
or GENERICJOB_REQUIRE_ENVTEST=1 as .ci/run sets) that is a failure instead: CI must run the tier.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os

import pytest

from localcluster.testing import starts_processes

from .cluster import CRDS, Session, etcd_keys, install_crds, snapshot
from .envtest import AssetsMissing, ControlPlane, find_assets
from .http import Http

REQUIRED = "GENERICJOB_REQUIRE_ENVTEST"


def required() -> bool:
    return bool(os.environ.get("CI") or os.environ.get(REQUIRED))


def _in_thread(coroutine_function):
    """Run a coroutine to its end in a thread of its own (a session fixture may be set up under a running loop)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine_function()).result()


async def _install_crds(plane: ControlPlane, kept: set[str]) -> None:
    async with Http(plane.url, plane.ca_pem) as http:
        await install_crds(http, CRDS, kept)


async def _session(plane: ControlPlane, kept: set[str]) -> Session:
    async with Http(plane.url, plane.ca_pem) as http:
        return Session(plane, await snapshot(http), await etcd_keys(plane.etcd_url), kept)


@pytest.fixture(scope="session")
@starts_processes  # etcd, kube-apiserver, kube-controller-manager: its tests are slow (tests/slow.py)
def envtest():
    try:
        assets = find_assets()
    except AssetsMissing as missing:
        if required():
            pytest.fail(f"the envtest tier must run here ({REQUIRED} or CI is set): {missing}", pytrace=False)
        pytest.skip(str(missing))
    kept: set[str] = set()  # the project's CRDs, installed before the controller manager starts (envtest.py)
    plane = ControlPlane(assets)
    plane.start(lambda: _in_thread(lambda: _install_crds(plane, kept)))
    try:
        yield _in_thread(lambda: _session(plane, kept))
    finally:
        plane.stop()


def pytest_collection_modifyitems(config, items):
    for item in items:
        callspec = getattr(item, "callspec", None)
        if "envtest" in getattr(item, "fixturenames", ()) or (callspec and callspec.params.get("server") == "real"):
            item.add_marker(pytest.mark.real)


def pytest_configure(config):
    config.addinivalue_line("markers", "real: runs on the envtest tier's real API server (make test-real)")
    config.addinivalue_line("markers", "servers(*names): run the e2e test on each server named (local, real)")
