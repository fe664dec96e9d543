"""What a PyTorchTrainingJob's replica is told: the environment (Kubeflow's names) and, in torchrun mode,
the torchrun command line with the `PET_*` defaults equal to it.

Every container of every replica: MASTER_ADDR (the master's Service, `[job]-[type]-0`), MASTER_PORT and
PYTHONUNBUFFERED=1; without torchrun also WORLD_SIZE and RANK (global rank, master first). With torchrun,
torchrun sets RANK, WORLD_SIZE and LOCAL_RANK per process; the pod gets PET_NNODES, PET_NPROC_PER_NODE,
PET_NODE_RANK (not when elastic), PET_MASTER_ADDR, PET_MASTER_PORT, PET_RDZV_BACKEND, PET_RDZV_ENDPOINT,
PET_RDZV_ID and PET_MAX_RESTARTS (if set), so a bare `torchrun x.py` works in a debug pod. Values the
user set are left alone.
"""

from __future__ import annotations

from controller.jobs.training import containers
from controller.kinds.pytorch.models import PyTorchTrainingJob

PORT_NAME = "pytorchjob-port"
DEFAULT_PORT = 23456
CONTAINER_NAMES = ("pytorch", "python")  # the training container, else containers[0]


def training_container(pod_spec: dict) -> dict | None:
    return containers.training_container(pod_spec, CONTAINER_NAMES, any_container=True)


def port(pod_spec: dict) -> int:
    """The training container's port named pytorchjob-port, else 23456."""
    return containers.named_port(training_container(pod_spec), PORT_NAME, DEFAULT_PORT)


def master_addr(job: PyTorchTrainingJob) -> str:
    master = job.spec.master()
    return f"{job.name}-{master[0]}-0" if master is not None else ""


def master_port(job: PyTorchTrainingJob) -> int:
    master = job.spec.master()
    spec = job.spec.replica(master[0]) if master is not None else None
    return port((spec.template.get("spec") or {}) if spec is not None else {})


def torchrun_flags(job: PyTorchTrainingJob, replica_type: str, rank: int) -> list[tuple[str, str]]:
    """The controller's torchrun flags (name, value), in command-line order, before extraOptions replace any."""
    config = job.spec.torchrun_config
    if job.spec.elastic_active:
        low, high = job.spec.bounds()
        nnodes = f"{low}:{high}"
    else:
        nnodes = str(job.spec.world_size())
    flags = [("nnodes", nnodes), ("nproc_per_node", config.proc_per_node),
             ("rdzv_backend", str(config.rdzv_backend)),
             ("rdzv_endpoint", f"{master_addr(job)}:{master_port(job)}"), ("rdzv_id", job.uid)]
    if config.max_restarts is not None:
        flags.append(("max_restarts", str(config.max_restarts)))
    return flags


def _flag_name(option: str) -> str | None:
    if not option.startswith("--"):
        return None
    return option[2:].split("=", 1)[0].replace("-", "_")


def extra_option_values(options: list[str]) -> dict[str, str | None]:
    """The flags extraOptions sets (`--x=v` or `--x v`), by name spelt with `_`."""
    found: dict[str, str | None] = {}
    for index, option in enumerate(options):
        name = _flag_name(option)
        if name is None:
            continue
        if "=" in option:
            found[name] = option.split("=", 1)[1]
        else:
            following = options[index + 1] if index + 1 < len(options) else None
            found[name] = following if following is not None and not following.startswith("-") else None
    return found


def torchrun_args(job: PyTorchTrainingJob, replica_type: str, rank: int, script_args: list[str]) -> list[str]:
    """torchrun's arguments: the controller's flags not replaced by extraOptions, extraOptions, the script."""
    extra = list(job.spec.torchrun_config.extra_options)
    replaced = set(extra_option_values(extra))
    own = [f"--{name}={value}" for name, value in torchrun_flags(job, replica_type, rank) if name not in replaced]
    return [*own, *extra, *script_args]


def pet_env(job: PyTorchTrainingJob, replica_type: str, rank: int) -> list[tuple[str, str]]:
    """The PET_* defaults, equal to the command line (a flag of extraOptions included: `--master_addr` too)."""
    values = {"master_addr": master_addr(job), "master_port": str(master_port(job)),
              "node_rank": str(job.spec.global_rank(replica_type, rank)),
              **dict(torchrun_flags(job, replica_type, rank))}
    values.update({k: v for k, v in extra_option_values(list(job.spec.torchrun_config.extra_options)).items()
                   if v is not None})
    env = [("PET_NNODES", values["nnodes"]), ("PET_NPROC_PER_NODE", values["nproc_per_node"])]
    if not job.spec.elastic_active:
        env.append(("PET_NODE_RANK", values["node_rank"]))
    env += [("PET_MASTER_ADDR", values["master_addr"]), ("PET_MASTER_PORT", values["master_port"]),
            ("PET_RDZV_BACKEND", values["rdzv_backend"]), ("PET_RDZV_ENDPOINT", values["rdzv_endpoint"]),
            ("PET_RDZV_ID", values["rdzv_id"])]
    if "max_restarts" in values:
        env.append(("PET_MAX_RESTARTS", values["max_restarts"]))
    return env


def environment(job: PyTorchTrainingJob, replica_type: str, rank: int) -> list[tuple[str, str]]:
    env = [("MASTER_ADDR", master_addr(job)), ("MASTER_PORT", str(master_port(job))), ("PYTHONUNBUFFERED", "1")]
    if job.spec.torchrun:
        return env + pet_env(job, replica_type, rank)
    return [*env, ("WORLD_SIZE", str(job.spec.world_size())), ("RANK", str(job.spec.global_rank(replica_type, rank)))]
