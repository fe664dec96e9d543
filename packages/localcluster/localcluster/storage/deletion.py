"""What a DELETE does to an object, as the generic registry's Store.Delete and rest.BeforeDelete decide it.

An object with finalizers, or a pod given a grace period for its kubelet, is not removed but marked:
a deletionTimestamp, a deletionGracePeriodSeconds, the finalizers the propagation policy asks for and,
the first time, a new generation if the object has one (its kind tracks it, or its create request gave
one). A pod deleted with no grace left (never scheduled, finished, forced, or its kubelet done with it)
is marked and removed in the same request, so a watch sees MODIFIED, then DELETED. Anything else is
removed as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

ORPHAN, FOREGROUND = "orphan", "foregroundDeletion"


def rfc3339(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class Plan:
    marked: dict | None  # the object to store first, marked for deletion; None: nothing to write
    remove: bool  # then removed in the same request


def plan(old: dict, options: dict, graceful: bool, collected: bool) -> Plan:
    """The deletion of `old` with DeleteOptions `options`.

    `graceful`: the kind deletes gracefully (pods); `collected`: the garbage collector's finalizers apply
    (every kind but Events, whose strategy opts out).
    """
    meta = old["metadata"]
    current = list(meta.get("finalizers") or ())
    grace = None
    if graceful:
        grace, pending = _grace(old, options)
        if pending:  # a graceful deletion under way, which this one does not shorten: nothing changes
            return Plan(None, False)
    finalizers = gc_finalizers(current, options) if collected else current
    if grace is None and not finalizers:  # nothing to wait for (the options may have dropped the GC's)
        return Plan(None, True)
    return Plan(mark(old, finalizers, grace), remove=not finalizers and not grace)


def _grace(pod: dict, options: dict) -> tuple[int | None, bool]:
    """(grace period, pending) of a pod's deletion (rest.BeforeDelete with the pod's CheckGracefulDelete).

    None: deleted at once, with no marking (it was already marked with no grace left).
    """
    meta = pod["metadata"]
    asked = options.get("gracePeriodSeconds")
    if asked is not None and asked < 0:
        asked = 1
    if meta.get("deletionTimestamp"):
        current = meta.get("deletionGracePeriodSeconds")
        if not current:
            return None, False
        if asked is None or asked >= current:
            return current, True
        return int(asked), False  # only a shorter grace period may be given
    spec = pod.get("spec") or {}
    grace = asked if asked is not None else spec.get("terminationGracePeriodSeconds")
    if grace is None:
        grace = 30  # the default every pod gets at creation
    if not spec.get("nodeName") or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        grace = 0  # no kubelet will ever stop it, or it has stopped
    return (1 if grace < 0 else int(grace)), False


def gc_finalizers(current: list[str], options: dict) -> list[str]:
    """The finalizers after the propagation policy added or removed `orphan` and `foregroundDeletion`
    (deletionFinalizersForGarbageCollection); `current` itself when nothing changes."""
    orphan_dependents = options.get("orphanDependents")
    policy = options.get("propagationPolicy")
    if orphan_dependents is not None:
        orphan, foreground = bool(orphan_dependents), False
    elif policy in ("Orphan", "Background", "Foreground"):
        orphan, foreground = policy == "Orphan", policy == "Foreground"
    else:  # the object's own finalizers decide; by default, neither
        orphan, foreground = ORPHAN in current, FOREGROUND in current
    kept = [f for f in current if f not in (ORPHAN, FOREGROUND)]
    wanted = kept + [ORPHAN] * orphan + [FOREGROUND] * foreground
    return current if set(wanted) == set(current) else wanted


def mark(old: dict, finalizers: list[str], grace: int | None, new_generation: bool = True) -> dict:
    """`old` marked for deletion: gracefully in `grace` seconds, or (None) at once, waiting only on finalizers.

    The first marking makes a new generation, unless `new_generation` is False (a namespace's own
    deletion does not).
    """
    meta = dict(old["metadata"])
    if finalizers:
        meta["finalizers"] = finalizers
    else:
        meta.pop("finalizers", None)
    now = datetime.now(UTC).replace(microsecond=0)
    stamp = meta.get("deletionTimestamp")
    if stamp is None and new_generation and meta.get("generation", 0) > 0:
        meta["generation"] += 1
    if grace is None:  # markAsDeleting
        if stamp is None or _parse(stamp) > now:
            meta["deletionTimestamp"] = rfc3339(now)
        meta["deletionGracePeriodSeconds"] = 0
    elif stamp is None:
        meta["deletionTimestamp"] = rfc3339(now + timedelta(seconds=grace))
        meta["deletionGracePeriodSeconds"] = grace
    else:  # a shorter grace period, counted from when the first one started
        started = _parse(stamp) - timedelta(seconds=meta.get("deletionGracePeriodSeconds") or 0)
        meta["deletionTimestamp"] = rfc3339(started + timedelta(seconds=grace))
        meta["deletionGracePeriodSeconds"] = grace
    return {**old, "metadata": meta}


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp).astimezone(UTC)
