"""What a plan asks for: the `Plan` of one reconcile, and its typed actions, in the order the reconciler executes
them.

Each action is a NamedTuple, so a plan reads (and compares) as plain data. Events that report an action
(`SuccessfulDelete`, `SuccessfulCreate`, `ForceDeleted`) are recorded only once the action's write
succeeded; the others (phase changes, `Restarting`, `InvalidSpec`) after every write was tried.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from controller.jobs.schema.api import JobPhase

if TYPE_CHECKING:  # (conflicts.py's, which a plan carries and never reads)
    from controller.jobs.decisions.conflicts import Conflict

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


def child_kinds(dependent_kinds: Mapping[str, str]) -> dict[str, str]:
    """The kind of each child resource a job makes, by plural, as messages name them: a kind's dependents' by
    `dependent_kinds` (JobKind.dependent_resources)."""
    return {**CHILD_KINDS, **dependent_kinds}


def child_what(kinds: Mapping[str, str], action: ChildAction) -> str:
    """The child an action is about, as messages and taken names (conflicts.py) say it: "Service a-worker-0"."""
    return f"{kinds.get(action.resource, action.resource)} {action.name}"


def created_event(name: str) -> Event:
    return Event(NORMAL, "SuccessfulCreate", f"Created pod: {name}")


def deleted_event(name: str) -> Event:
    return Event(NORMAL, "SuccessfulDelete", f"Deleted pod: {name}")


@dataclass(frozen=True)
class WriteFailure:
    """The first write the server refused in a job's last reconcile, shown in its ReplicaFailure condition."""

    reason: str  # FailedCreate, FailedDelete or FailedUpdate
    message: str


@dataclass(frozen=True)
class Plan:
    """What one reconcile must do (plan.py makes it, the reconciler executes it)."""

    status: dict  # the complete new status; equal to the input when nothing changed
    create: list[CreatePod] = field(default_factory=list)
    delete: list[DeletePod] = field(default_factory=list)
    # In order, after the writes; a SuccessfulDelete only if its delete succeeded (events_after).
    events: list[Event] = field(default_factory=list)
    terminal: bool = False  # the job has finished: only its clean-up remains
    podgroup: list[ChildAction] = field(default_factory=list)
    services: list[ChildAction] = field(default_factory=list)
    force_delete: list[ForceDeletePod] = field(default_factory=list)
    dependents: list[ChildAction] = field(default_factory=list)  # the kind's own dependents (a TensorBoard)
    requeue_after: float | None = None  # seconds until something no watch event announces needs a look
    # Write the status even unchanged: the plan sends pod creates, and the write with the cached resourceVersion
    # proves the cached job current (decide.py).
    confirm: bool = False
    # The names taken by other owners (conflicts.py) that the job still waits for: the rest are forgotten.
    taken: tuple[Conflict, ...] = ()
    # The status write only reports pods starting: it may wait a moment for their siblings (coalesce.py).
    may_wait: bool = False

    def but(self, **changes) -> Plan:
        """A copy with `changes`: dataclasses.replace, without its per-field checks (it ran three times a plan, ~4 us
        each, a tenth of an up-to-date reconcile). Plan has no __post_init__ and no init=False fields to honour."""
        new = object.__new__(Plan)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def events_after(self, refused_deletes: Iterable[str]) -> list[Event]:
        """The plan's Events once its writes were tried: none reporting a delete the server refused."""
        refused = {deleted_event(name) for name in refused_deletes}
        return [event for event in self.events if event not in refused]


def soonest(*delays: float | None) -> float | None:
    """The first of the wake-ups asked for (None: none)."""
    known = [d for d in delays if d is not None]
    return min(known) if known else None


def phase_event(phase: str, message: str | None = None) -> Event:
    """The Event of a phase change: a Warning for Failed."""
    event_type = WARNING if phase == JobPhase.FAILED else NORMAL
    return Event(event_type, str(phase), message or f"The job is {str(phase).lower()}.")  # "The job is running."


def phase_events(old: dict, phase: str) -> list[Event]:
    """One event per phase change; a new job starting out Pending is not news."""
    old_phase = old.get("phase") or ""
    if phase == old_phase or (not old_phase and phase == JobPhase.PENDING):
        return []
    return [phase_event(phase)]
