"""What users' edits of a live job change, for every kind (the spec's "Live jobs"): the records of ranks
scaled away (budgets are never refunded), the run mode pods were made in (debug on and off replace them, and
a debug pod's end decides nothing), and the templates the job last ran (an edit applies to new pods only,
and is announced once). Pure helpers of plan.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.jobs import status as st
from controller.jobs.actions import DEBUG, NORMAL, Event
from controller.jobs.api import Outcome
from controller.jobs.kind import JobKind, ParsedJob
from controller.jobs.pods import pod_mode, template_hash
from controller.jobs.restart import Observation, Seen, Slot
from controller.jobs.status import Replica

REMOVED = "removedReplicas"


def removed_records(status: Mapping) -> dict[str, dict]:
    """The stored records of ranks scaled away (status.removedReplicas), by pod name."""
    return {raw["name"]: raw for raw in status.get(REMOVED) or () if isinstance(raw, dict) and raw.get("name")}


def removed(kind: JobKind, old: dict, slots: list[Slot], pods: list[dict]) -> list[Replica]:
    """Budgets are never refunded: the records of ranks no longer in the spec that restarted (their restarts
    still count in backoffCount and against the job's budget, and come back with the rank if it is scaled up
    again), or whose pod is still there (a rank scaled back before its old pod is gone waits for it, as for a
    pod it retired). Each is stored retired: the rank's next pod is a new one, never a lost one."""
    names = {slot.name for slot in slots}
    present = {pod["metadata"]["name"] for pod in pods}
    kept = []
    for name, raw in sorted({**removed_records(old), **kind.status.stored_records(old)}.items()):
        if name in names:
            continue
        record = st.read_record(raw, name)
        if record.restart_count or name in present:
            kept.append(record.retired().in_phase(st.DELETED))
    return kept


def with_removed(status: dict, removed: list[Replica]) -> dict:
    """The plan's status with the records of ranks scaled away, their restarts counted in backoffCount."""
    if not removed and REMOVED not in status:
        return status  # (nothing scaled away: the common case, no copy)
    status = {key: value for key, value in status.items() if key != REMOVED}
    if removed:
        status[REMOVED] = [record.to_json() for record in removed]
        status["backoffCount"] = int(status.get("backoffCount") or 0) + sum(r.restart_count for r in removed)
    return status


def judged(kind: JobKind, observations: list[Observation], debugging: bool,
           leaving: list[Observation] = ()) -> dict:
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


def template_changes(job: ParsedJob, old: dict) -> tuple[dict, list[Event]]:
    """The template hash of each replica type, and a Normal Event for each whose template changed since the
    status last recorded it: once per edit, as the status records the new one. The edit applies to new pods
    only."""
    hashes = {str(spec.type): template_hash(spec.template) for spec in job.spec.replica_specs}
    stored = old.get(TEMPLATES) if isinstance(old.get(TEMPLATES), dict) else {}
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
    if o.seen != Seen.CURRENT or pod is None or st.is_terminating(pod):
        return False
    mode = pod_mode(kind.api, pod)
    if mode == DEBUG:
        return not debugging
    return mode is not None and debugging and st.pod_phase(pod) not in st.FINISHED
