"""Pydantic models of the MPIJob API (batch.tensorstack.dev/v1beta1; the spec's section "MPIJob", from Kubeflow's
MPIJob v2beta1 in our conventions): one `launcher` and a `worker` type of `replicas` (each a template and a
restartPolicy, Never or OnFailure), `slotsPerWorker`, `mpiImplementation`, `launcherCreationPolicy`,
`runLauncherAsWorker`, `sshAuthMountPath`, and as the training kinds `runPolicy` (backoffLimit 3 by default), `runMode`
and `scheduler`.

The engine reads replicas by type (controller/jobs/kind.py, ParsedJob): `spec.replica_specs` makes the launcher
(always one) and the workers such replicas, in that order.
"""

from __future__ import annotations

import functools
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field

from controller.jobs.kind import KindApi
from controller.jobs.schema.api import MAX_TOTAL_REPLICAS, JobObject, Model, RunMode, SchedulePolicy
from controller.jobs.training.restart import RestartPolicyType
from controller.jobs.training.runpolicy import RunPolicy, TrainingSpec

GROUP = "batch.tensorstack.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "MPIJob"
PLURAL = "mpijobs"
SHORT_NAME = "mj"
API = KindApi(GROUP, VERSION, KIND, PLURAL, label_prefix="mpijob.batch.tensorstack.dev")
LAUNCHER, WORKER = "launcher", "worker"
DEFAULT_BACKOFF_LIMIT = 3
DEFAULT_SSH_PATH = "/root/.ssh"
PATH_MAX = 4096


class RestartPolicy(StrEnum):
    NEVER = "Never"
    ON_FAILURE = "OnFailure"


class MPIImplementation(StrEnum):
    OPEN_MPI = "OpenMPI"
    MPICH = "MPICH"
    INTEL = "Intel"


class LauncherCreationPolicy(StrEnum):
    WAIT_FOR_WORKERS_READY = "WaitForWorkersReady"
    AT_STARTUP = "AtStartup"


class LauncherSpec(Model):
    template: dict[str, Any] = Field(description="The launcher's pod (it runs mpirun); its restartPolicy is the "
                                                 "controller's.")
    restart_policy: RestartPolicy = Field(RestartPolicy.ON_FAILURE, description=(
        "When a failed launcher is made again: OnFailure (default, counted against runPolicy.backoffLimit) or "
        "Never."))


class WorkerSpec(Model):
    replicas: Annotated[int, Field(ge=1, le=MAX_TOTAL_REPLICAS - 1)] = Field(1, description=(
        "The workers (at least one; with the launcher, at most the cap of replicas of a job)."))
    template: dict[str, Any] = Field(description="The pod of each worker (it runs sshd); its restartPolicy is the "
                                                 "controller's.")
    restart_policy: RestartPolicy = Field(RestartPolicy.ON_FAILURE, description=(
        "When a failed worker is replaced, with the launcher (a group restart, counted once): OnFailure (default) "
        "or Never."))


class MPIRunPolicy(RunPolicy):
    backoff_limit: Annotated[int, Field(ge=0)] | None = Field(DEFAULT_BACKOFF_LIMIT, description=(
        "Restarts of the job (a group restart counts one) before a failure fails it; 3 by default."))


class Replica(Model):
    """A replica type as the engine reads it: the launcher or the workers."""

    type: str
    replicas: int
    template: dict[str, Any]
    restart_policy: RestartPolicyType


class MPIJobSpec(TrainingSpec):
    launcher: LauncherSpec = Field(description="The launcher: one pod that runs mpirun over the workers.")
    worker: WorkerSpec = Field(description="The workers, reached by the launcher over SSH.")
    slots_per_worker: Annotated[int, Field(ge=1, le=1024)] = Field(1, description=(
        "Processes per worker (the hostfile's slots)."))
    mpi_implementation: MPIImplementation = Field(MPIImplementation.OPEN_MPI, description=(
        "The MPI of the images, for the hostfile's format and the launcher's environment: OpenMPI (default), "
        "MPICH or Intel."))
    launcher_creation_policy: LauncherCreationPolicy = Field(
        LauncherCreationPolicy.WAIT_FOR_WORKERS_READY, description=(
            "WaitForWorkersReady (default): the launcher is made once every worker is Running and Ready; AtStartup: "
        "with the workers."))
    run_launcher_as_worker: bool = Field(False, description=(
        "The launcher runs MPI processes too: it is the hostfile's first host."))
    ssh_auth_mount_path: Annotated[str, Field(pattern=r"^/", max_length=PATH_MAX)] = Field(
        DEFAULT_SSH_PATH, description=(
            "Where the job's SSH keys are mounted in every pod."))
    run_policy: MPIRunPolicy = Field(default_factory=MPIRunPolicy, description="Deadline, restart budget and clean-up.")
    scheduler: SchedulePolicy | None = Field(None, description="The scheduler that dispatches the pods.")
    run_mode: RunMode = Field(default_factory=RunMode, description="Debug or pause the job.")

    @property
    def tensorboard_spec(self) -> None:
        return None  # (an MPIJob has no TensorBoard)

    @functools.cached_property
    def replica_specs(self) -> list[Replica]:  # (asked for every reconcile: made once per parsed job)
        return [Replica(type=LAUNCHER, replicas=1, template=self.launcher.template,
                        restart_policy=RestartPolicyType(self.launcher.restart_policy)),
                Replica(type=WORKER, replicas=self.worker.replicas, template=self.worker.template,
                        restart_policy=RestartPolicyType(self.worker.restart_policy))]

    def replica(self, replica_type: str) -> Replica | None:
        return next((r for r in self.replica_specs if r.type == replica_type), None)

    def master(self) -> tuple[str, int] | None:
        """The launcher judges the job."""
        return LAUNCHER, 0


class MPIJob(JobObject):
    """The parts of an MPIJob object the controller reads, parsed once per generation."""

    spec: MPIJobSpec
