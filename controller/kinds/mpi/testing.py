"""MPIJob's model contract (controller/jobs/testing.py; the training kit's rules, the spec's "MPIJob"): a launcher
(always one) and workers rather than replicaSpecs (read as replicaSpecs: `replica_specs`), Never or OnFailure
(default), backoffLimit 3 by default, a lost pod under Never final (any failure is), the launcher's success the job's;
the start order (the launcher made once every worker is Running and Ready, unless AtStartup), the group restart (a
worker restarted takes the launcher with it; the group's restarts in one reconcile count one) and the hostfile its
ConfigMap keeps current. Its chaos jobs: workers that run until deleted, as their sshd does, and a launcher whose end
is the job's. Reads nothing of the controller but the contracts."""

from __future__ import annotations

import copy
import random
from typing import Any

from controller.jobs.testing import (
    FAILED,
    RUNNING,
    SUCCEEDED,
    ApiExercise,
    ChaosJob,
    ChaosReplica,
    Key,
    chaos_script,
    simulate,
)
from controller.jobs.training.testing import UNLIMITED, TrainingContract

LAUNCHER, WORKER = "launcher", "worker"


class MPIJobContract(TrainingContract):
    kind = "MPIJob"
    container = "mpi"
    default_backoff_limit = 3
    default_policy = "OnFailure"

    def replica_specs(self, spec: dict) -> list[dict]:
        launcher, worker = spec["launcher"], spec["worker"]
        return [{"type": LAUNCHER, "replicas": 1, "restartPolicy": launcher.get("restartPolicy"),
                 "template": launcher["template"]},
                {"type": WORKER, "replicas": worker.get("replicas", 1), "restartPolicy": worker.get("restartPolicy"),
                 "template": worker["template"]}]

    def scale(self, spec: dict, index: int, replicas: int) -> bool:
        if index % 2 == 0:
            return False  # the launcher has no count
        spec["worker"]["replicas"] = replicas
        return True

    def valid(self, spec: dict) -> bool:
        return self.counts(spec)[WORKER] >= 1

    def master(self, spec: dict) -> Key | None:
        return LAUNCHER, 0

    def counts_lost(self, spec: dict, replica_type: str) -> bool:
        return True  # under Never a lost pod is a failure like any, final

    def start_after(self, spec: dict) -> dict[str, tuple[str, ...]]:
        if spec.get("launcherCreationPolicy", "WaitForWorkersReady") == "WaitForWorkersReady":
            return {LAUNCHER: (WORKER,)}
        return {}

    def restart_together(self, spec: dict) -> dict[str, tuple[str, ...]]:
        return {WORKER: (LAUNCHER,), LAUNCHER: ()}

    def hostfile_replicas(self, spec: dict) -> list[Key]:
        first = [(LAUNCHER, 0)] if spec.get("runLauncherAsWorker") else []
        return first + [k for k in self.replicas(spec) if k[0] == WORKER]

    def hostfile_hosts(self, spec: dict, job: str, namespace: str) -> list[tuple[str, int]] | None:
        return [(f"{job}-{t}-{rank}.{job}.{namespace}.svc", spec.get("slotsPerWorker", 1))
                for t, rank in self.hostfile_replicas(spec)]

    def api_exercise(self, template: dict) -> ApiExercise | None:
        """Its hostfile ConfigMap and SSH Secret made, and the ConfigMap's data patched when the workers are scaled
        (once the launcher is made: its workers are up)."""
        spec = {"launcher": {"template": copy.deepcopy(template)},
                "worker": {"replicas": 1, "template": copy.deepcopy(template)}}
        return ApiExercise(self.job_named("mpi", spec),
                           made=(("", "pods"), lambda pods: "mpi-launcher-0" in [p["metadata"]["name"] for p in pods]),
                           edit={"spec": {"worker": {"replicas": 2}}},
                           followed=(("", "configmaps"), lambda maps: any(
                               "mpi-worker-1" in (m.get("data") or {}).get("hostfile", "") for m in maps)))

    def draw(self, draw: Any, cleanup: str) -> dict:
        """A launcher and 1 to 3 workers, each Never or OnFailure (or the default), either creation policy, the
        hostfile's formats."""
        from hypothesis import strategies as st
        spec: dict = {"runPolicy": self.run_policy(draw, cleanup), "launcher": {"template": self.template()},
                      "worker": {"replicas": draw(st.integers(1, 3)), "template": self.template()}}
        for part in ("launcher", "worker"):
            if (chosen := draw(st.sampled_from([None, "Never", "OnFailure"]))) is not None:
                spec[part]["restartPolicy"] = chosen
        if (creation := draw(st.sampled_from([None, "WaitForWorkersReady", "AtStartup"]))) is not None:
            spec["launcherCreationPolicy"] = creation
        spec["mpiImplementation"] = draw(st.sampled_from(["OpenMPI", "MPICH"]))
        spec["slotsPerWorker"] = draw(st.sampled_from([1, 2]))
        spec["runLauncherAsWorker"] = draw(st.booleans())
        return self.job(spec)

    def chaos_job(self, rng: random.Random, name: str, mode: str) -> ChaosJob:
        """1 to 3 workers that never end (none restarts: no group restart under chaos, which the model test and
        tests/e2e/test_mpijob.py cover), made before the launcher or with it; the launcher OnFailure (fails up to
        twice, then succeeds) or Never (succeeds or fails), its end the job's."""
        workers = rng.randint(1, 3)
        cleanup = rng.choice(["None", "Unfinished", "All"])
        policy = "OnFailure" if rng.random() < 0.6 else "Never"
        attempts = [*[False] * rng.randint(0, 2), True] if policy == "OnFailure" else [rng.random() < 0.6]
        limit = UNLIMITED if policy == "OnFailure" else 0
        launcher = ChaosReplica(LAUNCHER, 0, f"{name}-{LAUNCHER}-0", policy, limit, attempts)
        launcher.outcome, launcher.restarts = simulate(policy, limit, launcher.succeeds)
        replicas = [launcher] + [ChaosReplica(WORKER, rank, f"{name}-{WORKER}-{rank}", "OnFailure", UNLIMITED, [True],
                                              RUNNING) for rank in range(workers)]
        scripts: dict[str, dict | list] = {r.name: {} for r in replicas[1:]}  # until deleted
        scripts[launcher.name] = [chaos_script(rng, ok) for ok in attempts]
        spec = {"runPolicy": {"cleanUpPolicy": cleanup, "backoffLimit": UNLIMITED},
                "launcherCreationPolicy": rng.choice(["WaitForWorkersReady", "AtStartup"]),
                "launcher": {"restartPolicy": policy, "template": self.template()},
                "worker": {"replicas": workers, "template": self.template()}}
        return ChaosJob(self.job_named(name, spec), replicas, scripts,
                        SUCCEEDED if launcher.outcome == SUCCEEDED else FAILED, cleanup,
                        policies={LAUNCHER: (policy, limit), WORKER: ("OnFailure", UNLIMITED)})


MODEL = MPIJobContract()
