"""Where a TensorFlowTrainingJob keeps its replicas in its status (the kind's `StatusCodec`): as
GenericJob, but the per-type records are `tasks[].replicaStatus` (003's name).

    status.tasks[]: {type, restartCount, replicaStatus: [{name, uid, phase, containers, restartCount, ...}]}
    status.aggregate: replicas by phase;  status.readyReplicas, status.ready ("3/4"): replicas Running and Ready
    status.backoffCount: restarts of every replica (runPolicy.backoffLimit)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.jobs.status import Replica, replica_counts

RECORDS = "replicaStatus"


class TensorFlowStatus:
    def stored_records(self, status: Mapping) -> dict[str, dict]:
        return {raw["name"]: raw for task in status.get("tasks") or () for raw in task.get(RECORDS) or ()
                if raw and raw.get("name")}

    def stored_types(self, status: Mapping) -> list[tuple[str, list[dict]]]:
        return [(task.get("type") or "", list(task.get(RECORDS) or ())) for task in status.get("tasks") or ()]

    def replica_fields(self, records_by_type: Iterable[tuple[str, list[Replica]]]) -> dict:
        records_by_type = list(records_by_type)
        tasks = [{"type": replica_type, "restartCount": sum(r.restart_count for r in records),
                  RECORDS: [r.to_json() for r in records]} for replica_type, records in records_by_type]
        return {"tasks": tasks, **replica_counts([r for _, records in records_by_type for r in records]),
                "backoffCount": sum(t["restartCount"] for t in tasks)}
