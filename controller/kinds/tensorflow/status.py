"""Where a TensorFlowTrainingJob keeps its replicas in its status (the kind's `StatusCodec`): the kit's
per-type codec (controller/jobs/training/status.py), as GenericJob's, but with the records of each type
under `tasks[].replicaStatus` (003's name).

    status.tasks[]: {type, restartCount, replicaStatus: [{name, uid, phase, containers, restartCount, ...}]}
    status.backoffCount: restarts of every replica (runPolicy.backoffLimit)
"""

from __future__ import annotations

from controller.jobs.training.status import TasksStatus

RECORDS = "replicaStatus"


class TensorFlowStatus(TasksStatus):
    def __init__(self) -> None:
        super().__init__(RECORDS)
