"""MPIJob as the engine sees it: the training kit's `TrainingKind` with what is its own (the spec's "MPIJob").

Its own: the API and model (models.py: a launcher and workers, not replicaSpecs, so parsing and the CRD are its
own); the launcher judges the job (the kit's verdict with the launcher as master, named first when several fail);
the start order (under WaitForWorkersReady the launcher waits until every worker is Ready) and the group restart
(a worker restarted takes the launcher with it, counted once); one headless Service named after the job, each pod's
`hostname` its name and `subdomain` the job's; the hostfile ConfigMap kept current and the SSH Secret made once
(environment.py), mounted; each MPI implementation's environment. The rest is the kit's: restarts by type against
runPolicy.backoffLimit, the deadline. No Services per replica and no TensorBoard.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from apimachinery.resource import Resource
from controller.jobs.children.pods import Override, apply_override
from controller.jobs.decisions.status_codec import TasksStatus
from controller.jobs.kind import NO_STATUS, Dependent, Outcomes
from controller.jobs.schema.api import JobPhase, Verdict
from controller.jobs.schema.naming import replica_name
from controller.jobs.schema.validation import (
    SpecError,
    name_errors,
    parse,
    run_mode_errors,
    template_errors,
)
from controller.jobs.training.kind import TrainingKind
from controller.jobs.training.restart import ReplicaRestart
from controller.kinds.mpi import crd, environment
from controller.kinds.mpi.models import API, LAUNCHER, WORKER, LauncherCreationPolicy, MPIJob

_FIELDS = {"spec.replicaSpecs[0]": "spec.launcher", "spec.replicaSpecs[1]": "spec.worker"}


class MPIRestart(ReplicaRestart):
    """The kit's rule, but a pod lost while running (deleted, evicted, its node gone) is a failure under every
    policy: under Never it is final (the spec's "Under Never, any failure is final"), where the other training
    kinds recreate it uncounted."""

    @property
    def counts_lost_pods(self) -> bool:
        return True


class MPIJobKind(TrainingKind[MPIJob]):
    api = API
    model = MPIJob
    status = TasksStatus("replicas")
    container_names = ()
    any_container = True  # (no exit code is judged: the restart policies are Never and OnFailure)
    port_name = "ssh"
    default_port = 22
    dependent_resources: tuple[Dependent, ...] = (environment.CONFIG, environment.SSH)
    restart_rule_type = MPIRestart

    def parse(self, obj: dict) -> MPIJob | list[SpecError]:
        job = parse(obj, MPIJob)
        if not isinstance(job, MPIJob):
            return job
        errors = [*name_errors(job, self.api, services=True), *template_errors(job), *run_mode_errors(job)]
        return list(dict.fromkeys(_spelt(e) for e in errors)) or job

    def crd(self) -> dict:
        return crd.mpijob_crd()

    def rank_order(self, job: MPIJob, replica: tuple[str, int]) -> Any:
        return replica[0] != LAUNCHER, replica[1]

    def verdict(self, job: MPIJob, outcomes: Outcomes) -> Verdict | None:
        verdict = super().verdict(job, outcomes)  # the kit's, the launcher as its master
        if verdict is not None and verdict.phase == JobPhase.SUCCEEDED:
            return dataclasses.replace(verdict, message=f"The launcher {job.name}-launcher-0 has succeeded.")
        return verdict

    def start_after(self, job: MPIJob) -> Mapping[str, tuple[str, ...]]:
        if job.spec.launcher_creation_policy == LauncherCreationPolicy.AT_STARTUP:
            return {}
        return {LAUNCHER: (WORKER,)}

    def restart_together(self, job: MPIJob) -> Mapping[str, tuple[str, ...]]:
        # A worker lost breaks mpirun in the launcher: the launcher goes too. A launcher failure restarts it alone.
        return {WORKER: (LAUNCHER,), LAUNCHER: ()}

    def subdomain_ports(self, job: MPIJob) -> list[dict] | None:
        return []  # headless, and no port: the Service gives names, SSH reaches the pods directly

    def service_ports(self, job: MPIJob, replica_type: str) -> list[dict] | None:
        return None

    def dependents(self, job: MPIJob, status: Mapping[str, Any] = NO_STATUS) -> dict[Resource, dict]:
        running = {name for name, record in self.status.stored_records(status).items()
                   if record.get("phase") == "Running"}
        return {environment.CONFIGMAPS: environment.config_map(job, self.api, running),
                environment.SECRETS: environment.ssh_secret(job, self.api)}

    def dependent_status(self, job: MPIJob, observed: Mapping[Resource, list[dict] | None],
                         actions: Mapping[Resource, str]) -> dict:
        return {}

    def decorate_pod(self, job: MPIJob, replica_type: str, rank: int, index: int, pod_spec: dict,
                     override: Override | None) -> None:
        pod_spec["hostname"] = replica_name(job.name, replica_type, rank)
        pod_spec["subdomain"] = job.name
        environment.mount(job, replica_type, pod_spec)
        apply_override(override, pod_spec)
        self.set_env(pod_spec, environment.environment(job, replica_type), every_container=True)


def _spelt(error: SpecError) -> SpecError:
    """An engine check's field as an MPIJob spells it (spec.replicaSpecs[1] is spec.worker)."""
    for engine, own in _FIELDS.items():
        if error.field.startswith(engine):
            return SpecError(own + error.field[len(engine):], error.message)
    return error


MPIJOB = MPIJobKind()
