"""Where a GenericJob keeps its replicas in its status (the kind's `StatusCodec`): the kit's per-type
codec (controller/jobs/training/status.py) with the records of each type under `replicas`.

    status.tasks[]: {type, restartCount, replicas: [{name, uid, phase, containers, restartCount,
                     lastRestartUid, ready}]}
"""

from __future__ import annotations

from controller.jobs.training.status import TasksStatus


class GenericJobStatus(TasksStatus):
    def __init__(self) -> None:
        super().__init__("replicas")


tasks = GenericJobStatus().tasks
