"""The time localcluster's authenticator goes by, for a test that drives it (token expiry, certificates' validity)."""

from __future__ import annotations

from typing import Any

import pytest

from ..auth import authentication


def drive_authentication_clock(monkeypatch: pytest.MonkeyPatch, clock: Any) -> None:
    """From now to the test's end, the authenticator reads `clock` (an object with a `time()`) for the time: it
    reads the time module's time() alone."""
    monkeypatch.setattr(authentication, "time", clock)
