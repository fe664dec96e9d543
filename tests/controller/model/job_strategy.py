"""The jobs the engine's model (machine.py) runs: a Hypothesis strategy drawing a job of any registered kind, each
drawn by its kind's model contract (rules.contract)."""

from __future__ import annotations

from hypothesis import strategies as st

from controller.jobs.testing import COMMAND
from controller.jobs.training.testing import DEADLINE
from controller.kinds import registry
from tests.controller.model import rules as r

DEBUG_COMMAND = ["sleep", "inf"]
__all__ = ["COMMAND", "DEADLINE", "DEBUG_COMMAND", "KINDS", "jobs"]
KINDS = registry.KINDS  # by kind name: every one is drawn


@st.composite
def jobs(draw) -> dict:
    """A job of any kind: several replica types, per-type policies, budgets, rules, deadline, clean-up."""
    kind = draw(st.sampled_from(list(KINDS)))
    cleanup = draw(st.sampled_from(["None", "Unfinished", "All"]))
    return r.contract(kind).draw(draw, cleanup)
