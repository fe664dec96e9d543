"""Where a PyTorchTrainingJob keeps its replicas in its status (the kind's `StatusCodec`): the kit's per-type
codec with each type's records under `tasks[].replicas[]` (the path of T9k's manual,
`{.status.tasks[0].replicas[0].name}`; the older reference's `replicaStatus` is not used)."""

from __future__ import annotations

from controller.jobs.training.status import TasksStatus

RECORDS = "replicas"


class PyTorchStatus(TasksStatus):
    def __init__(self) -> None:
        super().__init__(RECORDS)
