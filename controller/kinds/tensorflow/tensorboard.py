"""The TensorBoard of a TensorFlowTrainingJob (`spec.tensorboardSpec`): a `tensorstack.dev/v1beta1`
TensorBoard named like the job, owned by it, with the tensorboardSpec as its spec (kept in step,
left in place when the job finishes: it goes with the job), reported in `status.tensorboard` as a
DependentStatus. The API is the platform's; where the cluster has none, the status says so as a
Warning and the job runs anyway.

`tensorboard_crd()` is a minimal CRD of that API for `genericjob-controller local` and the tests only (its spec
has the fields of T9k's TensorBoardSpec, as the job's tensorboardSpec): the default install never claims a kind
the platform owns.
"""

from __future__ import annotations

from apimachinery.resource import Resource
from controller.jobs.kind import Dependent
from controller.jobs.schema.naming import job_labels, owner_reference
from controller.kinds.tensorflow.crd import spec_schema
from controller.kinds.tensorflow.models import API, TensorFlowTrainingJob

GROUP = "tensorstack.dev"
VERSION = "v1beta1"
KIND = "TensorBoard"
PLURAL = "tensorboards"
RESOURCE = Resource(GROUP, VERSION, PLURAL)


def desired(job: TensorFlowTrainingJob, api=API) -> dict | None:
    """The TensorBoard the job asks for, or None without a tensorboardSpec; `api`: the job's kind (labels and
    owner), for the other training kinds that take a TensorBoard the same way."""
    if job.spec.tensorboard_spec is None:
        return None
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": job.name, "namespace": job.namespace, "labels": job_labels(api, job.name, job.uid),
                     "ownerReferences": [owner_reference(api, job.name, job.uid)]},
        "spec": job.spec.tensorboard_spec.as_given(),
    }


def status(job: TensorFlowTrainingJob, observed: list[dict] | None, action: str) -> dict | None:
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
                              "spec": {**spec_schema()["properties"]["tensorboardSpec"],
                                       "description": "As the platform's TensorBoard spec (its fields only)."},
                              "status": {**preserved, "properties": {"ready": {"type": "boolean"}}}}}}}],
        },
    }


# Watched, created, and its spec patched to follow tensorboardSpec; never deleted (it goes with the job).
DEPENDENT = Dependent(RESOURCE, KIND, ("list", "watch", "create", "patch"), local_crd=tensorboard_crd)
