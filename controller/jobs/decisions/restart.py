"""Per-replica decisions: which pod is the replica's, has it come to an outcome for good, is it
replaced, and is the replacement counted as a restart.

The controller creates pods with restartPolicy Never and replaces finished ones itself, under the
same name, only after the old pod is gone. Two fields of the replica's record make this safe
against crashes and stale caches:

- `uid`: the replica's current pod ("" while a new pod is due and not seen yet);
- `lastRestartUid`: the last pod the controller retired. A restart is counted in the same status
  write that retires the pod, so a pod whose uid is `lastRestartUid` has been dealt with: a later
  reconcile that still sees it (cache lag, or a crash before the delete) only deletes it again.
  Pause retires pods the same way, without counting.

A pod uid is retired at most once, so a restart is counted at most once per finished pod, and a
restart is only granted while `restartCount < limit`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from controller.jobs.decisions import start_errors
from controller.jobs.decisions.backoff import NO_BACKOFF, RestartBackoff
from controller.jobs.decisions.pod_state import is_terminating, pod_uid
from controller.jobs.decisions.replica_records import DELETED, FINISHED, Replica, observed
from controller.jobs.kind import RestartRule
from controller.jobs.schema.api import Outcome


@dataclass(slots=True)  # never changed once made; not frozen: a frozen init costs twice as much
class Slot:
    """One replica: its spec, its stored record (status.read_record) and the pod seen for it."""

    type: str
    rank: int
    name: str
    policy: RestartRule  # the kind's restart rule for this replica
    record: Replica
    pod: dict | None
    create_pending: bool = False  # its pod's create was sent and the pod is not in the cache yet
    # Its pod is a debug pod (or, gone, was one: the record says so): its end decides and counts nothing.
    debug: bool = False


class Seen(StrEnum):
    CURRENT = "current"  # the replica's pod is visible: the recorded one, or a new one (adopted)
    RETIRED = "retired"  # only a pod the controller already retired is visible: it must go first
    MISSING = "missing"  # no pod and none recorded: the first pod or a replacement is due
    GONE = "gone"  # the recorded pod vanished without the controller retiring it


@dataclass(slots=True)
class Observation:
    slot: Slot
    seen: Seen
    record: Replica  # the stored record updated with what was seen; no decision applied yet
    outcome: Outcome | None  # what the replica has come to for good, if anything
    # The job's restarts before this replica is judged (removed ranks' and those granted earlier in the same
    # reconcile included): what a restart of the job's budget is numbered from.
    job_restarts: int = 0


@dataclass(slots=True)
class Step:
    """What a replica needs in this reconcile."""

    record: Replica  # the record to store
    create: bool = False  # create the replica's pod
    delete: str | None = None  # uid of a pod to delete
    restart_event: str | None = None  # message of the Restarting event, when a replacement was decided
    wake: float | None = None  # seconds until the replacement's back-off ends (it is created then)


def final_outcome(phase: str, policy: RestartRule, restart_count: int, containers: Sequence[dict] = (),
                  job_restarts: int = 0) -> Outcome | None:
    """A finished pod that will not be replaced is the replica's outcome for good. `job_restarts`: the
    restarts of every replica of the job so far (a kind's budget may be the job's, not the replica's)."""
    if phase not in FINISHED or policy.replaces(phase, restart_count, containers, job_restarts):
        return None
    return Outcome(phase)


def observe_all(slots: Sequence[Slot], job_restarts: int, together: Collection[str] = ()) -> list[Observation]:
    """Every replica observed in order, each knowing the restarts granted to those before it in this same
    reconcile: two replicas failing at once draw on a job-wide budget one after the other, so a budget
    of one restarts the first and fails the second. Replicas of the types in `together` restart as one group
    (the kind's `restart_together`): the group's restarts in one reconcile draw one restart of the budget, so each
    of the group after the first is judged against the budget as it was before the group drew on it (the spec's
    "one group restart counts once, whichever pods it replaced")."""
    observations = []
    group_base: int | None = None  # the job's restarts before this reconcile's group restart drew its one
    for slot in slots:
        grouped = slot.type in together
        before = group_base if grouped and group_base is not None else job_restarts
        obs = observe(slot, before)
        obs.job_restarts = before
        observations.append(obs)
        if will_count(obs) and not (grouped and group_base is not None):
            if grouped:
                group_base = job_restarts
            job_restarts += 1
    return observations


def will_count(obs: Observation) -> bool:
    """Will `step` (or `pause`) count a restart for this observation? Never for a debug pod."""
    if obs.slot.debug or obs.outcome is not None or obs.seen in (Seen.RETIRED, Seen.MISSING):
        return False
    if obs.seen == Seen.CURRENT:
        return obs.record.phase in FINISHED
    return obs.record.phase in FINISHED or obs.slot.policy.counts_lost_pods  # GONE


def observe(slot: Slot, job_restarts: int = 0) -> Observation:
    record, pod = slot.record, slot.pod
    retired = record.last_restart_uid
    if pod is not None:
        uid = pod_uid(pod)
        if uid and uid == retired:
            # Already retired (and counted, if it was a restart): never counted again, and what it
            # does while it goes (a pod deleted for pause fails with SIGTERM) is not the replica's.
            return Observation(slot, Seen.RETIRED, record, _recorded_outcome(record, slot.policy, job_restarts))
        # The recorded pod, the new pod we asked for, or one that replaced ours behind our back:
        # adopt it. Adopting never counts a restart, so caches that disagree cannot inflate counts.
        seen_record = observed(record, pod)
        if (is_terminating(pod) and seen_record.phase == "Failed" and record.phase not in FINISHED
                and not slot.policy.counts_lost_pods):
            # Deleted by someone else while it ran (the controller's own deletes retire the pod first): a real
            # kubelet reports the pod Failed (its SIGTERM's 143) before the deletion completes, but that is no
            # exit of the replica's. Under Never it is a lost pod, recreated uncounted once gone (_gone), as when
            # the Failed phase is never seen (the pod vanishes between two reconciles); under OnFailure and
            # Always both ways count it, below.
            return Observation(slot, Seen.CURRENT, record, None)
        if slot.debug:  # a debug pod's end is no outcome of the workload
            return Observation(slot, Seen.CURRENT, replace(seen_record, debug=True), None)
        return Observation(slot, Seen.CURRENT, seen_record,
                           final_outcome(seen_record.phase, slot.policy, seen_record.restart_count,
                                         seen_record.containers, job_restarts))
    if record.uid in ("", retired):
        return Observation(slot, Seen.MISSING, record, None)
    if slot.debug:  # a debug pod lost: replaced as it was (debug_step), nothing judged
        return Observation(slot, Seen.GONE, record, None)
    return _gone(slot, job_restarts)


def _recorded_outcome(record: Replica, policy: RestartRule, job_restarts: int) -> Outcome | None:
    # While a retired pod is still visible the replica awaits its replacement, unless the record
    # already names a newer pod (the cache lags behind the status): then that pod's record counts.
    if record.uid in ("", record.last_restart_uid):
        return None
    return final_outcome(record.phase, policy, record.restart_count, record.containers, job_restarts)


def _gone(slot: Slot, job_restarts: int) -> Observation:
    """The recorded pod vanished and the controller did not retire it.

    If it was last seen finished, its last phase stands in for it: a completed pod that disappears
    is not run again. Otherwise it was lost while running (deleted by hand, evicted, lost node), and
    a lost pod is a failure without an exit code, judged as any (`counts_lost_pods`): under OnFailure and
    Always it is replaced and counted, and when the replica's limit is used up the replica has failed for
    good instead (so has one whose rule replaces no failure: an MPI job's under Never). A rule that does not
    count lost pods (Never, for most kinds) recreates it uncounted, since the job cannot finish without the
    replica.
    """
    record, policy = slot.record, slot.policy
    if record.phase in FINISHED:
        return Observation(slot, Seen.GONE, record, final_outcome(record.phase, policy, record.restart_count,
                                                                  record.containers, job_restarts))
    if not policy.counts_lost_pods or policy.replaces("Failed", record.restart_count, (), job_restarts):
        return Observation(slot, Seen.GONE, record, None)
    return Observation(slot, Seen.GONE, record.in_phase("Failed"), Outcome.FAILED)


def _to_delete(pod: dict | None) -> str | None:
    """The uid of a replica's pod to delete; None when it is terminating already. (Asked of a pod seen only.)"""
    assert pod is not None  # (RETIRED and CURRENT observations have their pod)
    return None if is_terminating(pod) else pod_uid(pod)


def step(obs: Observation, now: str = "", now_epoch: float = 0.0, backoff: RestartBackoff = NO_BACKOFF) -> Step:
    """The decision for one replica of a job that runs (not paused, not finished), at `now` (a timestamp
    with milliseconds, kept as a restart's lastRestartTime; `now_epoch` the same moment in seconds): a
    replacement waits out the restart back-off (backoff.py)."""
    record, pod, policy = obs.record, obs.slot.pod, obs.slot.policy
    if obs.seen == Seen.RETIRED:
        return Step(record, delete=_to_delete(pod))
    if obs.seen == Seen.MISSING:
        return _replace(record.awaiting(), backoff, now_epoch)
    if obs.outcome is not None:
        return Step(record)  # decided for good: nothing is replaced any more
    if obs.seen == Seen.CURRENT:
        if record.phase not in FINISHED:
            return Step(record)  # still going
        # Finished and to be replaced: count it and retire the pod in the same status write; the
        # replacement is created by a later reconcile, once the old pod is gone (and the back-off over).
        counted = record.counted(now, streak=backoff.streak(record.restart_streak, pod, now_epoch))
        return Step(counted, delete=_to_delete(pod),
                    restart_event=_restart_message(counted, obs, _exit_cause(record, pod), backoff))
    # GONE, to be replaced: nothing left to delete, so the replacement is due once the back-off is over.
    if record.phase in FINISHED:
        counted = record.counted(now, streak=backoff.streak(record.restart_streak, None, now_epoch))
        return replace(_replace(counted.awaiting(), backoff, now_epoch),
                       restart_event=_restart_message(counted, obs, _exit_cause(record, None), backoff))
    if not policy.counts_lost_pods:
        retired = record.retired()
        return Step(retired.awaiting(), create=True,
                    restart_event=f"Recreating replica {record.name} (not counted: restart policy Never): "
                                  "pod was deleted")
    counted = record.counted(now, streak=backoff.streak(record.restart_streak, None, now_epoch))
    return replace(_replace(counted.awaiting(), backoff, now_epoch),
                   restart_event=_restart_message(counted, obs, "pod was deleted", backoff))


def _replace(awaiting: Replica, backoff: RestartBackoff, now_epoch: float) -> Step:
    """The replacement of a replica: created now, or a wake-up when its back-off ends."""
    wait = backoff.remaining(awaiting.last_restart_time, awaiting.restart_streak, now_epoch)
    return Step(awaiting, wake=wait) if wait > 0 else Step(awaiting, create=True)


def pause(obs: Observation, now_epoch: float = 0.0, backoff: RestartBackoff = NO_BACKOFF) -> Step:
    """Pause deletes every pod, retiring it without counting a restart: its replacement is created
    on resume (in mode "resume"). Every replica runs again after a resume, finished ones included.

    Every outcome is judged first: a pod that failed (or was lost) under a policy that replaces it, seen in the
    same reconcile as the pause, has used a restart, counted here as `step` would (the pause must not rerun it
    for free); one past its limit was final, and the verdict ended the job before any pause."""
    record, pod = obs.record, obs.slot.pod
    event = None
    if will_count(obs):
        cause = _exit_cause(record, pod) if obs.seen == Seen.CURRENT else "pod was deleted"
        # (No lastRestartTime: the pod is retired below, and its next one, at resume, owes nothing to the back-off.)
        record = record.counted(streak=backoff.streak(record.restart_streak, pod, now_epoch))
        event = f"{_restart_message(record, obs, cause, NO_BACKOFF)}; its next pod when the job resumes"
    paused = record.retired().in_phase(DELETED)
    if obs.slot.debug:  # the quick ends of a debug session say nothing of the workload's next restart
        paused = replace(paused, restart_streak=0)
    return Step(paused, delete=None if pod is None or is_terminating(pod) else pod_uid(pod), restart_event=event)


def debug_step(obs: Observation, now: str = "", now_epoch: float = 0.0, backoff: RestartBackoff = NO_BACKOFF) -> Step:
    """The decision for a replica whose pod is a debug pod (`Slot.debug`): a debug pod decides nothing and
    counts nothing. One that ends, or is lost, is replaced as it was, without counting a restart; the
    replacement waits out the restart back-off all the same (its streak, kept in the record), so a debug
    command that exits at once is not recreated in a hot loop. `backoff` NO_BACKOFF: debug mode was turned off
    meanwhile, and the replacement, a pod of the workload, is made at once, as resuming does."""
    record, pod = obs.record, obs.slot.pod
    if obs.seen not in (Seen.CURRENT, Seen.GONE):
        return step(obs, now, now_epoch, backoff)  # a retired pod to delete, or a pod due: as for any replica
    if obs.seen == Seen.CURRENT and record.phase not in FINISHED:
        return Step(record)  # still going
    cause = _exit_cause(record, pod) if obs.seen == Seen.CURRENT else "pod was deleted"
    streak = backoff.streak(record.restart_streak, pod, now_epoch) if backoff.base > 0 else 0
    retired = replace(record.retired(), last_restart_time=now if streak else "", restart_streak=streak)
    delay = backoff.delay(streak)
    wait = f"; its next pod in {delay:g}s (back-off)" if delay > 0 else ""
    event = f"Recreating debug pod of replica {record.name} (debug mode: no restart counted): {cause}{wait}"
    if obs.seen == Seen.CURRENT:  # retired now, replaced once the pod is gone (and the back-off over)
        return Step(retired, delete=_to_delete(pod), restart_event=event)
    return replace(_replace(retired.awaiting(), backoff, now_epoch), restart_event=event)


def _restart_message(record: Replica, obs: Observation, cause: str, backoff: RestartBackoff) -> str:
    """"restart K of N": the replica's own count against its own limit, or the job's (every replica's, removed
    ranks' included) against the job's budget, as the replica's rule counts it."""
    policy = obs.slot.policy
    text = getattr(policy, "restart_text", None)
    if text is not None:
        counted = text(record.restart_count, obs.job_restarts + 1)
    else:  # (a rule that does not say: its own count against its limit)
        counted = f"restart {record.restart_count}" + ("" if policy.limit is None else f" of {policy.limit}")
    delay = backoff.delay(record.restart_streak)
    wait = f"; its next pod in {delay:g}s (back-off)" if delay > 0 else ""
    return f"Restarting replica {record.name} ({counted}): {cause}{wait}"


def _exit_cause(record: Replica, pod: dict | None) -> str:
    if pod is not None and is_terminating(pod):
        # Someone deleted it (the controller's own deletes retire the pod first): its SIGTERM's 143 is no exit.
        return "pod was deleted"
    exited = [c for c in record.containers if c.get("state") == "terminated" and c.get("exitCode") is not None]
    if exited:
        first = next((c for c in exited if c["exitCode"] != 0), exited[0])
        # A container that could not start will not on the next try either: say why (start_errors.py).
        why = start_errors.said(start_errors.container_state(pod, first.get("name")))
        return f"pod exited with code {first['exitCode']}" + (f" ({why})" if why else "")
    reason = ((pod or {}).get("status") or {}).get("reason")
    return f"pod {record.phase.lower()}" + (f": {reason}" if reason else "")
