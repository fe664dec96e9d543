"""Which fixtures start processes (kubectl, pods' processes, the programs): a test that uses one is slow, and
`make test-fast` (`-m "not slow"`) leaves it out. The plugin marks such tests (plugin.py); the controller's suite
reads the same mark (tests/slow.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

_STARTS = "starts_processes"
F = TypeVar("F", bound=Callable[..., Any])


def starts_processes(fixture: F | None = None, *, when: Callable[[pytest.Item], bool] | None = None) -> Any:
    """Under `@pytest.fixture`: the fixture starts processes, so every test that uses it is slow; `when(item)`,
    if given, says for which tests (the `cluster` fixture starts pods' processes under `runner("process")` only).

        @pytest.fixture
        @starts_processes
        def kubectl(cluster, tmp_path): ...
    """
    def mark(function: F) -> F:
        setattr(function, _STARTS, when or (lambda item: True))
        return function

    return mark if fixture is None else mark(fixture)


def started_by_fixtures(item: pytest.Item) -> bool:
    """Whether a fixture `item` asks for (or one they ask for) starts processes for it."""
    info = getattr(item, "_fixtureinfo", None)
    for definitions in (info.name2fixturedefs.values() if info else ()):
        when = getattr(definitions[-1].func, _STARTS, None)  # the definition that applies to this test
        if when is not None and when(item):
            return True
    return False
