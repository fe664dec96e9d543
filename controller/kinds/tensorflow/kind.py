"""TensorFlowTrainingJob as the engine sees it: the training kit's `TrainingKind` with what is its own.

Its own: the API and labels (models.py); the master (the chief, else worker 0) and failures named in (type,
rank) order; at most one chief and one evaluator, and a `tensorflow` container in every template
(validation.py); TF_CONFIG in every `tensorflow` container (tfconfig.py), whose port named `tfjob-port`
(else 2222) is each replica's Service's; `tasks[].replicaStatus`. The rest is the kit's
(controller/jobs/training/kind.py): restarts by type with ExitCode judging the `tensorflow` container, the
deadline, the TensorBoard.
"""

from __future__ import annotations

from controller.jobs.children.pods import Override, apply_override
from controller.jobs.decisions.status_codec import TasksStatus
from controller.jobs.schema.validation import SpecError
from controller.jobs.training.kind import TrainingKind
from controller.kinds.tensorflow import crd, tfconfig, validation
from controller.kinds.tensorflow.models import API, TensorFlowTrainingJob


class TensorFlowKind(TrainingKind[TensorFlowTrainingJob]):
    api = API
    model = TensorFlowTrainingJob
    status = TasksStatus("replicaStatus")  # 003's name of a task's records
    container_names = (tfconfig.CONTAINER,)
    port_name = tfconfig.PORT_NAME
    default_port = tfconfig.DEFAULT_PORT

    def validate(self, job: TensorFlowTrainingJob) -> list[SpecError]:
        return validation.validate(job)

    def crd(self) -> dict:
        return crd.tensorflow_crd()

    def decorate_pod(self, job: TensorFlowTrainingJob, replica_type: str, rank: int, index: int, pod_spec: dict,
                     override: Override | None) -> None:
        self.set_env(pod_spec, [(tfconfig.ENV, tfconfig.tf_config(self._cluster(job), replica_type, rank))])
        apply_override(override, pod_spec)

    def _cluster(self, job: TensorFlowTrainingJob) -> dict[str, list[str]]:
        return tfconfig.cluster(job.name, job.namespace, [
            (str(spec.type), spec.replicas, self.port(spec.template.get("spec") or {}))
            for spec in sorted(job.spec.replica_specs, key=lambda s: _TYPE_ORDER.get(s.type, 9))])


_TYPE_ORDER = {"chief": 0, "worker": 1, "ps": 2, "evaluator": 3}

TENSORFLOW = TensorFlowKind()
