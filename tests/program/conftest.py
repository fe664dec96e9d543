"""Fixtures several program tests share: the install's renderings."""

from __future__ import annotations

import pytest

from tests.slow import starts_processes

from .manifests_support import (
    ROOT,
    rendered,  # noqa: F401  (the fixture: `kubectl kustomize manifests/`)
)
from .packaging_support import OVERLAYS, render


@pytest.fixture(scope="module")
@starts_processes
def base() -> list[dict]:
    """The default install, as `kubectl kustomize manifests/` renders it."""
    return render(ROOT / "manifests")


@pytest.fixture(scope="module")
@starts_processes
def monitoring() -> list[dict]:
    """The install with the monitoring component (overlays/monitoring)."""
    return render(OVERLAYS / "monitoring")


@pytest.fixture(scope="module")
@starts_processes
def namespaced() -> list[dict]:
    """The install watching a list of namespaces (overlays/namespaced)."""
    return render(OVERLAYS / "namespaced")


@pytest.fixture(scope="module")
@starts_processes
def verified() -> list[dict]:
    """The install with cert-manager's certificates (overlays/cert-manager)."""
    return render(OVERLAYS / "cert-manager")
