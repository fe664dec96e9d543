"""What every status the engine writes must hold, whatever the job went through (issue 45): each condition complete
and well-formed (a known type once, "True"/"False", a non-empty reason and message, a timestamp); a finished job's
completionTime, not before its startTime; a Failed job's Failed condition True with a message saying why. The
planning tests check it on every plan they make (plan_support.step), and the model test's oracle on every status
of a run, with `monotonic_problems` between one status and the next."""

from __future__ import annotations

from datetime import datetime

CONDITION_TYPES = frozenset({"Initialized", "Running", "ReplicaFailure", "ReplicasWaiting", "Completed", "Failed",
                             "Paused", "SpecInvalid", "ChildConflict"})
TERMINAL = frozenset({"Succeeded", "Failed"})


def _time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def status_problems(status: dict) -> list[str]:
    """What is wrong with one status, if anything (a phase-less status, as written before any decision, is
    checked too: only what it has)."""
    problems = []
    seen: set[str] = set()
    for condition in status.get("conditions") or ():
        kind = condition.get("type")
        if kind not in CONDITION_TYPES:
            problems.append(f"a condition of unknown type {kind!r}: {condition}")
        elif kind in seen:
            problems.append(f"two conditions of type {kind}")
        seen.add(str(kind))
        if condition.get("status") not in ("True", "False"):
            problems.append(f"{kind}: status {condition.get('status')!r}")
        for field in ("reason", "message"):
            if not isinstance(condition.get(field), str) or not condition.get(field):
                problems.append(f"{kind}: no {field} ({condition})")
        if _time(condition.get("lastTransitionTime")) is None:
            problems.append(f"{kind}: lastTransitionTime {condition.get('lastTransitionTime')!r}")
    phase = status.get("phase")
    start, end = status.get("startTime"), status.get("completionTime")
    if "startTime" in status and _time(start) is None:
        problems.append(f"startTime {start!r}")
    if phase in TERMINAL:
        if _time(end) is None:
            problems.append(f"a {phase} job with completionTime {end!r}")
        elif _time(start) is not None and _time(end) < _time(start):  # type: ignore[operator]
            problems.append(f"completionTime {end} before startTime {start}")
    elif end is not None:
        problems.append(f"a job of phase {phase!r} with completionTime {end!r}")
    if phase == "Failed" and status.get("conditions"):
        failed = next((c for c in status["conditions"] if c.get("type") == "Failed"), None)
        if failed is None or failed.get("status") != "True" or not failed.get("message"):
            problems.append(f"a Failed job whose Failed condition does not say why: {failed}")
    return problems


def monotonic_problems(before: dict, after: dict) -> list[str]:
    """What went backwards from one status to the next of the same job: a condition's lastTransitionTime, or one
    that moved although its status did not flip; the start of a job that did not resume; a completionTime."""
    problems = []
    old = {c.get("type"): c for c in before.get("conditions") or ()}
    for condition in after.get("conditions") or ():
        previous = old.get(condition.get("type"))
        if previous is None:
            continue
        then, now = _time(previous.get("lastTransitionTime")), _time(condition.get("lastTransitionTime"))
        if then is None or now is None:
            continue  # (status_problems says so)
        if now < then:
            problems.append(f"{condition['type']}: lastTransitionTime went back from {then} to {now}")
        elif previous.get("status") == condition.get("status") and now != then:
            problems.append(f"{condition['type']}: lastTransitionTime moved without a transition ({then} to {now})")
    if before.get("phase") in TERMINAL and before.get("completionTime") and \
            after.get("completionTime") != before.get("completionTime"):
        problems.append(f"completionTime changed after the end: {before.get('completionTime')} to "
                        f"{after.get('completionTime')}")
    return problems


def assert_well_formed(status: dict, before: dict | None = None) -> None:
    problems = status_problems(status) + (monotonic_problems(before, status) if before else [])
    assert not problems, problems
