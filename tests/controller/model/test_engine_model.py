"""The engine's model-based test (machine.py), as CI runs it: a fixed budget of derandomized examples, split among
shards.py's shards (each derandomized by a seed of its own, run as a test of its own, side by side), so every run
explores the same sequences. `ENGINE_MODEL_EXAMPLES` raises the budget (of all shards together);
`ENGINE_MODEL_RANDOM=1` with pytest's `--hypothesis-seed` explores other sequences, in one run (`make model-long`
passes a random seed and prints it); `ENGINE_MODEL_TOLERATE` says which known defects are tolerated (defects.py);
`ENGINE_MODEL_NO_SHRINK=1` reports the first failing story as found, unshrunk."""

from __future__ import annotations

import ast
import importlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from controller.kinds import registry
from tests.controller.model import shards

EXAMPLES = int(os.environ.get("ENGINE_MODEL_EXAMPLES", "1000"))
# ENGINE_MODEL_NO_SHRINK: report the first failing story as found (faster; mutants.py uses it).
PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([] if os.environ.get("ENGINE_MODEL_NO_SHRINK")
                                                          else [Phase.shrink])
RANDOM = bool(os.environ.get("ENGINE_MODEL_RANDOM"))  # make model-long: a seed of pytest's --hypothesis-seed
SETTINGS = settings(max_examples=EXAMPLES, stateful_step_count=50, derandomize=not RANDOM, database=None,
                    deadline=None, phases=PHASES, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.filter_too_much])
SHARDS = [(None, EXAMPLES)] if RANDOM else shards.plan(EXAMPLES)


@pytest.mark.slow  # runs long: the engine's model, minutes a shard
# Shrinking a failure to its shortest story takes longer than a passing run: the suite's 120s would cut it.
@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("seed", "examples"), SHARDS,
                         ids=[f"seed-{seed}" if seed is not None else "random" for seed, _ in SHARDS])
def test_engine_model(seed, examples):
    run_state_machine_as_test(shards.machine(seed), settings=settings(SETTINGS, max_examples=examples))


def test_the_shards_explore_the_whole_budget():
    assert sum(examples for _, examples in shards.plan(EXAMPLES)) == EXAMPLES
    assert sum(examples for _, examples in shards.plan(1000)) == 1000 and len(shards.plan(1000)) == len(shards.SEEDS)
    assert shards.plan(2) == [(shards.SEEDS[0], 1), (shards.SEEDS[1], 1)]
    assert len(set(shards.SEEDS)) == len(shards.SEEDS)


def test_every_registered_kind_brings_its_model_contract_which_reads_nothing_of_the_controller():
    # The machine draws jobs of every kind of the registry, each kind's model contract saying what to expect (its
    # folder's testing.py); the oracle checks the engine against the spec only if no contract reads the engine.
    allowed = {"controller.jobs.testing", "controller.jobs.training.testing"}
    for name, kind in registry.KINDS.items():
        contract = registry.model_contract(kind)
        assert contract.kind == name, f"{name}'s model contract is {contract.kind}'s"
        for module in {type(contract).__module__, *(c.__module__ for c in type(contract).__mro__[1:-1])}:
            tree = ast.parse(Path(importlib.import_module(module).__file__).read_text())
            imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | \
                {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            read = {m for m in imported if m.split(".")[0] in ("controller", "informers", "kubeclient")} - allowed
            assert not read, f"{module} reads the controller's {sorted(read)}: a contract is the spec's, not the code's"
