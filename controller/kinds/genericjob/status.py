"""Where a GenericJob keeps its replicas in its status (the kind's `StatusCodec`).

    status.tasks[]: {type, restartCount, replicas: [{name, uid, phase, containers, restartCount,
                     lastRestartUid, ready}]}
    status.aggregate: replicas by phase;  status.readyReplicas, status.ready ("3/4"): replicas Running and Ready
    status.backoffCount: restarts of every replica
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.jobs.status import Replica, replica_counts


def tasks(records_by_type: Iterable[tuple[str, list[Replica]]]) -> list[dict]:
    return [{"type": replica_type, "restartCount": sum(r.restart_count for r in records),
             "replicas": [r.to_json() for r in records]} for replica_type, records in records_by_type]


class GenericJobStatus:
    def stored_records(self, status: Mapping) -> dict[str, dict]:
        """The stored replica records by pod name (a name says type and rank, and survives scaling)."""
        records = {}
        for task in status.get("tasks") or ():
            for raw in task.get("replicas") or ():
                if raw and raw.get("name"):
                    records[raw["name"]] = raw
        return records

    def stored_types(self, status: Mapping) -> list[tuple[str, list[dict]]]:
        return [(task.get("type") or "", list(task.get("replicas") or ())) for task in status.get("tasks") or ()]

    def replica_fields(self, records_by_type: Iterable[tuple[str, list[Replica]]]) -> dict:
        records_by_type = list(records_by_type)
        task_list = tasks(records_by_type)
        return {"tasks": task_list, **replica_counts([r for _, records in records_by_type for r in records]),
                "backoffCount": sum(t["restartCount"] for t in task_list)}
