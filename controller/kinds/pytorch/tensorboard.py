"""The TensorBoard of a PyTorchTrainingJob (`spec.tensorboardSpec`), as TensorFlowTrainingJob's: the same
platform API (`tensorstack.dev/v1beta1` TensorBoard, its minimal local CRD and status report), named like
the job and labelled as this kind's child."""

from __future__ import annotations

from controller.jobs.naming import job_labels, owner_reference
from controller.kinds.pytorch.models import API, PyTorchTrainingJob
from controller.kinds.tensorflow.tensorboard import DEPENDENT, GROUP, KIND, RESOURCE, VERSION, status

__all__ = ["DEPENDENT", "RESOURCE", "desired", "status"]


def desired(job: PyTorchTrainingJob) -> dict | None:
    """The TensorBoard the job asks for, or None without a tensorboardSpec."""
    if job.spec.tensorboard_spec is None:
        return None
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": job.name, "namespace": job.namespace, "labels": job_labels(API, job.name, job.uid),
                     "ownerReferences": [owner_reference(API, job.name, job.uid)]},
        "spec": job.spec.tensorboard_spec.as_given(),
    }
