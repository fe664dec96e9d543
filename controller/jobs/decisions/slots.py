"""Slot gathering: one slot per replica of the spec (its stored record and its pod), the pods that belong to no
replica, and the ranks scaled away whose pods are judged before they go (`gather_slots`); the pod of a replica
when look-alikes exist (`pick`); the records grouped back by type for the status (`by_type`)."""

from __future__ import annotations

import dataclasses

from controller.jobs.decisions import edits
from controller.jobs.decisions.pod_state import pod_uid
from controller.jobs.decisions.replica_records import DELETED, Replica, read_record
from controller.jobs.decisions.restart import Observation, Slot
from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.schema.api import JobPhase
from controller.jobs.schema.naming import replica_name, replica_of


def gather_slots(kind: JobKind, job: ParsedJob, old: dict, pods: list[dict],
                 creating: frozenset[str] = frozenset()) -> tuple[list[Slot], list[dict], list[Slot]]:
    """One slot per replica of the spec, in spec and rank order, with its stored record and pod; the pods
    that belong to no replica of the spec; and a slot for each rank scaled away that still has a pod and a
    record, so that the pod's outcome is judged before the scale-down deletes it."""
    stored = kind.status.stored_records(old)
    removed = edits.removed_records(old)
    if removed:
        stored = {**removed, **stored}
    by_replica: dict[tuple[str, int], list[dict]] = {}
    for p in pods:
        key = replica_of(kind.api, p)
        if key is not None:  # a pod without our labels is not one we can reason about: left alone
            by_replica.setdefault(key, []).append(p)
    slots = []
    debugging = job.spec.run_mode.debugging
    rules = {spec.type: kind.restart_rule(job, spec.type) for spec in job.spec.replica_specs}
    counts = kind.replica_counts(job)
    for spec in job.spec.replica_specs:
        for rank in range(counts[spec.type]):
            name = replica_name(job.name, spec.type, rank)
            record = read_record(stored.get(name), name)
            if record.removed:  # a rank scaled away and back: of the spec again, its record resumed (and its count)
                record = dataclasses.replace(record, removed=False)
            candidates = by_replica.pop((spec.type, rank), None)
            pod = pick(candidates, record) if candidates else None
            slots.append(Slot(spec.type, rank, name, rules[spec.type], record, pod, name in creating,
                              edits.is_debug(kind, pod, record, debugging)))
    strays = sorted((p for found in by_replica.values() for p in found), key=lambda p: p["metadata"]["name"])
    gone = []
    # A paused job's records are all Deleted, those of its ranks as those scaled away: an edit not yet seen is
    # what can have removed a rank now.
    paused_edit = old.get("phase") == JobPhase.PAUSED and old.get("observedGeneration") not in (None, job.generation)
    for (replica_type, rank), found in sorted(by_replica.items()):
        name = replica_name(job.name, replica_type, rank)
        # Judged: ranks the last reconcile still ran. A record already Deleted is a rank scaled away before:
        # what its pod does now is after the edit took effect, so it decides nothing; but one the pause retired
        # unseen (the cache lagging) is a rank of the job whose pod outlived the pause, judged as a kept rank's
        # would be, when the edit seen now is what removes it (its record is not marked `removed`: a rank the
        # reconcile that paused saw removed was scaled away then, whatever edit is unseen now). (A type no longer
        # in the spec has no rule.) The pod the pause did retire is its record's own uid: judging it counts
        # nothing (restart.observe knows it).
        if replica_type not in rules or name not in stored:
            continue
        record = read_record(stored[name], name)
        if name in removed:  # stored apart by an earlier version: scaled away, as the mark says now
            record = dataclasses.replace(record, removed=True)
        pod = pick(found, record)
        if record.phase != DELETED or (paused_edit and not record.removed):
            gone.append(Slot(replica_type, rank, name, rules[replica_type], record, pod, False,
                             edits.is_debug(kind, pod, record, debugging)))
    return slots, strays, gone


def pick(candidates: list[dict], record: Replica) -> dict | None:
    """The pod of a replica. The name is deterministic, so there is at most one unless someone
    made look-alikes by hand: prefer the recorded pod, then any pod not already retired."""
    for pod in candidates:
        if pod_uid(pod) == record.uid and record.uid:
            return pod
    for pod in candidates:
        if pod_uid(pod) != record.last_restart_uid:
            return pod
    return candidates[0] if candidates else None


def by_type(job: ParsedJob, slots: list[Slot], records: list[Replica]) -> list[tuple[str, list[Replica]]]:
    grouped: dict[str, list[Replica]] = {spec.type: [] for spec in job.spec.replica_specs}
    for slot, record in zip(slots, records, strict=True):
        grouped[slot.type].append(record)
    return list(grouped.items())


def slots_of(observations: list[Observation]) -> list[Slot]:
    return [o.slot for o in observations]
