"""Helpers shared by the test_decisions_plan*.py tests: a clock reading and the GenericJob plan support."""

from __future__ import annotations

from .plan_support import at

NOW = "2024-01-01T00:00:00Z"

__all__ = ["NOW", "at", "generic"]


def generic():
    from . import plan_support

    return plan_support
