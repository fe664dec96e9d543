"""Ranks scaled away: the deletes of pods of ranks or types no longer in the spec (`scaled_down`), their records
kept Deleted with what their pods came to (`judged_away`: a restart they used is never refunded), and those of a
job that ends in the same moment settled by its clean-up policy instead (`settle_leaving`)."""

from __future__ import annotations

from collections.abc import Collection, Container, Mapping

from controller.jobs.decisions import cleanup, edits, restart
from controller.jobs.decisions.actions import CLEANUP, SCALE_DOWN, DeletePod, Event, Plan, deleted_event
from controller.jobs.decisions.backoff import RestartBackoff
from controller.jobs.decisions.pod_state import is_terminating, pod_uid
from controller.jobs.decisions.replica_records import DELETED, Replica, observed
from controller.jobs.decisions.restart import Observation
from controller.jobs.kind import JobKind
from controller.jobs.schema.api import CleanUpPolicy


def scaled_down(strays: list[dict], kept: Container[str] = frozenset()) -> tuple[list[DeletePod], list[Event]]:
    """The deletes of pods of ranks or types no longer in the spec (but those of uids `kept`), and their Events."""
    delete = [DeletePod(p["metadata"]["name"], pod_uid(p), SCALE_DOWN) for p in strays
              if not is_terminating(p) and pod_uid(p) not in kept]
    return delete, [deleted_event(d.name) for d in delete]


def settle_leaving(policy: CleanUpPolicy, removed: edits.Removed,
                   pods: Mapping[str, dict | None]) -> tuple[edits.Removed, list[DeletePod], list[Event]]:
    """The clean-up of ranks scaled away in the moment their job ended, which keep their pods (`pods` by name):
    the scale-down that retired them does not take effect, so their records describe their pods again, and the
    policy settles them as the job's other replicas (a pod it keeps keeps its record's phase)."""
    by_type: dict[str, list[Replica]] = {}
    delete, events = [], []
    for replica_type, records in removed.by_type.items():
        settled_records = by_type.setdefault(replica_type, [])
        for record in records:
            pod = pods.get(record.name)
            if pod is None or is_terminating(pod):  # gone or going: the record stays as it was
                settled_records.append(record)
                continue
            settled = cleanup.settle(policy, observed(record, pod), pod)
            settled_records.append(settled.record)
            if settled.delete:
                delete.append(DeletePod(record.name, settled.delete, CLEANUP))
            if settled.cleaned:
                events.append(deleted_event(record.name))
    return edits.Removed(by_type, removed.carried), delete, events


def judged_away(removed: edits.Removed, leaving: list[Observation], now_epoch: float,
                backoff: RestartBackoff, *, counting: bool, together: Collection[str] = (),
                group_counted: bool = False) -> edits.Removed:
    """The records of ranks scaled away (Deleted, in their type's task), with what their pods came to as the
    scale-down was seen: a failure their policy replaces used a restart (counted, never refunded, though the rank
    is not recreated), unless the job ends (`counting` False: as for its other replicas, a failure seen as it ends
    is no restart), or it is one of a restart group (`together`, the kind's) whose restart this reconcile has
    counted already (`group_counted`: by a replica of the spec; restart.observe_all judged it so). A rank whose
    record was dropped for size keeps that restart in its type's count. No restart time is written: the record is
    retired at once, which clears it (`now_epoch` is read for the streak only)."""
    if not leaving:
        return removed
    judged = {}
    for o in leaving:
        record = o.record
        if counting and restart.will_count(o) and not (group_counted and o.slot.type in together):
            group_counted = group_counted or o.slot.type in together
            record = record.counted(streak=backoff.streak(record.restart_streak, o.slot.pod, now_epoch))
        judged[o.slot.name] = (o.slot.type, o.slot.record.restart_count, record.retired().in_phase(DELETED))
    by_type = {replica_type: [judged.pop(r.name)[2] if r.name in judged else r for r in records]
               for replica_type, records in removed.by_type.items()}
    carried = dict(removed.carried)
    for replica_type, stored_count, record in judged.values():  # (records not kept: their restarts are carried)
        if record.restart_count > stored_count:
            carried[replica_type] = carried.get(replica_type, 0) + record.restart_count - stored_count
    return edits.Removed(by_type, carried)


def with_removed(kind: JobKind, the_plan: Plan, removed: edits.Removed, kept_from: dict | None = None) -> Plan:
    """The plan's status with the records of ranks scaled away in their types' tasks. `kept_from`: the stored
    status of a finished job, whose counters never change (records settled without the spec keep them)."""
    status = edits.with_removed(kind, the_plan.status, removed)
    if kept_from is not None:
        status = edits.kept_counts(kept_from, status)
    return the_plan if status is the_plan.status else the_plan.but(status=status)
