"""Fixtures for the localcluster tests that share one cluster per module."""

from __future__ import annotations

import re

import pytest

from .kubectl import Kubectl


@pytest.fixture
def namespace(cluster, request) -> str:
    """A namespace of the test's own, named after it, made in `cluster`: tests sharing a cluster keep apart."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.removeprefix("test_").lower())[:50].strip("-")
    cluster.api.ensure_namespace(name)
    return name


@pytest.fixture
def kubectl(cluster, tmp_path, namespace) -> Kubectl:
    """The installed kubectl, working in the test's namespace (test_kubectl.py has its own, in `default`)."""
    return Kubectl(cluster, tmp_path, namespace=namespace)
