"""PyTorchTrainingJob's model contract (controller/jobs/testing.py; the training kit's rules): master and worker; the
master's success is the job's, else global rank 0's (the first type's); backoffLimit 3 by default; admission keeps
one master, or the first type's rank 0. Reads nothing of the controller but the contracts."""

from __future__ import annotations

import random
from typing import Any

from controller.jobs.testing import Key
from controller.jobs.training.testing import POLICIES, TrainingContract


class PyTorchContract(TrainingContract):
    kind = "PyTorchTrainingJob"
    container = "pytorch"
    default_backoff_limit = 3

    def master(self, spec: dict) -> Key | None:
        have = self.counts(spec)
        if have.get("master"):
            return "master", 0
        return next(((t, 0) for t, n in have.items() if n), None)

    def valid(self, spec: dict) -> bool:
        have = self.counts(spec)
        if not super().valid(spec) or ("master" in have and have["master"] != 1):
            return False
        return "master" in have or bool(have.get(self.replica_specs(spec)[0]["type"]))  # rank 0 stays

    def draw(self, draw: Any, cleanup: str) -> dict:
        from hypothesis import strategies as st
        run_policy = self.run_policy(draw, cleanup)
        policy = st.sampled_from(POLICIES)
        master = draw(st.booleans())
        types = ([("master", 1, draw(policy))] if master else []) + \
            [("worker", draw(st.integers(0 if master else 1, 3)), draw(policy))]
        return self.typed_job(types, {"runPolicy": run_policy})

    def chaos_types(self, rng: random.Random) -> dict[str, int]:
        return {"master": 1, "worker": rng.randint(1, 3)} if rng.random() < 0.5 else {"worker": rng.randint(1, 3)}


MODEL = PyTorchContract()
