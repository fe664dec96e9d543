"""The whole status of a job, for every kind: `assemble` puts the records (where the kind's `StatusCodec` says), the
conditions, the phase and the times together; `TasksStatus` is the per-type codec most kinds use.

Every function here is pure and deterministic: given the same inputs it returns an equal dict, so a reconcile that
observes nothing new writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.jobs.decisions.replica_records import Replica, aggregate, replica_counts
from controller.jobs.kind import StatusCodec


def assemble(old: dict, codec: StatusCodec, *, phase: str, conditions: list[dict],
             records_by_type: list[tuple[str, list[Replica]]], start_time: str | None,
             completion_time: str | None, reason: str | None = None) -> dict:
    """The complete new status: the kind's replica fields (its codec says where they go) and the fields
    every kind has. Fields the controller's planning does not own (observedGeneration, written by the
    reconciler) are carried over from `old`, and so are those set once (`reason`, when the job finished)."""
    status = {**old, "phase": str(phase), "conditions": conditions, **codec.replica_fields(records_by_type)}
    for key, value in (("startTime", start_time), ("completionTime", completion_time), ("reason", reason)):
        if value is not None:
            status[key] = value
    return status


# --- the per-type codec ------------------------------------------------------------------------
# A kind's `StatusCodec`, with the name of the key that holds each type's records as the kind's API spells
# it (`replicas`, `replicaStatus`):
#
#     status.tasks[]: {type, restartCount, <records>: [{name, uid, phase, containers, restartCount,
#                      lastRestartUid, ready}]}
#     status.aggregate: replicas by phase;  status.readyReplicas, status.ready ("3/4"): replicas Running and Ready
#     status.backoffCount: restarts of every replica
#
# A rank scaled away keeps its record (the spec's "Removed ranks"): Deleted, marked `removed`, after the spec's
# ranks of its type, in a task of its own when its type left the spec altogether. It counts in `aggregate`
# (deleted) and in the restart counters, never in `ready`, which counts the spec's replicas.


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

    def with_removed(self, status: dict, removed: Mapping[str, list[Replica]], carried: Mapping[str, int]) -> dict:
        """`status` (made of the spec's replicas) with the records of ranks scaled away after their type's, and
        with the restarts of records dropped for size (`carried`): both in restartCount and backoffCount;
        the removed records in `aggregate` too."""
        tasks = [dict(task) for task in status.get("tasks") or ()]
        by_type = {task["type"]: task for task in tasks}
        for replica_type in [*removed, *carried]:
            if replica_type not in by_type:  # a type no longer in the spec: a task of its own, after the spec's
                by_type[replica_type] = {"type": replica_type, "restartCount": 0, self.records: []}
                tasks.append(by_type[replica_type])
        for replica_type, records in removed.items():
            task = by_type[replica_type]
            task[self.records] = [*(task.get(self.records) or ()),
                                  *({**r.to_json(), "removed": True} for r in records)]
            task["restartCount"] += sum(r.restart_count for r in records)
        for replica_type, count in carried.items():
            by_type[replica_type]["restartCount"] += count
        counts = dict(status.get("aggregate") or {})
        for key, value in aggregate(r for records in removed.values() for r in records).items():
            counts[key] = counts.get(key, 0) + value
        return {**status, "tasks": tasks, "aggregate": counts,
                "backoffCount": sum(task["restartCount"] for task in tasks)}
