"""Replicas that depend on each other, for any kind that declares it: the start order (`start_order`: a type's pods
are created only once every replica of the types it waits for is Running and Ready) and the group restart
(`restart_group`: the restart of one replica retires the pods of the types that restart with it, and the group's
restarts in one reconcile count one). An MPI launcher waits for its workers, and goes with any of them; JobSet's
`startupPolicy: InOrder` and `RestartJobSet` are the same two ideas.

Both act on the steps `restart.step` decided for each replica of a running job (run.py), and are pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from controller.jobs.decisions.actions import NORMAL, Event
from controller.jobs.decisions.pod_state import is_terminating, pod_uid
from controller.jobs.decisions.replica_records import DELETED, FINISHED
from controller.jobs.decisions.restart import Observation, Seen, Step
from controller.jobs.kind import JobKind, ParsedJob

START_ORDER = "WaitingForReady"  # the waiting reason of a replica the start order holds back


def together(kind: JobKind, job: ParsedJob) -> frozenset[str]:
    """The replica types of the job's restart group (none when its kind declares no group restart)."""
    return frozenset(t for first, taken in kind.restart_together(job).items() for t in (first, *taken))


def count_once(kind: JobKind, job: ParsedJob, observations: Sequence[Observation],
               steps: Sequence[Step]) -> tuple[list[Step], list[int]]:
    """The steps with the group's restarts in this reconcile counted once: the first restart counted of a type in
    the group stands, the others of the group are replaced with it uncounted; and the indices of all of them. A
    running job's (restart_group) and a paused one's alike: a failure seen with the pause is judged first."""
    members = together(kind, job)
    out = list(steps)
    counted = [i for i, (o, s) in enumerate(zip(observations, steps, strict=True))
               if o.slot.type in members and s.record.restart_count > o.record.restart_count]
    for i in counted[1:]:  # one group restart: the others are replaced with it, counting nothing
        o, s = observations[i], steps[i]
        out[i] = replace(s, record=replace(s.record, restart_count=o.record.restart_count),
                         restart_event=f"Restarting replica {o.slot.name} with the group restart of "
                                       f"{observations[counted[0]].slot.name} (not counted)")
    return out, counted


def restart_group(kind: JobKind, job: ParsedJob, observations: Sequence[Observation], steps: Sequence[Step],
                  now: str) -> tuple[list[Step], list[Event], dict | None]:
    """The steps with the group restart applied: the first restart counted of a type in the group stands; the
    others of the group's types in this reconcile are replaced uncounted (restart.observe_all drew one restart of
    the budget for them all); the pods of the types that restart with it, still going, are retired uncounted
    (made again by the start order). Also an Event, and the cause for the status (None: no group restart)."""
    rule = kind.restart_together(job)
    out, counted = count_once(kind, job, observations, steps)
    if not counted:
        return out, [], None
    first = observations[counted[0]].slot
    taken = {t for i in counted for t in rule.get(observations[i].slot.type, ())}
    retired = []
    for i, (o, s) in enumerate(zip(observations, steps, strict=True)):
        pod = o.slot.pod
        if i in counted or o.slot.type not in taken or o.seen != Seen.CURRENT or pod is None or o.slot.debug \
                or s.record.phase in FINISHED or s.delete or is_terminating(pod):
            continue  # (a pod already finished or going is replaced by its own step)
        out[i] = Step(s.record.retired().in_phase(DELETED), delete=pod_uid(pod))
        retired.append(o.slot.name)
    message = steps[counted[0]].restart_event or f"Restarting replica {first.name}"
    cause = {"replica": first.name, "message": message, "time": now}
    events = []
    if retired:
        events.append(Event(NORMAL, "GroupRestart", f"Restarting {', '.join(retired)} with replica {first.name} "
                                                    "(one restart of the job)"))
    return out, events, cause


def start_order(kind: JobKind, job: ParsedJob, observations: Sequence[Observation],
                steps: Sequence[Step]) -> tuple[list[Step], list[Event]]:
    """The steps with the creates the start order holds back undone, each replica held saying what it waits for
    (its record's `waiting`, shown by the ReplicasWaiting condition), and a Normal Event when one begins to wait."""
    order = kind.start_after(job)
    out = list(steps)
    if not order:
        return out, []
    ready: dict[str, list[bool]] = {}
    for o, s in zip(observations, steps, strict=True):
        ready.setdefault(o.slot.type, []).append(s.record.is_ready)
    events = []
    for i, (o, s) in enumerate(zip(observations, steps, strict=True)):
        if not s.create:
            continue
        behind = [t for t in order.get(o.slot.type, ()) if not all(ready.get(t, ()))]
        if not behind:
            continue
        said = "; ".join(f"{sum(ready[t])} of {len(ready[t])} {t} replicas Ready" for t in behind)
        waits = {"reason": START_ORDER, "message": f"its pod is made once every {' and '.join(behind)} replica is "
                                                   f"Running and Ready ({said})"}
        out[i] = replace(s, create=False, record=replace(s.record, waiting=waits))
        if (o.slot.record.waiting or {}).get("reason") != START_ORDER:
            events.append(Event(NORMAL, START_ORDER, f"Replica {o.slot.name} waits: {waits['message']}"))
    return out, events


def held(record_waiting: dict | None) -> bool:
    """Is this a start-order wait (announced by a Normal Event, not waiting.py's Warning)?"""
    return bool(record_waiting) and (record_waiting or {}).get("reason") == START_ORDER
