"""One way to build a GenericJob in a test, like JobSet's `MakeJobSet(name, ns).ReplicatedJob(...).Obj()`:

    job = JobBuilder("train").replica("worker", 4, template=pod).spec(cleanUpPolicy="All").obj()
    model = JobBuilder("train", namespace="ns", uid="u-1").spec(**raw_spec).model()

Each step returns a new builder (they never share state), so a base builder can be extended in
several ways. `obj()` is the object as kubectl would send it; `model()` the parsed GenericJob.
"""

from __future__ import annotations

import copy
from typing import Any

from controller.kinds.genericjob.models import API_VERSION, KIND, GenericJob


class JobBuilder:
    def __init__(self, name: str = "generic-example", *, namespace: str | None = None, uid: str | None = None,
                 generation: int | None = None) -> None:
        self._metadata: dict[str, Any] = {"name": name}
        for key, value in (("namespace", namespace), ("uid", uid), ("generation", generation)):
            if value is not None:
                self._metadata[key] = value
        self._replicas: list[dict] | None = None  # None: spec(replicaSpecs=...) or nothing
        self._spec: dict[str, Any] = {}

    def _copy(self) -> JobBuilder:
        return copy.deepcopy(self)

    def replica(self, replica_type: str, replicas: int = 1, *, template: dict | None = None,
                restart_policy: dict | None = None) -> JobBuilder:
        """One more entry of spec.replicaSpecs (in order)."""
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
        return {"apiVersion": API_VERSION, "kind": KIND, "metadata": copy.deepcopy(self._metadata), "spec": spec}

    def model(self) -> GenericJob:
        """The parsed job (pydantic validation only; validation.parse adds the controller's own checks)."""
        return GenericJob.from_object(self.obj())
