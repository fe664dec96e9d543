"""PyTorchTrainingJob as the engine sees it: the `JobKind` that plugs it into controller/jobs.

What is its own: the API and labels; the success of the master (global rank 0) and the failure of any
replica for good (failure wins a tie); restart policies by type with ExitCode and one restart budget for the
job (the training kit's ReplicaRestart, judging the training container); the active deadline; the
environment and, in torchrun mode, the torchrun command line (environment.py); a headless Service per replica
on `pytorchjob-port`; elastic counts and the PodGroup's minimum in the parsed spec (models.py);
`tasks[].replicas[]`; the TensorBoard; a Warning when `elastic` is set without torchrun (status.elastic).
"""

from __future__ import annotations

from controller.jobs.children.pods import Override, apply_override
from controller.jobs.kind import Outcomes
from controller.jobs.schema.api import JobPhase, Outcome, Verdict
from controller.jobs.schema.validation import SpecError, invalid_spec_message
from controller.jobs.training.restart import ReplicaRestart
from controller.kinds.pytorch import crd, environment, tensorboard, validation
from controller.kinds.pytorch.models import API, PyTorchTrainingJob
from controller.kinds.pytorch.status import PyTorchStatus


class PyTorchKind:
    api = API
    status = PyTorchStatus()
    dependent_resources = (tensorboard.DEPENDENT,)

    def parse(self, obj: dict) -> PyTorchTrainingJob | list[SpecError]:
        return validation.parse_and_validate(obj)

    def update_problems(self, old: dict, new: dict) -> list[SpecError]:
        """What an edit may not change beyond what the parse checks (the admission webhook's update rule)."""
        return validation.elastic_bounds_changed(old, new)

    def invalid_spec_message(self, problems: list[SpecError]) -> str:
        return invalid_spec_message(problems)

    def crd(self) -> dict:
        return crd.pytorch_crd()

    def restart_rule(self, job: PyTorchTrainingJob, replica_type: str) -> ReplicaRestart:
        spec = job.spec.replica(replica_type)
        return ReplicaRestart(spec.restart_policy, job.spec.run_policy.backoff_limit,
                              environment.training_container_name(spec.template))

    def verdict(self, job: PyTorchTrainingJob, outcomes: Outcomes) -> Verdict | None:
        failed = sorted((key for key, outcome in outcomes.items() if outcome == Outcome.FAILED),
                        key=lambda key: job.spec.global_rank(*key))
        if failed:  # failure wins a tie
            replica_type, rank = failed[0]
            return Verdict(JobPhase.FAILED, failed[0], f"Replica {job.name}-{replica_type}-{rank} has failed.",
                           replicas=tuple(failed))
        master = job.spec.master()
        if master is not None and outcomes.get(master) == Outcome.SUCCEEDED:
            return Verdict(JobPhase.SUCCEEDED, master, f"The master replica {job.name}-{master[0]}-{master[1]} "
                           "has succeeded.")
        return None

    def active_deadline(self, job: PyTorchTrainingJob) -> float | None:
        return job.spec.run_policy.active_deadline_seconds

    def decorate_pod(self, job: PyTorchTrainingJob, replica_type: str, rank: int, index: int, pod_spec: dict,
                     override: Override | None) -> None:
        training = environment.training_container(pod_spec)
        if job.spec.torchrun and not job.spec.run_mode.debugging and training is not None:
            # torchrun runs the training container's args (a resume's args replace them; its command is ignored)
            script = override.args if override is not None and override.args is not None else training.get("args")
            others = [c for c in pod_spec.get("containers") or () if c is not training]
            apply_override(override, {"containers": others})
            if override is not None and override.skip_init_containers:
                pod_spec.pop("initContainers", None)
            training["command"] = ["torchrun"]
            training["args"] = environment.torchrun_args(job, replica_type, rank, list(script or ()))
        else:
            apply_override(override, pod_spec)
        environment.set_env(pod_spec, environment.environment(job, replica_type, rank))

    def dependents(self, job: PyTorchTrainingJob) -> dict:
        board = tensorboard.desired(job)
        return {} if board is None else {tensorboard.RESOURCE: board}

    def dependent_status(self, job: PyTorchTrainingJob, observed, actions) -> dict:
        reported = {}
        board = tensorboard.status(job, observed.get(tensorboard.RESOURCE), actions.get(tensorboard.RESOURCE, "NOP"))
        if board is not None:
            reported["tensorboard"] = board
        if job.spec.elastic_ignored:
            reported["elastic"] = {"type": "Warning", "reason": "ElasticIgnored",
                                   "note": "spec.elastic is ignored: elastic training needs torchrun "
                                           "(spec.torchrunConfig.enabled)"}
        return reported

    def service_ports(self, job: PyTorchTrainingJob, replica_type: str = "") -> list[dict] | None:
        spec = job.spec.replica(replica_type)
        port = environment.port((spec.template.get("spec") or {}) if spec is not None else {})
        return [{"name": environment.PORT_NAME, "port": port, "targetPort": port, "protocol": "TCP"}]


PYTORCH = PyTorchKind()
