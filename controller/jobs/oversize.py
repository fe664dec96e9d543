"""A job whose status the API server will not store (its object over etcd's 1.5 MiB, or the request over the
apiserver's 3 MiB): it ends Failed with reason StatusTooLarge and a compact status, never a retry loop.

The compact status is the plan's status without the per-replica records (the part that grows with the
replicas): the counts by phase, the restart total, the times and the conditions stay, and the Failed condition
says why. Once a job has failed so, no reconcile rebuilds its records: the reconciler plans it as a job it
cannot run (plan_invalid with this reason), which deletes its unfinished pods and keeps the status as written.
"""

from __future__ import annotations

from controller.jobs import edits
from controller.jobs import status as st
from controller.jobs.api import JobPhase
from controller.jobs.kind import StatusCodec

STATUS_TOO_LARGE = "StatusTooLarge"
COUNT_FIELDS = frozenset({"aggregate", "readyReplicas", "ready", "backoffCount"})


def failed_too_large(status: dict) -> bool:
    """The job has already failed because its status was too large."""
    failed = st.find_condition(status.get("conditions") or (), st.FAILED)
    return bool(failed and failed.get("status") == "True" and failed.get("reason") == STATUS_TOO_LARGE)


def message(replicas: int, server_message: str) -> str:
    return (f"The job's status, with a record for each of its {replicas} replicas, is too large for the API server "
            f"({server_message}): the job is Failed and its replica records are dropped.")


def compact_status(codec: StatusCodec, planned: dict, text: str, now: str) -> dict:
    """The planned status, Failed with reason StatusTooLarge, without the records that made it too large."""
    # The records of ranks scaled away go too (their restarts stay counted in backoffCount).
    record_fields = (set(codec.replica_fields([])) - COUNT_FIELDS) | {edits.REMOVED}
    kept = {key: value for key, value in planned.items() if key not in record_fields}
    conditions = st.set_condition(kept.get("conditions") or [], st.RUNNING, False, "Failed",
                                  "The job has finished.", now)
    conditions = st.finished_conditions(conditions, succeeded=False, reason=STATUS_TOO_LARGE, message=text, now=now)
    return {**kept, "phase": str(JobPhase.FAILED), "conditions": conditions, "completionTime": now,
            "reason": STATUS_TOO_LARGE}


def replica_count(codec: StatusCodec, planned: dict) -> int:
    return sum(len(records) for _, records in codec.stored_types(planned))
