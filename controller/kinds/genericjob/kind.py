"""GenericJob as the engine sees it: the `JobKind` that plugs it into controller/jobs.

Everything here is GenericJob's own: its API and labels, parsing and validation, its CRD, where its
status keeps the replicas (`tasks[].replicas[]`), per-replica restart limits, the success and failure rules,
variable substitution in the pod and in run-mode overrides, and `spec.service`'s ports. It has no deadline
and no dependents (KindBase's defaults).
"""

from __future__ import annotations

from controller.jobs.children.pods import Override, apply_override
from controller.jobs.decisions.status_codec import TasksStatus
from controller.jobs.kind import KindBase, Outcomes
from controller.jobs.schema.api import Verdict
from controller.kinds.genericjob import crd, rules, validation
from controller.kinds.genericjob.models import API, GenericJob, RestartPolicy
from controller.kinds.genericjob.substitution import Variables, expand_list, substitute_pod_spec
from controller.kinds.genericjob.validation import SpecError


class GenericJobKind(KindBase[GenericJob]):
    api = API
    model = GenericJob  # the parsed model, as the training kinds name theirs (tests/builders.py builds any kind's)
    status = TasksStatus("replicas")  # status.tasks[]: {type, restartCount, replicas: [records]}

    def parse(self, obj: dict) -> GenericJob | list[SpecError]:
        job = validation.parse(obj)
        if isinstance(job, GenericJob):
            return validation.validate(job) or job
        return job

    def crd(self) -> dict:
        return crd.genericjob_crd()

    def restart_rule(self, job: GenericJob, replica_type: str) -> RestartPolicy:
        spec = job.spec.replica(replica_type)
        return spec.restart_policy if spec is not None else RestartPolicy()

    def verdict(self, job: GenericJob, outcomes: Outcomes) -> Verdict | None:
        return rules.evaluate(job.spec, outcomes)

    def decorate_pod(self, job: GenericJob, replica_type: str, rank: int, index: int, pod_spec: dict,
                     override: Override | None) -> None:
        variables = Variables.of(job, replica_type, rank)
        substitute_pod_spec(pod_spec, variables, f"spec.replicaSpecs[{index}].template.spec")
        apply_override(override, pod_spec, lambda values, field: expand_list(values, variables, field))

    def service_ports(self, job: GenericJob, replica_type: str = "") -> list[dict] | None:
        """spec.service.ports with the API server's defaults filled in (targetPort = port, TCP), so the
        desired object compares equal to the stored one; None without spec.service."""
        if job.spec.service is None:
            return None
        ports = []
        for port in job.spec.service.ports:
            entry: dict = {"name": port.name} if port.name else {}
            entry["port"] = port.port
            entry["targetPort"] = port.target_port if port.target_port is not None else port.port
            entry["protocol"] = str(port.protocol or "TCP")
            ports.append(entry)
        return ports


GENERICJOB = GenericJobKind()
