"""Fixtures several program tests share: the install's renderings."""

from __future__ import annotations

import pytest

from .test_manifests import ROOT
from .test_packaging import OVERLAYS, render


@pytest.fixture(scope="module")
def base() -> list[dict]:
    """The default install, as `kubectl kustomize manifests/` renders it."""
    return render(ROOT / "manifests")


@pytest.fixture(scope="module")
def verified() -> list[dict]:
    """The install with cert-manager's certificates (overlays/cert-manager)."""
    return render(OVERLAYS / "cert-manager")
