"""Each hand-made mutant of the engine (mutants.py) is killed by the model: the model fails with it applied.
Slow (the model runs once per mutant), so only with ENGINE_MODEL_MUTANTS=1 (`make model-mutants`)."""

from __future__ import annotations

import os

import pytest

from tests.controller.model.mutants import MUTANTS, applied, run_model

EXAMPLES = int(os.environ.get("ENGINE_MODEL_EXAMPLES", "1000"))

pytestmark = [pytest.mark.skipif(not os.environ.get("ENGINE_MODEL_MUTANTS"), reason="ENGINE_MODEL_MUTANTS=1 runs it"),
              pytest.mark.timeout(1800)]


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if not m.equivalent],
                         ids=[m.name for m in MUTANTS if not m.equivalent])
def test_the_model_kills_the_mutant(mutant):
    with applied(mutant):
        found = run_model(EXAMPLES)
    assert found is not None, f"the model does not see: {mutant.what}"
