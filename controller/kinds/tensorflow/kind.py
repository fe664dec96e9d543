"""TensorFlowTrainingJob as the engine sees it: the `JobKind` that plugs it into controller/jobs.

What is its own: the API and labels; the success of the master (the chief, else worker 0) and the
failure of any replica for good ("failure wins a tie"); restart policies by type with ExitCode and one
restart budget for the job (the training kit's ReplicaRestart, judging the `tensorflow` container); the
active deadline; TF_CONFIG in every `tensorflow` container; a headless Service per replica on the TensorFlow port;
`tasks[].replicaStatus`.
"""

from __future__ import annotations

from controller.jobs.children.pods import Override, apply_override
from controller.jobs.kind import Outcomes
from controller.jobs.schema.api import JobPhase, Outcome, Verdict
from controller.jobs.schema.validation import SpecError, invalid_spec_message
from controller.jobs.training.restart import ReplicaRestart
from controller.kinds.tensorflow import crd, tensorboard, tfconfig, validation
from controller.kinds.tensorflow.models import API, TensorFlowTrainingJob
from controller.kinds.tensorflow.status import TensorFlowStatus


class TensorFlowKind:
    api = API
    status = TensorFlowStatus()
    dependent_resources = (tensorboard.DEPENDENT,)

    def parse(self, obj: dict) -> TensorFlowTrainingJob | list[SpecError]:
        return validation.parse_and_validate(obj)

    def invalid_spec_message(self, problems: list[SpecError]) -> str:
        return invalid_spec_message(problems)

    def crd(self) -> dict:
        return crd.tensorflow_crd()

    def restart_rule(self, job: TensorFlowTrainingJob, replica_type: str) -> ReplicaRestart:
        spec = job.spec.replica(replica_type)
        return ReplicaRestart(spec.restart_policy, job.spec.run_policy.backoff_limit, tfconfig.CONTAINER)

    def verdict(self, job: TensorFlowTrainingJob, outcomes: Outcomes) -> Verdict | None:
        failed = sorted(key for key, outcome in outcomes.items() if outcome == Outcome.FAILED)
        if failed:  # failure wins a tie
            replica_type, rank = failed[0]
            return Verdict(JobPhase.FAILED, failed[0], f"Replica {job.name}-{replica_type}-{rank} has failed.",
                           replicas=tuple(failed))
        master = job.spec.master()
        if master is not None and outcomes.get(master) == Outcome.SUCCEEDED:
            return Verdict(JobPhase.SUCCEEDED, master, f"The master replica {job.name}-{master[0]}-{master[1]} "
                           "has succeeded.")
        if master is None and outcomes and all(o == Outcome.SUCCEEDED for o in outcomes.values()):
            return Verdict(JobPhase.SUCCEEDED, None, "Every replica has succeeded.")  # only ps or evaluators
        return None

    def active_deadline(self, job: TensorFlowTrainingJob) -> float | None:
        return job.spec.run_policy.active_deadline_seconds

    def decorate_pod(self, job: TensorFlowTrainingJob, replica_type: str, rank: int, index: int, pod_spec: dict,
                     override: Override | None) -> None:
        tfconfig.set_env(pod_spec, tfconfig.tf_config(self._cluster(job), replica_type, rank))
        apply_override(override, pod_spec)

    def dependents(self, job: TensorFlowTrainingJob) -> dict:
        board = tensorboard.desired(job)
        return {} if board is None else {tensorboard.RESOURCE: board}

    def dependent_status(self, job: TensorFlowTrainingJob, observed, actions) -> dict:
        reported = tensorboard.status(job, observed.get(tensorboard.RESOURCE),
                                      actions.get(tensorboard.RESOURCE, "NOP"))
        return {} if reported is None else {"tensorboard": reported}

    def service_ports(self, job: TensorFlowTrainingJob, replica_type: str = "") -> list[dict] | None:
        spec = job.spec.replica(replica_type)
        port = tfconfig.port((spec.template.get("spec") or {}) if spec is not None else {})
        return [{"name": tfconfig.PORT_NAME, "port": port, "targetPort": port, "protocol": "TCP"}]

    def _cluster(self, job: TensorFlowTrainingJob) -> dict[str, list[str]]:
        return tfconfig.cluster(job.name, job.namespace, [
            (str(spec.type), spec.replicas, tfconfig.port(spec.template.get("spec") or {}))
            for spec in sorted(job.spec.replica_specs, key=lambda s: _TYPE_ORDER.get(s.type, 9))])


_TYPE_ORDER = {"chief": 0, "worker": 1, "ps": 2, "evaluator": 3}

TENSORFLOW = TensorFlowKind()
