"""One way to build a job of any kind in a test, like JobSet's `MakeJobSet(name, ns).ReplicatedJob(...).Obj()`:

    job = JobBuilder("train").replica("worker", 4, template=pod).spec(cleanUpPolicy="All").obj()
    model = JobBuilder("train", namespace="ns", uid="u-1").spec(**raw_spec).model()
    tf = JobBuilder("tf", kind=TENSORFLOW).replica("chief", template=pod, restart_policy="ExitCode").obj()

Each step returns a new builder (they never share state), so a base builder can be extended in
several ways. `obj()` is the object as kubectl would send it; `model()` the parsed job (a GenericJob by
default; `kind` is the name of any kind of the registry, `GENERICJOB` or `TENSORFLOW` say).
"""

from __future__ import annotations

import copy
from typing import Any

from controller.jobs.schema.api import JobObject
from controller.kinds import registry

GENERICJOB, TENSORFLOW, PYTORCH, MPIJOB = "GenericJob", "TensorFlowTrainingJob", "PyTorchTrainingJob", "MPIJob"


def _kind(name: str) -> Any:
    """The registered kind of that name (the registry's at the time: a kind a test registers is built too)."""
    if name not in registry.KINDS:
        raise ValueError(f"no builder for kind {name!r} (known: {', '.join(registry.KINDS)})")
    return registry.KINDS[name]


class JobBuilder:
    def __init__(self, name: str = "generic-example", *, kind: str = GENERICJOB, namespace: str | None = None,
                 uid: str | None = None, generation: int | None = None) -> None:
        _kind(kind)
        self._kind = kind
        self._metadata: dict[str, Any] = {"name": name}
        for key, value in (("namespace", namespace), ("uid", uid), ("generation", generation)):
            if value is not None:
                self._metadata[key] = value
        self._replicas: list[dict] | None = None  # None: spec(replicaSpecs=...) or nothing
        self._spec: dict[str, Any] = {}

    def _copy(self) -> JobBuilder:
        return copy.deepcopy(self)

    def replica(self, replica_type: str, replicas: int = 1, *, template: dict | None = None,
                restart_policy: dict | str | None = None) -> JobBuilder:
        """One more entry of spec.replicaSpecs (in order); `restart_policy` as the kind spells it (a GenericJob's
        `{policy, limit}`, a TensorFlowTrainingJob's "ExitCode")."""
        made = self._copy()
        entry: dict[str, Any] = {"type": replica_type, "replicas": replicas}
        if template is not None:
            entry["template"] = template
        if restart_policy is not None:
            entry["restartPolicy"] = restart_policy
        made._replicas = [*(made._replicas or []), entry]
        return made

    def spec(self, **fields: Any) -> JobBuilder:
        """Spec fields by their JSON (camelCase) names, merged over what is set; `replicaSpecs` given here
        replaces the replicas added with `replica()`."""
        made = self._copy()
        if "replicaSpecs" in fields:
            made._replicas = None
        made._spec.update(copy.deepcopy(fields))
        return made

    def meta(self, **fields: Any) -> JobBuilder:
        """Metadata fields by their JSON names (resourceVersion, annotations, ...)."""
        made = self._copy()
        made._metadata.update(copy.deepcopy(fields))
        return made

    def labels(self, labels: dict[str, str]) -> JobBuilder:
        made = self._copy()
        made._metadata["labels"] = dict(labels)
        return made

    def obj(self) -> dict:
        spec = dict(self._spec)
        if self._replicas is not None:
            spec = {"replicaSpecs": copy.deepcopy(self._replicas), **spec}
        return {"apiVersion": _kind(self._kind).api.api_version, "kind": self._kind,
                "metadata": copy.deepcopy(self._metadata), "spec": spec}

    def model(self) -> JobObject:
        """The parsed job (pydantic validation only; validation.parse adds the controller's own checks)."""
        model: type[JobObject] = _kind(self._kind).model
        return model.from_object(self.obj())
