"""What a plan asks for: typed actions, in the order the reconciler executes them.

Each is a NamedTuple, so a plan reads (and compares) as plain data. Events that report an action
(`SuccessfulDelete`, `SuccessfulCreate`, `ForceDeleted`) are recorded only once the action's write
succeeded; the others (phase changes, `Restarting`, `InvalidSpec`) after every write was tried.
"""

from __future__ import annotations

from typing import NamedTuple

NORMAL = "Normal"
WARNING = "Warning"

# How a CreatePod asks for the pod to be built (the values of pods.PodMode).
IMMEDIATE = "immediate"
DEBUG = "debug"
RESUME = "resume"

# Why a pod is deleted.
RESTART = "restart"
CLEANUP = "cleanup"
PAUSE = "pause"
SCALE_DOWN = "scale-down"

SERVICES = "services"
PODGROUPS = "podgroups"
CHILD_KINDS = {SERVICES: "Service", PODGROUPS: "PodGroup"}  # for messages; a kind's dependents declare theirs


class Event(NamedTuple):
    type: str  # Normal or Warning
    reason: str
    message: str


class CreatePod(NamedTuple):
    replica_type: str
    rank: int
    mode: str  # IMMEDIATE, DEBUG or RESUME


class DeletePod(NamedTuple):
    name: str
    uid: str  # the delete's precondition: a newer pod of the same name is never hit
    reason: str  # RESTART, CLEANUP, PAUSE or SCALE_DOWN


class ForceDeletePod(NamedTuple):
    """A pod still terminating long after its grace period ended (its node is lost)."""

    name: str
    uid: str
    overdue: float  # seconds since its grace period ended

    def event(self) -> Event:
        return Event(WARNING, "ForceDeleted", f"Force-deleted pod {self.name}: still terminating "
                     f"{self.overdue:.0f}s after its grace period ended (its node may be lost)")


class CreateChild(NamedTuple):
    resource: str  # SERVICES, PODGROUPS or the plural of a kind's dependent (JobKind.dependent_resources)
    name: str
    body: dict


class PatchChild(NamedTuple):
    resource: str
    name: str
    changes: dict  # a JSON merge patch


class DeleteChild(NamedTuple):
    resource: str
    name: str
    uid: str


ChildAction = CreateChild | PatchChild | DeleteChild


def created_event(name: str) -> Event:
    return Event(NORMAL, "SuccessfulCreate", f"Created pod: {name}")


def deleted_event(name: str) -> Event:
    return Event(NORMAL, "SuccessfulDelete", f"Deleted pod: {name}")
