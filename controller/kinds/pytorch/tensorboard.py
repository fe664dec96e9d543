"""The TensorBoard of a PyTorchTrainingJob (`spec.tensorboardSpec`), as TensorFlowTrainingJob's: the same
platform API (`tensorstack.dev/v1beta1` TensorBoard, its minimal local CRD and status report), named like
the job and labelled as this kind's child."""

from __future__ import annotations

from controller.kinds.pytorch.models import API, PyTorchTrainingJob
from controller.kinds.tensorflow import tensorboard
from controller.kinds.tensorflow.tensorboard import DEPENDENT, RESOURCE, status

__all__ = ["DEPENDENT", "RESOURCE", "desired", "status"]


def desired(job: PyTorchTrainingJob) -> dict | None:
    """The TensorBoard the job asks for, or None without a tensorboardSpec."""
    return tensorboard.desired(job, API)
