"""CI's fixed exploration of the engine's model, in shards: the examples split among a few runs, each derandomized
by a seed of its own (Hypothesis's `seed`), so that they explore different sequences and run side by side (pytest's
workers), and every run explores the same ones. test_engine_model.py runs each shard as a test; mutants.py runs them
all, in turn, so that a mutant is measured against what CI explores."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import seed

from tests.controller.model.machine import EngineModel

SEEDS = (1, 2, 3, 4, 5)  # one shard each; a new one explores new sequences (and moves what CI checks)


def plan(examples: int) -> list[tuple[int, int]]:
    """(seed, examples) of each shard: `examples` in all, as evenly as they split (no shard of none)."""
    count = max(1, min(len(SEEDS), examples))
    return [(SEEDS[i], examples // count + (i < examples % count)) for i in range(count)]


def machine(shard_seed: int | None) -> Callable[[], EngineModel]:
    """The state machine, its examples drawn from the seed (None: as the settings say, or pytest's
    --hypothesis-seed). A factory, so that a failure's story still reads `state = EngineModel()`."""
    if shard_seed is None:
        return EngineModel

    def factory() -> EngineModel:
        return EngineModel()

    return seed(shard_seed)(factory)
