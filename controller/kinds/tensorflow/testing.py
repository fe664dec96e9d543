"""TensorFlowTrainingJob's model contract (controller/jobs/testing.py; the training kit's rules): chief, worker and ps;
the chief's success is the job's, else worker 0's; admission keeps one chief, else a worker. Reads nothing of the
controller but the contracts."""

from __future__ import annotations

import copy
import random
from typing import Any

from controller.jobs.testing import ApiExercise, Key
from controller.jobs.training.testing import POLICIES, TrainingContract

BOARDS = ("tensorstack.dev", "tensorboards")


class TensorFlowContract(TrainingContract):
    kind = "TensorFlowTrainingJob"
    container = "tensorflow"
    records = "replicaStatus"

    def master(self, spec: dict) -> Key | None:
        have = self.counts(spec)
        return ("chief", 0) if have.get("chief") else ("worker", 0) if have.get("worker") else None

    def api_exercise(self, template: dict) -> ApiExercise | None:
        """Its TensorBoard made, then patched when the job's tensorboardSpec is edited."""
        spec = {**self.one_replica(copy.deepcopy(template)), "tensorboardSpec": {"image": "tensorflow:2.11"}}
        wanted = {"image": "tensorflow:2.12"}
        return ApiExercise(self.job_named("tf", spec), made=(BOARDS, bool),
                           edit={"spec": {"tensorboardSpec": wanted}},
                           followed=(BOARDS, lambda boards: [b.get("spec") for b in boards] == [wanted]))

    def valid(self, spec: dict) -> bool:
        have = self.counts(spec)
        if not super().valid(spec) or ("chief" in have and have["chief"] != 1):
            return False
        return "chief" in have or bool(have.get("worker"))

    def draw(self, draw: Any, cleanup: str) -> dict:
        from hypothesis import strategies as st
        run_policy = self.run_policy(draw, cleanup)
        policy = st.sampled_from(POLICIES)
        chief = draw(st.booleans())
        types = ([("chief", 1, draw(policy))] if chief else []) + \
            [("worker", draw(st.integers(0 if chief else 1, 3)), draw(policy)),
             ("ps", draw(st.integers(0, 1)), draw(policy))]
        return self.typed_job(types, {"runPolicy": run_policy})

    def chaos_types(self, rng: random.Random) -> dict[str, int]:
        return {"chief": 1, "worker": rng.randint(1, 3)} if rng.random() < 0.4 else {"worker": rng.randint(1, 3)}


MODEL = TensorFlowContract()
