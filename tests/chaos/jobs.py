"""The chaos run's workload: seeded jobs of every kind of the registry, whose outcome is computable from their pods'
scripts. Each kind brings its part from its folder: its model contract's `chaos_job`
(controller/kinds/<kind>/testing.py, on controller/jobs/testing.py) draws a job, the script of every pod attempt and
what each replica and the job come to, so a kind registered is in the run with no line here changed.

Every pod follows a per-attempt script, set by pod name through `POST /_localcluster/scripts` (localcluster's scripted
runner counts attempts per pod name), so the oracle knows, for each replica, the outcome it comes to for good and how
many restarts that takes. A kind's jobs are drawn so that exactly one verdict is reachable: outcomes for good are final,
so the job's phase does not depend on the order in which replicas finish.

The kinds that play every mode (run, paused and resumed, debug: GenericJob) carry the run: every paused and debug
job, and the normal jobs the share leaves; the others take `share` of the normal jobs, in turn.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from controller.jobs.kind import JobKind
from controller.jobs.testing import DEBUG, MODES, NORMAL, PAUSE, ChaosJob, ChaosReplica, ModelContract, simulate
from controller.kinds import registry

__all__ = ["DEBUG", "NORMAL", "PAUSE", "JobPlan", "Replica", "make_jobs", "simulate"]

Replica = ChaosReplica
SHARE = 0.3  # of the normal jobs, the share that are of the kinds playing only some modes (in turn)


@dataclass
class JobPlan:
    """A chaos job (its kind's `ChaosJob`) as the run submits and checks it."""

    name: str
    kind: JobKind
    contract: ModelContract
    job: ChaosJob
    pause_at: float = 0.0  # seconds after submission (pause jobs)
    resume_after: float = 0.0

    @property
    def mode(self) -> str:
        return self.job.mode

    @property
    def body(self) -> dict:
        return self.job.body

    @property
    def replicas(self) -> list[Replica]:
        return self.job.replicas

    @property
    def expected(self) -> str:
        return self.job.expected

    @property
    def cleanup(self) -> str:
        return self.job.cleanup

    @property
    def scripts(self) -> dict[str, dict | list]:
        """"namespace/pod" -> script, for `POST /_localcluster/scripts`."""
        return {f"default/{pod}": script for pod, script in self.job.scripts.items()}

    @property
    def plural(self) -> str:
        return self.kind.api.plural

    @property
    def label(self) -> str:
        """The label naming the job on its pods and Services."""
        return self.kind.api.name_label

    @property
    def staple(self) -> bool:
        """Of a kind that plays every mode."""
        return set(MODES) <= set(self.contract.chaos_modes)

    @property
    def phase_key(self) -> str:
        """How the report counts its phase: the mode of a kind that plays every mode, else the kind."""
        return self.mode if self.staple else self.kind.api.kind

    def records(self, job: dict) -> list[dict]:
        """The replica records of the job as its status keeps them (its contract says under which key)."""
        return [r for t in (job.get("status") or {}).get("tasks") or () for r in t.get(self.contract.records) or ()]


def kinds() -> list[tuple[JobKind, ModelContract]]:
    """Every kind of the registry, with its contract (its chaos part)."""
    return [(kind, registry.model_contract(kind)) for kind in registry.KINDS.values()]


def make_job(rng: random.Random, index: int, share: float, known: list[tuple[JobKind, ModelContract]],
             turn: int) -> JobPlan:
    """The `index`-th job; `turn`: how many jobs of the shared kinds were made before it (they take turns)."""
    name = f"chaos-{index:03d}"
    mode = rng.choices([NORMAL, PAUSE, DEBUG], weights=[75, 15, 10])[0]
    staples = [k for k in known if set(MODES) <= set(k[1].chaos_modes)]
    others = [k for k in known if k not in staples and mode in k[1].chaos_modes]
    if share and mode == NORMAL and others and rng.random() < share:  # no draw at 0: the staples alone
        kind, contract = others[turn % len(others)]
    else:
        kind, contract = staples[index % len(staples)]
    plan = JobPlan(name, kind, contract, contract.chaos_job(rng, name, mode))
    if mode == PAUSE:
        plan.pause_at, plan.resume_after = rng.uniform(0.1, 0.8), rng.uniform(0.3, 1.5)
    return plan


def make_jobs(seed: int, count: int, share: float = SHARE) -> list[JobPlan]:
    rng = random.Random(seed)
    known = kinds()
    plans: list[JobPlan] = []
    for index in range(count):
        plans.append(make_job(rng, index, share, known, sum(not plan.staple for plan in plans)))
    return plans
