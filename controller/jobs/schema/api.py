"""The API every job kind shares (batch.tensorstack.dev/v1beta1): the parts of a job's spec the
engine reads whatever the kind (run modes, clean-up, the gang scheduler), the job phases, and what a
replica or a job comes to.

A kind's models (controller/kinds/*/models.py) build their specs from these, so the engine reads one
shape, and the CRDs generated from the models describe the shared fields alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)


class JobObject(Model):
    """The parts of a job object the controller reads, whatever its kind, parsed once per generation; a kind's
    model adds its `spec`."""

    name: str
    namespace: str
    uid: str
    generation: int

    @classmethod
    def from_object(cls, obj: dict) -> Self:
        meta = obj["metadata"]
        # Validated from a dict, not cls(...): the spec is a subclass's field, which the base has not.
        return cls.model_validate({"name": meta["name"], "namespace": meta.get("namespace", ""),
                                   "uid": meta.get("uid", ""), "generation": meta.get("generation", 0),
                                   "spec": obj.get("spec") or {}})


class CleanUpPolicy(StrEnum):
    NONE = "None"
    UNFINISHED = "Unfinished"
    ALL = "All"


# Replicas of a whole job at most (the CRD's rule over spec.replicaSpecs, and validation.py for jobs admitted
# before it): every replica has a record in the job's status, and the status must fit, with the spec, in one
# etcd object (1.5 MiB). A 1000-replica status at its largest (finished, four containers, names at their
# limits) is ~0.9 MB: tests/controller/test_job_size.py measures it.
MAX_TOTAL_REPLICAS = 1000
# Replicas of one type at most: no type can have more than the whole job (an unbounded count, 1e11 in the
# bad-input corpus, would stall the controller in a single reconcile).
MAX_REPLICAS = MAX_TOTAL_REPLICAS


class JobPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    PAUSED = "Paused"
    RESUMING = "Resuming"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


TERMINAL_PHASES = frozenset({JobPhase.SUCCEEDED, JobPhase.FAILED})


class ReplicaDebugSet(Model):
    type: str = Field(description="Replica type.")
    skip_init_container: bool = Field(False, description="Skips creation of initContainer, if true.")
    command: list[str] | None = Field(None, description='Entrypoint array. Defaults to ["sleep", "inf"].')


class DebugMode(Model):
    enabled: bool = Field(False, description="Whether to enable debug mode.")
    replica_specs: list[ReplicaDebugSet] = Field(default_factory=list,
                                                 description="Overwriting values for job replicas in debug mode.")


class ResumeSpec(Model):
    type: str = Field(description="Replica type.")
    skip_init_container: bool = Field(False, description="Skips creation of initContainer, if true.")
    command: list[str] | None = Field(None, description="Entrypoint array used when resuming.")
    args: list[str] | None = Field(None, description="Arguments to the entrypoint used when resuming.")


class PauseMode(Model):
    enabled: bool = Field(False, description="Whether to enable pause mode.")
    resume_specs: list[ResumeSpec] = Field(default_factory=list,
                                           description="Overwriting values for job replicas when resuming.")


class RunMode(Model):
    debug: DebugMode | None = Field(None, description="Debug mode.")
    pause: PauseMode | None = Field(None, description="Pause mode.")

    @property
    def debugging(self) -> bool:
        return bool(self.debug and self.debug.enabled)

    @property
    def paused(self) -> bool:
        return bool(self.pause and self.pause.enabled)


class T9kScheduler(Model):
    queue: str = Field(description="The name of the queue to use for running this workload.")
    priority: Annotated[int, Field(ge=0, le=100)] = Field(0, description="The priority of the PodGroup, 0-100.")


class SchedulePolicy(Model):
    # to_camel would spell it t9KScheduler; the API (spec/001) says t9kScheduler.
    t9k_scheduler: T9kScheduler | None = Field(None, alias="t9kScheduler", description="T9k Scheduler.")


class Outcome(StrEnum):
    """What a replica has come to for good: it will not be replaced any more."""

    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


@dataclass(frozen=True)
class Verdict:
    """A job's end, as its kind's rules decide it."""

    phase: JobPhase  # Succeeded or Failed
    rule: object  # what was met (the kind's own rule), for tests and messages
    message: str  # for the Completed/Failed conditions and the Event
    reason: str = ""  # the conditions' reason; the phase when empty (e.g. DeadlineExceeded)
    # A failure's replicas that failed for good, the first to name first (cause.py says why they failed).
    replicas: tuple[tuple[str, int], ...] = ()
