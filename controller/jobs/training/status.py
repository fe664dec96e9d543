"""The per-type status codec (a kind's `StatusCodec`, controller/jobs/kind.py), with the name of the
key that holds each type's records as the kind's API spells it (`replicas`, `replicaStatus`):

    status.tasks[]: {type, restartCount, <records>: [{name, uid, phase, containers, restartCount,
                     lastRestartUid, ready}]}
    status.aggregate: replicas by phase;  status.readyReplicas, status.ready ("3/4"): replicas Running and Ready
    status.backoffCount: restarts of every replica
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.jobs.status import Replica, replica_counts


class TasksStatus:
    def __init__(self, records: str) -> None:
        self.records = records  # the key of a task's replica records

    def tasks(self, records_by_type: Iterable[tuple[str, list[Replica]]]) -> list[dict]:
        return [{"type": replica_type, "restartCount": sum(r.restart_count for r in records),
                 self.records: [r.to_json() for r in records]} for replica_type, records in records_by_type]

    def stored_records(self, status: Mapping) -> dict[str, dict]:
        """The stored replica records by pod name (a name says type and rank, and survives scaling)."""
        return {raw["name"]: raw for task in status.get("tasks") or () for raw in task.get(self.records) or ()
                if raw and raw.get("name")}

    def stored_types(self, status: Mapping) -> list[tuple[str, list[dict]]]:
        return [(task.get("type") or "", list(task.get(self.records) or ())) for task in status.get("tasks") or ()]

    def replica_fields(self, records_by_type: Iterable[tuple[str, list[Replica]]]) -> dict:
        records_by_type = list(records_by_type)
        task_list = self.tasks(records_by_type)
        return {"tasks": task_list, **replica_counts([r for _, records in records_by_type for r in records]),
                "backoffCount": sum(t["restartCount"] for t in task_list)}
