"""The seam between the engine and a job kind: what a kind provides, and nothing more.

The engine (this package) plans and reconciles any job whose parsed form offers the fields of
`ParsedJob`; the kind (a package under controller/kinds/) supplies a `JobKind[J]`, J its parsed model,
usually by subclassing `KindBase[J]`, which supplies every default, so a kind writes only what is its own:

- its API (`KindApi`: group, version, kind, plural, the prefix of the labels on its children);
- parsing and validation of an object into its model, or the errors naming each bad field;
- its CRD (with its printer columns), generated from its models;
- the status codec: where replica records and counters live in its status;
- the restart rule of each replica (`RestartRule`: may this replica's finished pod be replaced);
- the verdict: has the job succeeded or failed, given what each replica has come to for good;
- pod decoration (its environment, variables, run-mode overrides) and the ports of the Services it wants;
- replicas that depend on each other: the start order (`start_after`) and the group restart (`restart_together`);
  one headless Service for the whole job (`subdomain_ports`);
- the replicas the engine runs of each type (`replica_counts`: the written counts by default; an elastic kind
  computes its own), the labels it adds to every template (`template_labels`), the PodGroup's gang size
  (`min_member`), and what an edit may not change beyond what `parse` checks (`update_problems`, the admission
  webhook's update rule): defaults in KindBase.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from apimachinery.resource import Resource
from controller.jobs.schema.api import CleanUpPolicy, Outcome, RunMode, SchedulePolicy, Verdict

Outcomes = Mapping[tuple[str, int], Outcome | None]  # by (type, rank); None: not decided yet


@dataclass(frozen=True)
class KindApi:
    group: str
    version: str
    kind: str
    plural: str
    label_prefix: str  # `<prefix>/name`, `/uid`, `/replica-type`, `/rank` on every child
    # The four label keys, made once (they are read for every pod of every reconcile).
    name_label: str = field(init=False)
    uid_label: str = field(init=False)
    type_label: str = field(init=False)
    rank_label: str = field(init=False)

    def __post_init__(self) -> None:
        for key, suffix in (("name_label", "name"), ("uid_label", "uid"), ("type_label", "replica-type"),
                            ("rank_label", "rank")):
            object.__setattr__(self, key, f"{self.label_prefix}/{suffix}")

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def resource(self) -> Resource:
        return Resource(self.group, self.version, self.plural)

    @property
    def children_selector(self) -> str:
        """The label selector of this kind's children (pods, Services, PodGroups, dependents): they all carry
        `<prefix>/uid`, and always have, so children made by any earlier version are selected too. The child
        informers list and watch with it, so the controller's memory follows its jobs, not the cluster."""
        return self.uid_label

    def owns(self, ref: Mapping) -> bool:
        """Is this ownerReference one of this kind's jobs?"""
        return ref.get("kind") == self.kind and str(ref.get("apiVersion", "")).startswith(f"{self.group}/")


# Read-only members (properties): a parsed job is a frozen model, and a kind's narrower types (an enum of
# replica types, its own spec) satisfy them.
class ReplicaSpec(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def replicas(self) -> int: ...
    @property
    def template(self) -> dict[str, Any]: ...


class JobSpec(Protocol):
    @property
    def replica_specs(self) -> Sequence[ReplicaSpec]: ...
    @property
    def run_mode(self) -> RunMode: ...
    @property
    def clean_up_policy(self) -> CleanUpPolicy: ...
    @property
    def scheduler(self) -> SchedulePolicy | None: ...


class ParsedJob(Protocol):
    """What the engine reads of a parsed job, whatever its kind."""

    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def generation(self) -> int: ...
    @property
    def spec(self) -> JobSpec: ...


class RestartRule(Protocol):
    """The restart policy of one replica, as the engine asks it."""

    @property
    def limit(self) -> int | None:
        """Restarts allowed (shown in the Restarting Event); None: no limit."""

    @property
    def counts_lost_pods(self) -> bool:
        """A pod lost while running (deleted, evicted) is a restart to count, and refused past the limit.
        False: the pod is recreated without counting (as under policy Never)."""

    def can_restart(self, restart_count: int, job_restarts: int = 0) -> bool:
        """Within the limit: the replica's (`restart_count`) or the job's (`job_restarts`, every replica's
        restarts so far, those granted earlier in the same reconcile included)."""

    def replaces(self, phase: str, restart_count: int, containers: Sequence[dict], job_restarts: int = 0) -> bool:
        """A pod of the replica finished with `phase` (Succeeded or Failed), after `restart_count` restarts
        (`job_restarts` for the whole job), its containers as the replica record has them
        (`{name, state, exitCode}`): is it replaced?"""

    def why_final(self, restart_count: int, containers: Sequence[dict], job_restarts: int = 0) -> tuple[bool, str]:
        """Why a failed pod of the replica is not replaced (it failed for good): did its limit, or the job's
        budget, run out (the job fails BackoffLimitExceeded rather than ReplicaFailed), and the words that
        say so after "replica worker-1 failed with exit code 1", e.g. "after 2 of 2 restarts" or
        "under restart policy Never"."""


class StatusCodec(Protocol):
    """Where a kind keeps its replica records and counters in its status."""

    def stored_records(self, status: Mapping) -> dict[str, dict]:
        """The stored replica records by pod name, as stored (JSON: status.read_record makes them Replicas)."""

    def stored_types(self, status: Mapping) -> list[tuple[str, list[dict]]]:
        """The stored records grouped by replica type, in stored order."""

    def replica_fields(self, records_by_type: Iterable[tuple[str, list[Any]]]) -> dict:
        """The status fields that describe the replicas (records, counts, restart counters)."""

    def with_removed(self, status: dict, removed: Mapping[str, list[Any]], carried: Mapping[str, int]) -> dict:
        """`status` with the records of ranks scaled away, and the restarts of records dropped for size."""


NO_STATUS: Mapping[str, Any] = MappingProxyType({})  # (a job with no status yet)


class Dependent(NamedTuple):
    """An API of objects a kind's jobs own besides pods, Services and the PodGroup, as the kind declares it."""

    resource: Resource
    kind: str  # for messages: "Error creating <kind> <name>"
    verbs: tuple[str, ...] = ("list", "watch", "create", "patch")  # the RBAC the controller needs on it
    # A minimal CRD of the API for `local` and the tests, where the API is another's (the default install
    # never claims it); None when the cluster always has the API.
    local_crd: Callable[[], dict] | None = None
    # The top-level fields of an object kept in step with what the job wants (a merge patch of each): a
    # TensorBoard's `spec`, a ConfigMap's `data`; () for an object created once and never changed after (a
    # Secret of generated keys, which must not rotate under the job).
    follows: tuple[str, ...] = ("spec",)


class SpecProblem(Protocol):
    @property
    def field(self) -> str: ...
    @property
    def message(self) -> str: ...


MESSAGE_ERRORS_SHOWN = 5  # a condition message and an Event stay readable with many errors


def invalid_spec_message(problems: Sequence[SpecProblem]) -> str:
    """One line for the Failed condition and the Warning Event: the first few problems (`field: message`)."""
    shown = "; ".join(f"{problem.field}: {problem.message}" for problem in problems[:MESSAGE_ERRORS_SHOWN])
    hidden = len(problems) - MESSAGE_ERRORS_SHOWN
    return f"{shown}; and {hidden} more" if hidden > 0 else shown


J = TypeVar("J", bound=ParsedJob)  # a kind's parsed model


class JobKind(Protocol[J]):
    """What the engine asks of a kind; J is the kind's parsed model, which every method receives."""

    @property
    def api(self) -> KindApi: ...

    @property
    def status(self) -> StatusCodec: ...

    @property
    def dependent_resources(self) -> tuple[Dependent, ...]:
        """APIs of objects the kind's jobs own besides pods, Services and the PodGroup (a training job's
        TensorBoard), with their kind and the RBAC they need. An API may be missing from a cluster: the
        controller watches each once it is served."""

    def parse(self, obj: dict) -> J | Sequence[SpecProblem]:
        """The job, parsed and validated; or every problem found (a list), each naming its field."""

    def update_problems(self, old: dict, new: dict) -> Sequence[SpecProblem]:
        """What an edit may not change beyond what `parse` checks (the admission webhook's update rule)."""

    def invalid_spec_message(self, problems: Sequence[SpecProblem]) -> str:
        """The InvalidSpec condition's message and Event."""

    def crd(self) -> dict:
        """The kind's CustomResourceDefinition."""

    def replica_counts(self, job: J) -> dict[str, int]:
        """The replicas the engine runs of each type, in spec order."""

    def template_labels(self, job: J, replica_type: str) -> Mapping[str, str]:
        """Labels the kind adds to every pod of a type, over the template's own (the engine's win over both)."""

    def min_member(self, job: J) -> int | None:
        """The PodGroup's gang when smaller than every replica (an elastic job's lower bound); None: all."""

    def restart_rule(self, job: J, replica_type: str) -> RestartRule:
        """The restart rule of one replica type."""

    def verdict(self, job: J, outcomes: Outcomes) -> Verdict | None:
        """Succeeded or Failed, given each replica's outcome for good; None while undecided."""

    def active_deadline(self, job: J) -> float | None:
        """Seconds the job may be active after its startTime before it fails (DeadlineExceeded); None: no
        deadline."""

    def decorate_pod(self, job: J, replica_type: str, rank: int, index: int, pod_spec: dict,
                     override: Any) -> None:
        """The kind's changes to a replica's pod spec (a copy of its template's spec), in place: its variables
        and environment, and `override` (pods.Override, the run mode's command and args; None for none)."""

    def dependents(self, job: J, status: Mapping[str, Any] = NO_STATUS) -> dict[Resource, dict]:
        """The dependent objects the job wants, by resource: created, kept in step with it (a merge patch of
        each field its `Dependent.follows`), left in place when the job finishes (they go with the job).
        `status`: the job's status as this reconcile writes it (its replica records: an MPI job's
        discover_hosts.sh names the workers Running)."""

    def dependent_status(self, job: J, observed: Mapping[Resource, list[dict] | None],
                         actions: Mapping[Resource, str]) -> dict:
        """Status fields that report the dependents (`observed`: the job's objects of each resource, None
        where the cluster has no such API; `actions`: Create, Update or NOP, what this reconcile does).
        A value with "type": "Warning" is announced by a Warning Event when its reason changes."""

    def start_after(self, job: J) -> Mapping[str, tuple[str, ...]]:
        """The start order: for a replica type, the types every replica of which must be Running and Ready
        before a pod of it is created (an MPI launcher after its workers); a type left out starts at once."""

    def restart_together(self, job: J) -> Mapping[str, tuple[str, ...]]:
        """The group restart: for a replica type, the types whose pods are retired (uncounted) when a replica
        of it is restarted, to be made again by the start order (a failed MPI worker takes the launcher with
        it). Replicas of a group restarted in one reconcile count one restart."""

    def subdomain_ports(self, job: J) -> list[dict] | None:
        """The ports of one headless Service named after the job and selecting all its pods (the subdomain of
        pods that set `hostname` and `subdomain`, as an MPI job's hostfile names them); None: no such Service."""

    def service_ports(self, job: J, replica_type: str) -> list[dict] | None:
        """The ports of the headless Service of each replica of a type, with the API server's defaults filled
        in (so they compare equal to a stored Service's); None when that type wants no Services."""


class KindBase(ABC, Generic[J]):
    """A `JobKind[J]` with every default: a kind subclasses it, sets `api` and `status`, and writes `parse`,
    `crd`, `restart_rule`, `verdict` and `decorate_pod`, and whatever else is its own."""

    api: KindApi
    status: StatusCodec
    dependent_resources: tuple[Dependent, ...] = ()

    @abstractmethod
    def parse(self, obj: dict) -> J | Sequence[SpecProblem]: ...

    @abstractmethod
    def crd(self) -> dict: ...

    @abstractmethod
    def restart_rule(self, job: J, replica_type: str) -> RestartRule: ...

    @abstractmethod
    def verdict(self, job: J, outcomes: Outcomes) -> Verdict | None: ...

    @abstractmethod
    def decorate_pod(self, job: J, replica_type: str, rank: int, index: int, pod_spec: dict,
                     override: Any) -> None: ...

    def update_problems(self, old: dict, new: dict) -> Sequence[SpecProblem]:
        return []

    def invalid_spec_message(self, problems: Sequence[SpecProblem]) -> str:
        return invalid_spec_message(problems)

    def replica_counts(self, job: J) -> dict[str, int]:
        return {spec.type: spec.replicas for spec in job.spec.replica_specs}

    def template_labels(self, job: J, replica_type: str) -> Mapping[str, str]:
        return {}

    def min_member(self, job: J) -> int | None:
        return None

    def active_deadline(self, job: J) -> float | None:
        return None

    def dependents(self, job: J, status: Mapping[str, Any] = NO_STATUS) -> dict[Resource, dict]:
        return {}

    def dependent_status(self, job: J, observed: Mapping[Resource, list[dict] | None],
                         actions: Mapping[Resource, str]) -> dict:
        return {}

    def start_after(self, job: J) -> Mapping[str, tuple[str, ...]]:
        return {}

    def restart_together(self, job: J) -> Mapping[str, tuple[str, ...]]:
        return {}

    def subdomain_ports(self, job: J) -> list[dict] | None:
        return None

    def service_ports(self, job: J, replica_type: str) -> list[dict] | None:
        return None
