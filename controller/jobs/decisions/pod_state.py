"""What the decisions read of a pod: its uid, phase, readiness and containers' states, and whether it is being
deleted. Pure, on the cached pod's dict."""

from __future__ import annotations


def pod_uid(pod: dict) -> str:
    return pod["metadata"].get("uid") or ""


def pod_phase(pod: dict) -> str:
    # A pod the kubelet has not reported on yet has no phase: it is pending.
    return (pod.get("status") or {}).get("phase") or "Pending"


def is_terminating(pod: dict) -> bool:
    """A delete is already under way: asking again would only repeat it."""
    return bool(pod["metadata"].get("deletionTimestamp"))


def pod_ready(pod: dict) -> bool:
    """The pod is Running and Ready (its Ready condition True), or Running with no readiness reported at
    all (a kubelet that writes no conditions): what a replica must be to count in READY, as a
    Deployment's READY counts its pods."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    for condition in status.get("conditions") or ():  # (a pod's condition, not a job's: job_conditions.py)
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return True


def container_states(pod: dict) -> list[dict]:
    """`{name, state, exitCode}` per container, from the pod's containerStatuses."""
    states = []
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        state = status.get("state") or {}
        entry = {"name": status.get("name") or ""}
        if state.get("terminated") is not None:
            entry["state"] = "terminated"
            entry["exitCode"] = state["terminated"].get("exitCode")
        elif state.get("running") is not None:
            entry["state"] = "running"
        else:
            entry["state"] = "waiting"
        states.append(entry)
    return states
