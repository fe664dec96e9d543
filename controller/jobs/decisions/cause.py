"""Why a job failed, said on the job itself: the Failed condition's reason and the cause its message adds.

A kind's verdict names the rule that was met in its own words (`The job is failed with rule: {"worker": [1]}`,
`Replica x-worker-1 has failed.`) and the replicas that failed for
good (`Verdict.replicas`, the first to name first). This module adds, after a colon, what the user needs to
act: the first of those replicas, its container's exit code and reason (`OOMKilled`, `Error`, from the pod's
container state) or the pod's reason when no container exited (`Evicted`), the restart limit or budget that
ran out (the kind's `RestartRule.why_final`), and how many more replicas failed with it:

    The job is failed with rule: {"worker": [1]}: replica worker-1 failed with exit code 137 (OOMKilled)
    after 2 of 2 restarts

A container that could not start at all (a command not found) is said with the runtime's message, condensed
(start_errors.py), since its exit code 128 tells nothing:

    ... replica worker-0 failed with exit code 128 (StartError: exec: "train": executable file not found in $PATH)

The reason says which way the job failed: `BackoffLimitExceeded` when the replica's restart limit (or the
job's backoffLimit) ran out, as batch/v1 Job says it, else `ReplicaFailed` (its restart policy does not
replace it, or grants no restart at all: limit 0 is no limit that "ran out"). The counts are what they say:
the replica's own restarts against its own limit, the job's (backoffCount, ranks scaled away included)
against backoffLimit; and a pod someone deleted is said "deleted", not by its SIGTERM's exit code 143.
A verdict that carries its own reason (DeadlineExceeded) is left as it is; InvalidSpec and StatusTooLarge
are decided elsewhere (plan.plan_invalid).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from controller.jobs.decisions import start_errors
from controller.jobs.decisions.pod_state import is_terminating
from controller.jobs.decisions.restart import Observation, Seen, will_count
from controller.jobs.schema.api import JobPhase, Outcome, Verdict

REPLICA_FAILED = "ReplicaFailed"
BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"


def explained(verdict: Verdict, observations: Sequence[Observation]) -> Verdict:
    """The verdict with its reason and the cause added to its message (a failure by its replicas only)."""
    if verdict.phase != JobPhase.FAILED or verdict.reason:
        return verdict
    by_key = {(o.slot.type, o.slot.rank): o for o in observations}
    failed = [by_key[key] for key in verdict.replicas if key in by_key and by_key[key].outcome == Outcome.FAILED]
    if not failed:
        return replace(verdict, reason=REPLICA_FAILED)
    first = failed[0]
    # The job's restarts, as backoffCount will say them: those recorded (ranks scaled away included), and those
    # granted in this same reconcile (observe_all numbers them in order): two replicas failing at once under a
    # budget of one fail the job "after 1 of 1 restarts".
    last = observations[-1]
    job_restarts = last.job_restarts + will_count(last)
    exhausted, limit = first.slot.policy.why_final(first.record.restart_count, first.record.containers, job_restarts)
    text = f"replica {first.slot.type}-{first.slot.rank} failed {how(first)} {limit}"
    if len(failed) > 1:
        more = len(failed) - 1
        text += f", and {more} more replica{'s' if more > 1 else ''} failed"
    return replace(verdict, reason=BACKOFF_LIMIT_EXCEEDED if exhausted else REPLICA_FAILED,
                   message=f"{verdict.message.rstrip('.')}: {text}")


def how(obs: Observation) -> str:
    """`with exit code 137 (OOMKilled)`, `with exit code 137 (Error, Evicted)` (the container's reason, then the
    pod's), `without an exit code (Evicted)`, or the pod's loss."""
    pod = obs.slot.pod if obs.slot.pod is not None and obs.seen == Seen.CURRENT else None
    if pod is not None and is_terminating(pod):
        # Deleted by someone (the controller retires what it deletes): the SIGTERM's exit code 143 is not why.
        return "because its pod was deleted"
    exited = [c for c in obs.record.containers if c.get("state") == "terminated" and c.get("exitCode") is not None]
    container = next((c for c in exited if c.get("exitCode") != 0), exited[0] if exited else None)
    pod_reason = str(((pod or {}).get("status") or {}).get("reason") or "")
    if container is not None:
        reasons = ", ".join(r for r in (_terminated_reason(pod, container.get("name")), pod_reason) if r)
        return f"with exit code {container['exitCode']}" + (f" ({reasons})" if reasons else "")
    # A container that never started (CreateContainerError...) on a pod failed for another reason (its deadline).
    reasons = ", ".join(r for r in (start_errors.waiting_start(pod), pod_reason) if r)
    if reasons:
        return f"without an exit code ({reasons})"
    if obs.seen == Seen.GONE:
        return "without an exit code (its pod was lost: deleted, or its node gone)"
    return "without an exit code"


def _terminated_reason(pod: dict | None, name: str | None) -> str:
    """The container's reason (`OOMKilled`), with the runtime's message when it could not start at all."""
    state = start_errors.container_state(pod, name)
    return start_errors.said(state) or str((state.get("terminated") or {}).get("reason") or "")
