"""The TensorBoard of a training job (`spec.tensorboardSpec`): a `tensorstack.dev/v1beta1` TensorBoard named
like the job, owned by it, with the tensorboardSpec as its spec (kept in step, left in place when the job
finishes: it goes with the job), reported in `status.tensorboard` as a DependentStatus. The API is the
platform's; where the cluster has none, the status says so as a Warning and the job runs anyway.

`TensorBoardSpec`: the fields of T9k's TensorBoard spec (T9k's API reference) that `spec.tensorboardSpec` may
carry: the log filesets or data sources, the image, suspend and run mode, the scheduler queue and the
container's resources. Nothing else: the CRD's schema is made from these models, so the API server prunes (or,
under fieldValidation=Strict, refuses) any other field, such as a pod template, and the controller copies into
the TensorBoard only what parsed here (`TensorBoardSpec.as_given`).

`tensorboard_crd()` is a minimal CRD of that API for `genericjob-controller local` and the tests only (its spec
has the fields of T9k's TensorBoardSpec, as the job's tensorboardSpec): the default install never claims a kind
the platform owns.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol

from pydantic import Field

from apimachinery.resource import Resource
from controller.jobs.kind import Dependent, JobSpec, KindApi, ParsedJob
from controller.jobs.schema import crd as generic
from controller.jobs.schema.api import Model
from controller.jobs.schema.naming import job_labels, owner_reference

GROUP = "tensorstack.dev"
VERSION = "v1beta1"
KIND = "TensorBoard"
PLURAL = "tensorboards"
RESOURCE = Resource(GROUP, VERSION, PLURAL)


class PVCDataSource(Model):
    name: str = Field(description="The PVC's name.")
    sub_path: list[str] | None = Field(None, description="The relative paths of the logs in the PVC.")


class SecretRef(Model):
    name: str = Field(description="The Secret's name.")


class S3DataSource(Model):
    secret_ref: SecretRef | None = Field(None, description=(
        "The Secret holding the access key, secret key and service endpoint."))
    uri: list[str] | None = Field(None, description="S3 object URIs.")


class HttpDataSource(Model):
    url: list[str] | None = Field(None, description="URLs of the log files.")


class TensorBoardDataSource(Model):
    pvc: list[PVCDataSource] | None = Field(None, description="PVCs mounted into the TensorBoard's pod.")
    s3: S3DataSource | None = Field(None, description="An S3 service and the Secret to reach it.")
    http: HttpDataSource | None = Field(None, description="HTTP URLs.")


class TensorBoardQueue(Model):
    queue: str = Field(description="The name of the queue to use with the T9k Scheduler.")


class TensorBoardSchedulePolicy(Model):
    t9k_scheduler: TensorBoardQueue | None = Field(None, alias="t9kScheduler", description="T9k Scheduler.")


class TensorBoardSpec(Model):
    training_log_filesets: list[str] | None = Field(None, description=(
        "The filesets holding the training logs: t9k://pvc/[pvc-name]/[subpath] or "
        "t9k://minio/[secret-name]/[bucket]/[subpath]."))
    log_dir: TensorBoardDataSource | None = Field(None, description="The data sources holding the training logs.")
    image: str | None = Field(None, description="The container image that runs TensorBoard.")
    suspend: bool | None = Field(None, description="Whether the TensorBoard's pod is deleted (kept resources stay).")
    run_mode: str | None = Field(None, description="The TensorBoard's run mode (older API): running or paused.")
    scheduler: TensorBoardSchedulePolicy | None = Field(None, description=(
        "The scheduler that runs the TensorBoard's pod."))
    resources: dict[str, Any] | None = Field(None, description=(
        "The compute resources of the TensorBoard's container (a Kubernetes ResourceRequirements)."))

    def as_given(self) -> dict:
        """The spec as the user wrote it, limited to these fields: what the TensorBoard gets."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class BoardSpec(JobSpec, Protocol):
    @property
    def tensorboard_spec(self) -> TensorBoardSpec | None: ...


class WithTensorBoard(ParsedJob, Protocol):
    """A parsed job that may ask for a TensorBoard."""

    @property
    def spec(self) -> BoardSpec: ...


def desired(job: WithTensorBoard, api: KindApi) -> dict | None:
    """The TensorBoard the job asks for, or None without a tensorboardSpec; `api`: the job's kind (labels and
    owner)."""
    if job.spec.tensorboard_spec is None:
        return None
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": job.name, "namespace": job.namespace, "labels": job_labels(api, job.name, job.uid),
                     "ownerReferences": [owner_reference(api, job.name, job.uid)]},
        "spec": job.spec.tensorboard_spec.as_given(),
    }


def status(job: WithTensorBoard, observed: list[dict] | None, action: str) -> dict | None:
    """`status.tensorboard`: None without a tensorboardSpec; `observed` the job's TensorBoards in the cache
    (None: the cluster has no TensorBoard API); `action` what this reconcile does (Create, Update, NOP)."""
    if job.spec.tensorboard_spec is None:
        return None
    reference = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "name": job.name, "namespace": job.namespace}
    if observed is None:
        return {"dependent": reference, "ready": False, "action": "NOP", "reason": "DependentAPIMissing",
                "note": f"The cluster has no TensorBoard API ({PLURAL}.{GROUP}/{VERSION}): the job runs without "
                        "its TensorBoard", "type": "Warning"}
    current = next((o for o in observed if o["metadata"]["name"] == job.name), None)
    if current is None:
        return {"dependent": reference, "ready": False, "action": action, "reason": "DependentNotReady",
                "note": f"TensorBoard [{job.name}] is being created", "type": "Normal"}
    reference["uid"] = current["metadata"].get("uid", "")
    ready = bool((current.get("status") or {}).get("ready"))
    return {"dependent": reference, "ready": ready, "action": action,
            "reason": "DependentReady" if ready else "DependentNotReady",
            "note": f"TensorBoard [{job.name}] is {'ready' if ready else 'not ready'}", "type": "Normal"}


def tensorboard_crd() -> dict:
    """A minimal CRD of the TensorBoard API, for `local` and the tests (not in the default install)."""
    preserved = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": KIND, "listKind": f"{KIND}List", "plural": PLURAL, "singular": KIND.lower()},
            "scope": "Namespaced",
            "versions": [{"name": VERSION, "served": True, "storage": True, "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                              "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                              "metadata": {"type": "object"},
                              "spec": {**spec_schema(), "nullable": True,  # as a job's optional tensorboardSpec
                                       "description": "As the platform's TensorBoard spec (its fields only)."},
                              "status": {**preserved, "properties": {"ready": {"type": "boolean"}}}}}}}],
        },
    }


def spec_schema(generated: dict | None = None) -> dict:
    """T9k's TensorBoardSpec fields and no others, from `generated` (a job spec's `tensorboardSpec` as its
    model makes it; by default the model's own): an unknown field, such as a pod template, is pruned by the
    API server, or refused under fieldValidation=Strict. `resources` is a Kubernetes ResourceRequirements,
    checked as a container's is."""
    schema = copy.deepcopy(generated if generated is not None
                           else generic.structural(TensorBoardSpec.model_json_schema(by_alias=True)))
    resources = generic.template_schema("")["properties"]["spec"]["properties"]["containers"]["items"]
    schema["properties"]["resources"] = {**resources["properties"]["resources"],
                                         "description": schema["properties"]["resources"]["description"]}
    return schema


# Watched, created, and its spec patched to follow tensorboardSpec; never deleted (it goes with the job).
DEPENDENT = Dependent(RESOURCE, KIND, ("list", "watch", "create", "patch"), local_crd=tensorboard_crd)
