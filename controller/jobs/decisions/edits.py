"""What users' edits of a live job change, for every kind (the spec's "Live jobs"): the records of ranks
scaled away (budgets are never refunded), the run mode pods were made in (debug on and off replace them, and
a debug pod's end decides nothing), and the templates the job last ran (an edit applies to new pods only,
and is announced once). Pure helpers of plan.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from controller.jobs.children.pods import pod_mode, template_hash
from controller.jobs.decisions.actions import DEBUG, NORMAL, Event
from controller.jobs.decisions.pod_state import is_terminating, pod_phase, pod_uid
from controller.jobs.decisions.replica_records import DELETED, FINISHED, Replica, read_record
from controller.jobs.decisions.restart import Observation, Seen
from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.schema.api import MAX_TOTAL_REPLICAS, Outcome

REMOVED = "removedReplicas"  # where an earlier version kept the ranks scaled away: read (and migrated), not written
# The records a status keeps at most, the spec's ranks and the ranks scaled away together: a status of this many
# fits in the API server (tests/controller/test_job_size.py). Past it, the records of ranks scaled away are dropped,
# those of pods still there last, and those that never restarted first; a dropped record's restarts stay counted
# in its type's restartCount (its rank, scaled back, would start from 0: the price of a bounded status).
MAX_RECORDS = MAX_TOTAL_REPLICAS


def removed_records(status: Mapping) -> dict[str, dict]:
    """The records of ranks scaled away an earlier version stored apart (status.removedReplicas), by pod name."""
    return {raw["name"]: raw for raw in status.get(REMOVED) or () if isinstance(raw, dict) and raw.get("name")}


@dataclass(frozen=True)
class Removed:
    """The ranks scaled away, as a status keeps them: their records by type (Deleted, each pod retired), and the
    restarts of records no longer kept (dropped for size), by type. Both count in the type's restartCount."""

    by_type: dict[str, list[Replica]] = field(default_factory=dict)
    carried: dict[str, int] = field(default_factory=dict)

    @property
    def restarts(self) -> int:
        return sum(r.restart_count for records in self.by_type.values() for r in records) + sum(self.carried.values())

    def __bool__(self) -> bool:
        return bool(self.by_type or self.carried)


NONE_REMOVED = Removed()


class Named(Protocol):
    """A replica by its pod name: a Slot, or a record standing for one."""

    @property
    def name(self) -> str: ...


def removed(kind: JobKind, job_name: str, old: dict, slots: Sequence[Named], pods: list[dict]) -> Removed:
    """Budgets are never refunded: the records of the ranks no longer in the spec (their restarts still count in
    backoffCount and against the job's budget, and come back with the rank if it is scaled up again; a rank
    scaled back before its old pod is gone waits for it, as for a pod it retired). Each is stored Deleted and
    retired: the rank's next pod is a new one, never a lost one. At most MAX_RECORDS records in all."""
    names = {slot.name for slot in slots}
    present = {pod["metadata"]["name"] for pod in pods}
    carried = stored_carried(kind, old)
    gone = {name: raw for name, raw in {**removed_records(old), **kind.status.stored_records(old)}.items()
            if name not in names}
    if not gone:
        return Removed({}, carried)  # (nothing scaled away: the common case)
    types = _stored_types(kind, job_name, old)
    by_name = {pod["metadata"]["name"]: pod for pod in pods}
    found = [(types[name], _retired(read_record(raw, name), by_name.get(name))) for name, raw in gone.items()]
    # Kept first: a pod still there, then records that restarted, then the lowest ranks (scaled back first).
    found.sort(key=lambda item: (item[1].name not in present, item[1].restart_count == 0, _rank(item[1].name),
                                 item[1].name))
    room = max(0, MAX_RECORDS - len(slots))
    by_type: dict[str, list[Replica]] = {}
    for replica_type, record in found[:room]:
        by_type.setdefault(replica_type, []).append(record)
    for replica_type, record in found[room:]:
        if record.restart_count:
            carried[replica_type] = carried.get(replica_type, 0) + record.restart_count
    for records in by_type.values():
        records.sort(key=lambda r: (_rank(r.name), r.name))
    return Removed(by_type, carried)


def _retired(record: Replica, pod: dict | None) -> Replica:
    """A removed rank's record, Deleted, its pod retired: the recorded one, or the pod still there when none was
    recorded (made before the cache showed it, the scale-down deletes it), so that a rank scaled back waits for that
    pod to go instead of adopting it (found by the model test: its end was judged as the new rank's)."""
    if pod is not None and not record.uid and not record.last_restart_uid:
        record = dataclasses.replace(record, uid=pod_uid(pod))
    return record.retired().in_phase(DELETED)


def stored_carried(kind: JobKind, old: Mapping) -> dict[str, int]:
    """The restarts each stored task counts beyond its records': those of records dropped for size."""
    counts = {str(task.get("type") or ""): int(task.get("restartCount") or 0) for task in old.get("tasks") or ()
              if isinstance(task, dict)}
    carried = {}
    for replica_type, raws in kind.status.stored_types(old):
        extra = counts.get(replica_type, 0) - sum(int(raw.get("restartCount") or 0) for raw in raws if raw)
        if extra > 0:
            carried[replica_type] = extra
    return carried


def _stored_types(kind: JobKind, job_name: str, old: Mapping) -> dict[str, str]:
    """The replica type of each stored record: its task's; for those stored apart, as its name says."""
    types = {raw["name"]: replica_type for replica_type, raws in kind.status.stored_types(old) for raw in raws
             if raw and raw.get("name")}
    for name in removed_records(old):
        types.setdefault(name, name.removeprefix(f"{job_name}-").rpartition("-")[0])
    return types


def _rank(name: str) -> int:
    rank = name.rpartition("-")[2]
    return int(rank) if rank.isdigit() else 0


def with_removed(kind: JobKind, status: dict, removed: Removed) -> dict:
    """The plan's status with the records of ranks scaled away under their types' tasks (no longer apart)."""
    if not removed and REMOVED not in status:
        return status  # (nothing scaled away: the common case, no copy)
    status = {key: value for key, value in status.items() if key != REMOVED}
    return kind.status.with_removed(status, removed.by_type, removed.carried) if removed else status


def described_records(kind: JobKind, old: Mapping, pods: list[dict],
                       describe: Callable[[Replica, dict | None], Replica]) -> dict:
    """The replica fields of a job planned without its spec (invalid, or held): the stored records, each as
    `describe(record, its pod or None)` says, with counters that never decrease (kept_counts). Empty when the job
    never had a status of its replicas."""
    stored = kind.status.stored_types(old)
    if not stored:
        return {}
    by_name = {p["metadata"]["name"]: p for p in pods}
    by_type = [(replica_type, [describe(record, by_name.get(record.name))
                               for record in (read_record(raw, raw.get("name") or "") for raw in raws)])
               for replica_type, raws in stored]
    return kept_counts(old, kind.status.replica_fields(by_type))


def kept_counts(old: Mapping, fields: dict) -> dict:
    """Replica fields recomputed from stored records alone, without the spec (a finished job, an invalid one):
    counters never decrease (each task's restartCount and backoffCount stay at least as stored, those of
    records dropped for size included), and `ready` still counts the replicas of the spec (records of ranks
    scaled away are not replicas of the job): its total is the stored one."""
    if "tasks" not in fields:
        return fields
    before = {str(t.get("type") or ""): int(t.get("restartCount") or 0) for t in old.get("tasks") or ()
              if isinstance(t, dict)}
    tasks = [{**t, "restartCount": max(t["restartCount"], before.get(t["type"], 0))} for t in fields["tasks"]]
    fields = {**fields, "tasks": tasks}
    if "backoffCount" in fields:
        fields["backoffCount"] = max(sum(t["restartCount"] for t in tasks), int(old.get("backoffCount") or 0))
    total = str(old.get("ready") or "").rpartition("/")[2]
    if total.isdigit() and "readyReplicas" in fields:
        fields["ready"] = f"{fields['readyReplicas']}/{total}"
    return fields


def judged(observations: list[Observation], leaving: Sequence[Observation] = ()) -> dict:
    """The outcomes the rules judge, by (type, rank): those of pods that ran the workload (a debug pod's end
    says nothing of the job: `is_debug`, and restart.observe gives it no outcome), and the failures of ranks
    scaled away in the same moment (`leaving`): every outcome is judged before the edit takes effect."""
    outcomes = {(o.slot.type, o.slot.rank): None if o.slot.debug else o.outcome for o in observations}
    for o in leaving:
        if o.outcome == Outcome.FAILED and not o.slot.debug:
            outcomes[(o.slot.type, o.slot.rank)] = o.outcome
    return outcomes


def is_debug(kind: JobKind, pod: dict | None, record: Replica, debugging: bool) -> bool:
    """Is the replica's pod a debug pod, whose end decides nothing and counts nothing? A pod made in debug mode
    is, and so, in debug mode, is one made before pods said their mode (as debug mode always decided nothing).
    A pod gone was one if its record says so: a debug pod deleted as debug mode is turned off counts nothing,
    and a workload's pod deleted as it is turned on is judged as the workload's."""
    if pod is None:
        return record.debug
    mode = pod_mode(kind.api, pod)
    return mode == DEBUG or (debugging and mode is None)


TEMPLATES = "templateHashes"  # status: the template hash of each replica type, as last run (pods.template_hash)
TEMPLATE_CHANGED = "pods created from now on (restarts, new ranks) use it; running pods are not replaced"


def template_changes(kind: JobKind, job: ParsedJob, old: dict) -> tuple[dict, list[Event]]:
    """The template hash of each replica type (with the kind's labels, as its pods are made), and a Normal
    Event for each whose template changed since the status last recorded it: once per edit, as the status
    records the new one. The edit applies to new pods only."""
    hashes = {str(spec.type): template_hash(spec.template, kind.template_labels(job, spec.type))
              for spec in job.spec.replica_specs}
    recorded = old.get(TEMPLATES)
    stored = recorded if isinstance(recorded, dict) else {}
    events = [Event(NORMAL, "TemplateChanged", f"spec.replicaSpecs[{index}].template ({spec.type}) changed: "
                    f"{TEMPLATE_CHANGED}")
              for index, spec in enumerate(job.spec.replica_specs)
              if stored.get(str(spec.type)) not in (None, hashes[str(spec.type)])]
    return hashes, events


def other_mode(kind: JobKind, o: Observation, debugging: bool) -> bool:
    """Is the replica's pod one of the other run mode, to be replaced (as resuming does) now that debug mode is
    turned on or off? A debug pod always is, once debug mode is off; a pod of the workload is while it has not
    finished (a finished one is judged, and restarted as any other)."""
    pod = o.slot.pod
    if o.seen != Seen.CURRENT or pod is None or is_terminating(pod):
        return False
    mode = pod_mode(kind.api, pod)
    if mode == DEBUG:
        return not debugging
    return mode is not None and debugging and pod_phase(pod) not in FINISHED
