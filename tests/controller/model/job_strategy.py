"""The jobs the engine's model (machine.py) runs: a Hypothesis strategy drawing a job of any kind."""

from __future__ import annotations

import copy

from hypothesis import strategies as st

from controller.kinds import registry
from tests.controller.model import rules as r
from tests.controller.model.world import JOB, NS, UID

COMMAND = ["python", "train.py"]
DEBUG_COMMAND = ["sleep", "inf"]
DEADLINE = 60
# By kind name; test_engine_model checks that rules.py models each (but those it lists as not modelled yet).
KINDS = {name: kind for name, kind in registry.KINDS.items() if name not in r.NOT_YET_MODELLED}


def job_object(kind: str, types: list[tuple[str, int, object]], extra: dict) -> dict:
    template = {"spec": {"containers": [{"name": r.CONTAINER[kind], "image": "train:1", "command": COMMAND}]}}
    specs = [{"type": t, "replicas": n, "restartPolicy": policy, "template": copy.deepcopy(template)}
             for t, n, policy in types]
    return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": kind,
            "metadata": {"name": JOB, "namespace": NS, "uid": UID, "generation": 1},
            "spec": {"replicaSpecs": specs, **extra}}


@st.composite
def jobs(draw) -> dict:
    """A job of any kind: several replica types, per-type policies, budgets, rules, deadline, clean-up."""
    kind = draw(st.sampled_from(list(KINDS)))
    cleanup = draw(st.sampled_from(["None", "Unfinished", "All"]))
    if kind == r.GENERIC:
        policy = st.fixed_dictionaries({"policy": st.sampled_from(["Never", "OnFailure", "Always"]),
                                        "limit": st.sampled_from([0, 1, 2])})
        master = draw(st.booleans())
        workers = draw(st.integers(0 if master else 1, 3))
        types = ([("master", 1, draw(policy))] if master else []) + [("worker", workers, draw(policy))]
        extra: dict = {"cleanUpPolicy": cleanup}
        success = [None] + ([[{"worker": [0]}]] if workers else []) + ([[{"master": [0]}]] if master else [])
        failure = [None] + ([[{"worker": [0]}, {"worker": [1]}]] if workers >= 2 else [])
        if chosen := draw(st.sampled_from(success)):
            extra["successRules"] = chosen
        if chosen := draw(st.sampled_from(failure)):
            extra["failureRules"] = chosen
        return job_object(kind, types, extra)
    run_policy: dict = {"cleanUpPolicy": cleanup}
    if (limit := draw(st.sampled_from([None, 0, 1, 2]))) is not None:
        run_policy["backoffLimit"] = limit
    if (deadline := draw(st.sampled_from([None, DEADLINE]))) is not None:
        run_policy["activeDeadlineSeconds"] = deadline
    if kind == r.MPI:
        return mpi_job(draw, run_policy)
    policy = st.sampled_from(["Never", "OnFailure", "Always", "ExitCode"])
    if kind == r.TENSORFLOW:
        chief = draw(st.booleans())
        types = ([("chief", 1, draw(policy))] if chief else []) + \
            [("worker", draw(st.integers(0 if chief else 1, 3)), draw(policy)), ("ps", draw(st.integers(0, 1)),
                                                                                  draw(policy))]
    else:
        master = draw(st.booleans())
        types = ([("master", 1, draw(policy))] if master else []) + \
            [("worker", draw(st.integers(0 if master else 1, 3)), draw(policy))]
    return job_object(kind, types, {"runPolicy": run_policy})


def mpi_job(draw, run_policy: dict) -> dict:
    """An MPIJob: a launcher and 1 to 3 workers, each Never or OnFailure (or the default), either creation policy,
    the hostfile's formats."""
    job = job_object(r.MPI, [], {"runPolicy": run_policy})
    template = {"spec": {"containers": [{"name": r.CONTAINER[r.MPI], "image": "train:1", "command": COMMAND}]}}
    policy = st.sampled_from([None, "Never", "OnFailure"])
    spec = job["spec"]
    del spec["replicaSpecs"]
    spec["launcher"] = {"template": copy.deepcopy(template)}
    spec["worker"] = {"replicas": draw(st.integers(1, 3)), "template": copy.deepcopy(template)}
    for part in ("launcher", "worker"):
        if (chosen := draw(policy)) is not None:
            spec[part]["restartPolicy"] = chosen
    if (creation := draw(st.sampled_from([None, "WaitForWorkersReady", "AtStartup"]))) is not None:
        spec["launcherCreationPolicy"] = creation
    spec["mpiImplementation"] = draw(st.sampled_from(["OpenMPI", "MPICH"]))
    spec["slotsPerWorker"] = draw(st.sampled_from([1, 2]))
    spec["runLauncherAsWorker"] = draw(st.booleans())
    return job
