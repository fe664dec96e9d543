"""The engine's model-based test (machine.py), as CI runs it: a fixed budget of derandomized examples, so every run
explores the same sequences. `ENGINE_MODEL_EXAMPLES` raises the budget; `ENGINE_MODEL_RANDOM=1` with pytest's
`--hypothesis-seed` explores other sequences (`make model-long` passes a random seed and prints it);
`ENGINE_MODEL_TOLERATE` says which known defects are tolerated (defects.py); `ENGINE_MODEL_NO_SHRINK=1` reports
the first failing story as found, unshrunk."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings

from controller.kinds import registry
from tests.controller.model import rules
from tests.controller.model.machine import EngineModel

EXAMPLES = int(os.environ.get("ENGINE_MODEL_EXAMPLES", "1000"))
# ENGINE_MODEL_NO_SHRINK: report the first failing story as found (faster; mutants.py uses it).
PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([] if os.environ.get("ENGINE_MODEL_NO_SHRINK")
                                                          else [Phase.shrink])
RANDOM = bool(os.environ.get("ENGINE_MODEL_RANDOM"))  # make model-long: a seed of pytest's --hypothesis-seed
EngineModel.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=50, derandomize=not RANDOM,
                                         database=None, deadline=None, phases=PHASES,
                                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
# Shrinking a failure to its shortest story takes longer than a passing run: the suite's 120s would cut it.
TestEngineModel = pytest.mark.timeout(1800)(EngineModel.TestCase)


def test_every_registered_kind_is_modelled():
    # The machine draws jobs of every kind of the registry; rules.py must know what each is to expect.
    assert list(registry.KINDS) == list(rules.MODELLED), "a kind without a model in rules.py (or a model too many)"
