"""Pydantic models of the GenericJob API (batch.tensorstack.dev/v1beta1).

Field names follow the generated API reference, as docs/SPEC-DECISIONS.md says.
Python attributes are snake_case; the JSON names are the camelCase aliases. The pod template is
kept as a raw dict: the controller passes it through untouched (the CRD checks it against Kubernetes'
PodTemplateSpec schema).
The CRD in manifests/ is generated from these models (controller/kinds/genericjob/crd.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, field_validator

from controller.jobs.kind import KindApi
from controller.jobs.schema.api import (
    MAX_REPLICAS,
    CleanUpPolicy,
    JobObject,
    Model,
    RunMode,
    SchedulePolicy,
)

GROUP = "batch.tensorstack.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "GenericJob"
PLURAL = "genericjobs"
# The engine's view of the API: also the prefix of the labels on every pod and Service of a GenericJob.
LABEL_PREFIX = "genericjob.batch.tensorstack.dev"
API = KindApi(GROUP, VERSION, KIND, PLURAL, label_prefix=LABEL_PREFIX)
LABEL_JOB_NAME = f"{LABEL_PREFIX}/name"
LABEL_JOB_UID = f"{LABEL_PREFIX}/uid"
LABEL_REPLICA_TYPE = f"{LABEL_PREFIX}/replica-type"
LABEL_RANK = f"{LABEL_PREFIX}/rank"


class RestartPolicyType(StrEnum):
    NEVER = "Never"
    ON_FAILURE = "OnFailure"
    ALWAYS = "Always"


class RestartPolicy(Model):
    policy: RestartPolicyType = Field(RestartPolicyType.ON_FAILURE,
                                      description="The policy to restart finished replica.")
    limit: Annotated[int, Field(ge=0)] = Field(0, description="The maximum number of restarts per replica.")

    # The engine's RestartRule (controller/jobs/kind.py): the limit is per replica, the policy reads phases only.

    @property
    def counts_lost_pods(self) -> bool:
        return self.policy != RestartPolicyType.NEVER

    def can_restart(self, restart_count: int, job_restarts: int = 0) -> bool:
        return restart_count < self.limit

    def replaces(self, phase: str, restart_count: int, containers: Sequence[dict] = (), job_restarts: int = 0) -> bool:
        if phase == "Succeeded":
            return self.policy == RestartPolicyType.ALWAYS and self.can_restart(restart_count)
        if phase == "Failed":
            return self.policy != RestartPolicyType.NEVER and self.can_restart(restart_count)
        return False

    def why_final(self, restart_count: int, containers: Sequence[dict] = (), job_restarts: int = 0) -> tuple[bool, str]:
        if self.policy == RestartPolicyType.NEVER:
            return False, "under restart policy Never"
        if self.limit == 0:  # no limit ran out: none was granted
            return False, f"under restart policy {self.policy} with limit 0 (no restarts)"
        return True, f"after {restart_count} of {self.limit} restarts"

    def restart_text(self, restart_count: int, job_restarts: int = 0) -> str:
        """The Restarting Event's count: the replica's own restarts (this one included) against its limit."""
        return f"restart {restart_count} of {self.limit}"


class ReplicaSpec(Model):
    type: Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")] = Field(
        description="Replica type.")
    replicas: Annotated[int, Field(ge=0, le=MAX_REPLICAS)] = Field(
        1, description="The desired number of replicas of this type.")
    restart_policy: RestartPolicy = Field(default_factory=RestartPolicy,
                                          description="Restart policy for replicas of this replica type.")
    template: dict[str, Any] = Field(description="Defines the template used to create pods.")


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


class GenericJob(JobObject):
    """The parts of a GenericJob object the controller reads, parsed once per generation."""

    spec: GenericJobSpec
