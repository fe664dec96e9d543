"""PyTorchTrainingJob as the engine sees it: the training kit's `TrainingKind` with what is its own.

Its own: the API and labels (models.py); the master (global rank 0) and failures named in global rank order;
one `master` replica at most, elastic bounds (validation.py), immutable once set (`update_problems`); the
environment and, in torchrun mode, the torchrun command line (environment.py), on the training container
(`pytorch`, `python`, else the first) whose port named `pytorchjob-port` (else 23456) is each replica's
Service's; elastic counts (`replica_counts`, models.py's `counts`) and the PodGroup's minimum; the label
`tensorstack.dev/owner-name` on every pod; `tasks[].replicas[]`; a Warning when `elastic` is set without
torchrun (status.elastic). The rest is the kit's (controller/jobs/training/kind.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.resource import Resource
from controller.jobs.children.pods import Override, apply_override
from controller.jobs.decisions.status_codec import TasksStatus
from controller.jobs.schema.validation import SpecError
from controller.jobs.training.kind import TrainingKind
from controller.kinds.pytorch import crd, environment, validation
from controller.kinds.pytorch.models import API, OWNER_NAME_LABEL, PyTorchTrainingJob


class PyTorchKind(TrainingKind[PyTorchTrainingJob]):
    api = API
    model = PyTorchTrainingJob
    status = TasksStatus("replicas")  # the path of T9k's manual, `{.status.tasks[0].replicas[0].name}`
    container_names = environment.CONTAINER_NAMES
    any_container = True
    port_name = environment.PORT_NAME
    default_port = environment.DEFAULT_PORT

    def validate(self, job: PyTorchTrainingJob) -> list[SpecError]:
        return validation.validate(job)

    def update_problems(self, old: dict, new: dict) -> list[SpecError]:
        return validation.elastic_bounds_changed(old, new)

    def rank_order(self, job: PyTorchTrainingJob, replica: tuple[str, int]) -> Any:
        return job.spec.global_rank(*replica)

    def replica_counts(self, job: PyTorchTrainingJob) -> dict[str, int]:
        return dict(job.spec.counts())

    def min_member(self, job: PyTorchTrainingJob) -> int | None:
        return job.spec.min_member()

    def template_labels(self, job: PyTorchTrainingJob, replica_type: str) -> Mapping[str, str]:
        return {OWNER_NAME_LABEL: job.name}  # T9k's tutorials select a job's pods on it

    def crd(self) -> dict:
        return crd.pytorch_crd()

    def decorate_pod(self, job: PyTorchTrainingJob, replica_type: str, rank: int, index: int, pod_spec: dict,
                     override: Override | None) -> None:
        training = self.training_container(pod_spec)
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
        self.set_env(pod_spec, environment.environment(job, replica_type, rank), every_container=True)

    def dependent_status(self, job: PyTorchTrainingJob, observed: Mapping[Resource, list[dict] | None],
                         actions: Mapping[Resource, str]) -> dict:
        reported = super().dependent_status(job, observed, actions)
        if job.spec.elastic_ignored:
            reported["elastic"] = {"type": "Warning", "reason": "ElasticIgnored",
                                   "note": "spec.elastic is ignored: elastic training needs torchrun "
                                           "(spec.torchrunConfig.enabled)"}
        return reported


PYTORCH = PyTorchKind()
