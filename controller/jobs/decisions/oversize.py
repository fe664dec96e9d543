"""A job whose status the API server will not store (its object over etcd's 1.5 MiB, or the request over the
apiserver's 3 MiB): it ends Failed with reason StatusTooLarge and a compact status, never a retry loop.

The compact status is the plan's status without the per-replica records (the part that grows with the
replicas): the counts by phase, the restart total, the times and the conditions stay, and the Failed condition
says why. Once a job has failed so, no reconcile rebuilds its records: the reconciler plans it as a job it
cannot run (plan_invalid with this reason), which deletes its unfinished pods and keeps the status as written.

A spec so large that even the compact status does not fit gets smaller ones, in turn (`fallbacks`): one
Failed condition with a short message, then the phase and reason alone. The Warning event is recorded for
the status that was stored, so it never says Failed of a job whose phase the server did not take; only a job
whose spec leaves no room for `{"phase": "Failed"}` itself is left as it is, with a Warning that says so.
"""

from __future__ import annotations

from controller.jobs.decisions import edits
from controller.jobs.decisions.job_conditions import FAILED, RUNNING, find_condition, finished_conditions, set_condition
from controller.jobs.kind import StatusCodec
from controller.jobs.schema.api import JobPhase

STATUS_TOO_LARGE = "StatusTooLarge"
COUNT_FIELDS = frozenset({"aggregate", "readyReplicas", "ready", "backoffCount"})


def failed_too_large(status: dict) -> bool:
    """The job has already failed because its status was too large (the smallest fallback has no condition)."""
    if status.get("phase") == str(JobPhase.FAILED) and status.get("reason") == STATUS_TOO_LARGE:
        return True
    failed = find_condition(status.get("conditions") or (), FAILED)
    return bool(failed and failed.get("status") == "True" and failed.get("reason") == STATUS_TOO_LARGE)


def message(replicas: int, server_message: str) -> str:
    return (f"The job's status, with a record for each of its {replicas} replicas, is too large for the API server "
            f"({server_message}): the job is Failed and its replica records are dropped.")


def compact_status(codec: StatusCodec, planned: dict, text: str, now: str) -> dict:
    """The planned status, Failed with reason StatusTooLarge, without the records that made it too large."""
    # The records of ranks scaled away go too (their restarts stay counted in backoffCount).
    record_fields = (set(codec.replica_fields([])) - COUNT_FIELDS) | {edits.REMOVED}
    kept = {key: value for key, value in planned.items() if key not in record_fields}
    conditions = set_condition(kept.get("conditions") or [], RUNNING, False, "Failed",
                               "The job has finished.", now)
    conditions = finished_conditions(conditions, succeeded=False, reason=STATUS_TOO_LARGE, message=text, now=now)
    return {**kept, "phase": str(JobPhase.FAILED), "conditions": conditions, "completionTime": now,
            "reason": STATUS_TOO_LARGE}


def replica_count(codec: StatusCodec, planned: dict) -> int:
    return sum(len(records) for _, records in codec.stored_types(planned))


def fallbacks(codec: StatusCodec, planned: dict, server_message: str, now: str,
              generation: int | None) -> list[tuple[str, dict]]:
    """(the Warning's message, the status) to write in turn until the server takes one: the compact status,
    then a Failed condition alone, then the phase and reason alone (a spec that leaves almost no room)."""
    text = message(replica_count(codec, planned), server_message)
    short = f"Even a status without replica records is too large for the API server ({server_message}): the job " \
            f"is Failed."
    condition = {"type": FAILED, "status": "True", "reason": STATUS_TOO_LARGE, "message": short,
                 "lastTransitionTime": now}
    bare = f"{short} Its spec leaves no room for a condition: only the phase and reason are stored."
    failed = {"phase": str(JobPhase.FAILED), "reason": STATUS_TOO_LARGE}
    return [(text, {**compact_status(codec, planned, text, now), "observedGeneration": generation}),
            (short, {**failed, "conditions": [condition], "completionTime": now, "observedGeneration": generation}),
            (bare, failed)]


def nothing_fits(server_message: str) -> str:
    """The Warning for a job whose spec leaves no room even for its phase: it is left as it is."""
    return (f"Not even a status of phase Failed fits in the API server next to the job's spec ({server_message}): "
            f"the job is left as it is, with no phase.")
