"""Variable substitution in pod templates (spec/004, section 变量替换).

In every container's and init container's `command`, `args` and `env[].value`:

    $(type)                     the replica's type
    $(rank)                     the replica's rank within its type
    $(replicas[TYPE])           the number of replicas of TYPE
    $(service.TYPE[RANK].host)  the host name of a replica: its Service name `[job]-[TYPE]-[RANK]`
    $(service.port[PORT-NAME])  the port number of a named port in spec.service.ports

Any other `$(...)` is left untouched: it may be a Kubernetes env reference (`$(HOME)`) that the
kubelet expands. `$$` is left untouched too, so `$$(rank)` reaches the kubelet, which turns it into
a literal `$(rank)`: the escape hatch Kubernetes users already know. A recognised form that cannot
be resolved raises `SubstitutionError` naming the field, so a bad spec is reported, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from controller.jobs.schema.naming import replica_name
from controller.jobs.schema.validation import CONTAINER_GROUPS
from controller.kinds.genericjob.models import GenericJob

# One pass over each string. `$$` is matched first so an escaped `$$(rank)` is never expanded.
# The host form is tried before the port form: `$(service.port[0].host)` names a type "port".
_VARIABLE = re.compile(
    r"\$\$"
    r"|\$\((?:"
    r"(?P<type>type)"
    r"|(?P<rank>rank)"
    r"|replicas\[(?P<replicas>[^\[\]()]*)\]"
    r"|service\.(?P<host_type>[^\[\]()]*)\[(?P<host_rank>[^\[\]()]*)\]\.host"
    r"|service\.port\[(?P<port>[^\[\]()]*)\]"
    r")\)"
)



class SubstitutionError(ValueError):
    """A recognised variable that cannot be resolved; `field` is the JSON path of the string."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class JobVariables:
    """What every replica of one job sees: built once per job, shared by its replicas."""

    job_name: str
    replicas: dict[str, int]  # type -> count
    ports: dict[str, int] | None  # port name -> port; None without spec.service

    @classmethod
    def of(cls, job: GenericJob) -> JobVariables:
        replicas: dict[str, int] = {}
        for spec in job.spec.replica_specs:
            replicas.setdefault(spec.type, spec.replicas)  # a duplicate type is validation's to report
        service = job.spec.service
        ports = None if service is None else {p.name: p.port for p in service.ports if p.name}
        return cls(job.name, replicas, ports)

    def for_replica(self, replica_type: str, rank: int) -> Variables:
        return Variables(self, replica_type, rank)


@dataclass(frozen=True, slots=True)
class Variables:
    """The substitution context of one replica (job, type, rank)."""

    job: JobVariables
    replica_type: str
    rank: int

    @classmethod
    def of(cls, job: GenericJob, replica_type: str, rank: int) -> Variables:
        return JobVariables.of(job).for_replica(replica_type, rank)

    def expand(self, text: str, field: str) -> str:
        """`text` with every recognised variable replaced; raises SubstitutionError."""
        if "$" not in text:
            return text
        return _VARIABLE.sub(lambda match: self._value(match, field), text)

    def problems(self, text: str, field: str) -> list[SubstitutionError]:
        """Every unresolvable variable of `text`, for validation to report them all at once."""
        found = []
        for match in _VARIABLE.finditer(text) if "$" in text else ():
            try:
                self._value(match, field)
            except SubstitutionError as err:
                found.append(err)
        return found

    def _value(self, match: re.Match, field: str) -> str:
        variable = match[0]
        if variable == "$$":
            return variable
        if match["type"] is not None:
            return self.replica_type
        if match["rank"] is not None:
            return str(self.rank)
        if match["replicas"] is not None:
            return str(self._count(match["replicas"], variable, field))
        if match["host_type"] is not None:
            return self._host(match["host_type"], match["host_rank"], variable, field)
        return str(self._port(match["port"], variable, field))

    def _count(self, replica_type: str, variable: str, field: str) -> int:
        count = self.job.replicas.get(replica_type)
        if count is None:
            raise SubstitutionError(field, f'{variable}: replica type "{replica_type}" is not in spec.replicaSpecs')
        return count

    def _host(self, replica_type: str, rank_text: str, variable: str, field: str) -> str:
        self._require_service(variable, field)
        count = self._count(replica_type, variable, field)
        if not rank_text.isdigit():
            raise SubstitutionError(field, f'{variable}: rank "{rank_text}" is not a non-negative integer')
        rank = int(rank_text)
        if rank >= count:
            raise SubstitutionError(field, f'{variable}: rank {rank} of "{replica_type}" is out of range [0, {count})')
        return replica_name(self.job.job_name, replica_type, rank)

    def _port(self, name: str, variable: str, field: str) -> int:
        ports = self._require_service(variable, field)
        if name not in ports:
            raise SubstitutionError(field, f'{variable}: no port named "{name}" in spec.service.ports')
        return ports[name]

    def _require_service(self, variable: str, field: str) -> dict[str, int]:
        if self.job.ports is None:
            raise SubstitutionError(field, f"{variable}: service variables need spec.service, which is not set")
        return self.job.ports


def substitutable_strings(pod_spec: dict, field: str) -> Iterator[tuple[list | dict, int | str, str, str]]:
    """(holder, key, text, path) of every string substitution applies to, where holder[key] is text.

    The template is user input kept as a raw dict: anything not shaped as expected is skipped here
    (validation reports the shapes the controller relies on; the API server reports the rest).
    """
    for group in CONTAINER_GROUPS:
        containers = pod_spec.get(group)
        if not isinstance(containers, list):
            continue
        for index, container in enumerate(containers):
            if not isinstance(container, dict):
                continue
            where = f"{field}.{group}[{index}]"
            for key in ("command", "args"):
                values = container.get(key)
                if isinstance(values, list):
                    for position, text in enumerate(values):
                        if isinstance(text, str):
                            yield values, position, text, f"{where}.{key}[{position}]"
            env = container.get("env")
            if isinstance(env, list):
                for position, var in enumerate(env):
                    if isinstance(var, dict) and isinstance(var.get("value"), str):
                        yield var, "value", var["value"], f"{where}.env[{position}].value"


def substitute_pod_spec(pod_spec: dict, variables: Variables, field: str) -> None:
    """Expands the variables of a pod spec in place (the caller owns a copy); `field` is its path."""
    for holder, key, text, path in substitutable_strings(pod_spec, field):
        if isinstance(holder, dict):
            holder[key] = variables.expand(text, path)
        elif isinstance(key, int):  # a list's item
            holder[key] = variables.expand(text, path)


def pod_spec_problems(pod_spec: dict, variables: Variables, field: str) -> list[SubstitutionError]:
    """Every unresolvable variable of a pod spec, without changing it."""
    found = []
    for _holder, _key, text, path in substitutable_strings(pod_spec, field):
        found += variables.problems(text, path)
    return found


def expand_list(values: list[str], variables: Variables, field: str) -> list[str]:
    """A new list of expanded strings (run-mode command and args overrides)."""
    return [variables.expand(text, f"{field}[{index}]") for index, text in enumerate(values)]
