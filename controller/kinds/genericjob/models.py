"""Pydantic models of the GenericJob API (batch.tensorstack.dev/v1beta1).

Field names follow the generated API reference (spec/001) as `../shared/spec/README.md` decides.
Python attributes are snake_case; the JSON names are the camelCase aliases. The pod template is
kept as a raw dict: the controller passes it through untouched, and the CRD preserves it.
The CRD in manifests/ is generated from these models (controller/crd.py).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

GROUP = "batch.tensorstack.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "GenericJob"
PLURAL = "genericjobs"


class Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)


class RestartPolicyType(StrEnum):
    NEVER = "Never"
    ON_FAILURE = "OnFailure"
    ALWAYS = "Always"


class CleanUpPolicy(StrEnum):
    NONE = "None"
    UNFINISHED = "Unfinished"
    ALL = "All"


# Replicas of one type at most: every rank is a pod made and tracked one by one, so an unbounded
# count (1e11 in the bad-input corpus) would stall the controller in a single reconcile.
MAX_REPLICAS = 10_000


class JobPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    PAUSED = "Paused"
    RESUMING = "Resuming"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


TERMINAL_PHASES = frozenset({JobPhase.SUCCEEDED, JobPhase.FAILED})


class RestartPolicy(Model):
    policy: RestartPolicyType = Field(RestartPolicyType.ON_FAILURE,
                                      description="The policy to restart finished replica.")
    limit: Annotated[int, Field(ge=0)] = Field(0, description="The maximum number of restarts per replica.")


class ReplicaSpec(Model):
    type: Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")] = Field(
        description="Replica type.")
    replicas: Annotated[int, Field(ge=0, le=MAX_REPLICAS)] = Field(
        1, description="The desired number of replicas of this type.")
    restart_policy: RestartPolicy = Field(default_factory=RestartPolicy,
                                          description="Restart policy for replicas of this replica type.")
    template: dict[str, Any] = Field(description="Defines the template used to create pods.")


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


# What the Service API accepts in a port (ValidateService), so the CRD refuses at apply time what
# every Service create would refuse later: a port name is a DNS-1123 label; a targetPort by name
# an IANA_SVC_NAME (<= 15 characters, lower case letters, digits and single inner hyphens, at
# least one letter); numbers 1-65535; protocols TCP, UDP, SCTP. nodePort has no place on the
# headless Services the controller makes.
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
IANA_SVC_NAME = r"^([a-z0-9]+-)*[a-z0-9]*[a-z][a-z0-9]*(-[a-z0-9]+)*$"
MAX_SERVICE_PORTS = 64  # bounds the cost of the CEL rules over spec.service.ports

PortNumber = Annotated[int, Field(ge=1, le=65535)]


class PortProtocol(StrEnum):
    TCP = "TCP"
    UDP = "UDP"
    SCTP = "SCTP"


class ServicePort(Model):
    name: Annotated[str, Field(max_length=63, pattern=DNS1123_LABEL)] | None = Field(
        None, description="The name of this port within the service: a DNS-1123 label, required with several ports.")
    port: PortNumber = Field(description="The port that will be exposed by this service.")
    # Strict: "8080" is a (bad) port name, as in an IntOrString, not a number.
    target_port: Annotated[int, Field(strict=True, ge=1, le=65535)] | Annotated[
        str, Field(max_length=15, pattern=IANA_SVC_NAME)] | None = Field(
        None, description="Number (1-65535) or name (an IANA_SVC_NAME) of the port to access on the pods.")
    protocol: PortProtocol | None = Field(None, description="The IP protocol for this port: TCP, UDP or SCTP.")


class ServiceOption(Model):
    ports: Annotated[list[ServicePort], Field(max_length=MAX_SERVICE_PORTS)] = Field(
        default_factory=list, description="The ports exposed by each replica's Service.")

    @field_validator("ports")
    @classmethod
    def _ports_as_a_service_takes_them(cls, ports: list[ServicePort]) -> list[ServicePort]:
        names = [p.name for p in ports if p.name]
        if len(ports) > 1 and len(names) < len(ports):
            raise ValueError("with more than one port, every port needs a name")
        if len(set(names)) < len(names):
            raise ValueError("port names must be unique")
        pairs = [(p.port, p.protocol or PortProtocol.TCP) for p in ports]
        if len(set(pairs)) < len(pairs):
            raise ValueError("a port number may appear once per protocol")
        return ports


class T9kScheduler(Model):
    queue: str = Field(description="The name of the queue to use for running this workload.")
    priority: Annotated[int, Field(ge=0, le=100)] = Field(0, description="The priority of the PodGroup, 0-100.")


class SchedulePolicy(Model):
    # to_camel would spell it t9KScheduler; the API (spec/001) says t9kScheduler.
    t9k_scheduler: T9kScheduler | None = Field(None, alias="t9kScheduler", description="T9k Scheduler.")


# A finish rule maps replica types to ranks; ranks are ints or strings holding an int (IntOrString).
FinishRule = dict[str, list[int]]


def _parse_rank(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"rank {value!r} is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise ValueError(f"rank {value!r} is not an integer")


class GenericJobSpec(Model):
    success_rules: list[FinishRule] | None = Field(None, description=(
        "Rules used to check if the job has succeeded: it succeeds when any rule is fulfilled, a rule being "
        "fulfilled when all the replicas it names have succeeded. Default: every replica succeeded."))
    failure_rules: list[FinishRule] | None = Field(None, description=(
        "Rules used to check if the job has failed: it fails when any rule is fulfilled, a rule being fulfilled "
        "when all the replicas it names have failed for good. Default: any replica failed for good."))
    service: ServiceOption | None = Field(None, description="Details of the v1/Service of each replica pod.")
    run_mode: RunMode = Field(default_factory=RunMode, description="Job running mode. Defaults to Immediate.")
    clean_up_policy: CleanUpPolicy = Field(CleanUpPolicy.NONE, description=(
        "Which replicas to delete once the job has finished: None, Unfinished or All."))
    scheduler: SchedulePolicy | None = Field(None, description="The scheduler that dispatches the pods.")
    replica_specs: Annotated[list[ReplicaSpec], Field(min_length=1)] = Field(
        description="List of replica specs belonging to the job.")

    @field_validator("success_rules", "failure_rules", mode="before")
    @classmethod
    def _ranks_as_ints(cls, rules: Any) -> Any:
        if not isinstance(rules, list):
            return rules
        out = []
        for rule in rules:
            if not isinstance(rule, dict):
                return rules  # let the type check name the problem
            out.append({k: [_parse_rank(r) for r in v] if isinstance(v, list) else v for k, v in rule.items()})
        return out

    def replica(self, replica_type: str) -> ReplicaSpec | None:
        return next((r for r in self.replica_specs if r.type == replica_type), None)


class GenericJob(Model):
    """The parts of a GenericJob object the controller reads, parsed once per generation."""

    name: str
    namespace: str
    uid: str
    generation: int
    spec: GenericJobSpec

    @classmethod
    def from_object(cls, obj: dict) -> GenericJob:
        meta = obj["metadata"]
        return cls(name=meta["name"], namespace=meta.get("namespace", ""), uid=meta.get("uid", ""),
                   generation=meta.get("generation", 0), spec=obj.get("spec") or {})
