"""Clean-up once the job has finished: which pods to delete, and what the replica records say.

`None` leaves every pod; `Unfinished` deletes the pods that have not finished (Pending, Running,
Unknown); `All` deletes every pod. Replicas whose pod was deleted, or is gone for any other reason,
show phase Deleted. A finished job never creates or replaces a pod, so nothing here counts restarts.
Settling is idempotent: once the deletes are done (pods terminating or gone), it asks for nothing
and changes nothing. The policy is the one the job finished with (`status.cleanUpPolicy`, written as it
finished): terminal is final, and an edit of the spec afterwards changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from controller.jobs.decisions.pod_state import is_terminating, pod_phase, pod_uid
from controller.jobs.decisions.replica_records import CREATING, DELETED, FINISHED, Replica, observed
from controller.jobs.kind import ParsedJob
from controller.jobs.schema.api import TERMINAL_PHASES, CleanUpPolicy

FINISHED_POLICY = "cleanUpPolicy"  # the status field: the clean-up policy in force once the job has finished
DEADLINE_EXCEEDED = "DeadlineExceeded"  # the reason of a job failed by its deadline (plan.DEADLINE_EXCEEDED)


def finished_policy(job: ParsedJob, status: Mapping) -> CleanUpPolicy:
    """The clean-up policy in force: the spec's, edits of a finished job included; but a job failed by its
    deadline stops, so its None counts as Unfinished (its running pods are deleted, as when it failed)."""
    policy = job.spec.clean_up_policy
    if policy == CleanUpPolicy.NONE and status.get("phase") in TERMINAL_PHASES and \
            status.get("reason") == DEADLINE_EXCEEDED:
        return CleanUpPolicy.UNFINISHED
    return policy


def stored_policy(status: Mapping) -> CleanUpPolicy | None:
    """The policy a finished job's last status recorded (None: not recorded, by an older controller)."""
    stored = status.get(FINISHED_POLICY)
    return CleanUpPolicy(stored) if isinstance(stored, str) and stored in CleanUpPolicy.__members__.values() else None


@dataclass(slots=True)  # never changed once made; not frozen: a frozen init costs twice as much
class Settled:
    record: Replica  # the record to store
    delete: str | None  # uid of the pod to delete
    cleaned: bool  # this plan deletes the replica's own pod: worth a SuccessfulDelete event


def selects(policy: CleanUpPolicy, pod: dict) -> bool:
    if policy == CleanUpPolicy.ALL:
        return True
    if policy == CleanUpPolicy.UNFINISHED:
        return pod_phase(pod) not in FINISHED
    return False


def settle(policy: CleanUpPolicy, record: Replica, pod: dict | None, create_pending: bool = False) -> Settled:
    """The clean-up of one replica of a finished job, given its stored record, the pod seen, and
    whether that pod's create was sent but the cache does not show it yet."""
    if pod is None:
        if create_pending and record.phase == CREATING and not record.uid:
            # Created just before the job ended and not in the cache yet: not gone, only unseen. Once it
            # shows, the policy decides (a pod that already failed stays and is reported Failed).
            return Settled(record, None, False)
        return Settled(record.in_phase(DELETED), None, False)
    uid = pod_uid(pod)
    delete = uid if selects(policy, pod) and not is_terminating(pod) else None
    if uid == record.last_restart_uid and uid != record.uid:
        # A pod retired before the job finished that is no longer the replica's own: the policy
        # decides its fate, and the record keeps describing the replica (no pod of its own: Deleted).
        return Settled(record if record.uid else record.in_phase(DELETED), delete, False)
    if record.phase == DELETED and uid == record.uid == record.last_restart_uid:
        # Retired and deleted by the controller (a rank scaled away, a pause, a debug switch) and still seen
        # (terminating, or the cache lags, or the controller stopped between the status write and the delete):
        # no longer the replica's, so its record stays Deleted whatever the pod reports, and its delete is
        # repeated whatever the policy (None keeps the job's pods, and this one is no pod of the finished job).
        return Settled(record, None if is_terminating(pod) else uid, False)
    if record.phase == DELETED and record.uid == uid and (policy != CleanUpPolicy.NONE or is_terminating(pod)):
        if delete is None and not is_terminating(pod):
            # Its delete never went through (refused, or the controller stopped first) and the pod has since
            # finished, which the policy keeps (Unfinished): it stays, and the record describes it again.
            return Settled(observed(record, pod), None, False)
        # Deleted by an earlier clean-up and still seen (terminating, or the cache lags): keep it
        # Deleted, whatever phase the dying pod reports (and whatever policy an edit has put in force
        # since), and repeat the delete only if it did not start.
        return Settled(record, delete, False)
    current = observed(record, pod)
    if not selects(policy, pod):
        return Settled(current, None, False)
    return Settled(current.in_phase(DELETED), delete, delete is not None)
