"""The validating webhook's decision (controller/jobs/schema/admission.py), from AdmissionReview dicts: what it refuses
is what the reconciler would fail (a job created invalid) or hold (an edit, held.py), with the same messages;
what it allows includes every valid edit and every write that cannot make a spec worse."""

from __future__ import annotations

import copy

import pytest

from controller.jobs.decisions.held import is_edit
from controller.jobs.schema import admission
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.pytorch.kind import PYTORCH
from controller.kinds.tensorflow.kind import TENSORFLOW
from tests.builders import PYTORCH as PYTORCH_KIND
from tests.builders import TENSORFLOW as TENSORFLOW_KIND
from tests.builders import JobBuilder

POD = {"spec": {"containers": [{"name": "main", "image": "trainer"}]}}
TF_POD = {"spec": {"containers": [{"name": "tensorflow", "image": "trainer"}]}}
KINDS = {"GenericJob": GENERICJOB, "TensorFlowTrainingJob": TENSORFLOW, "PyTorchTrainingJob": PYTORCH}


def genericjob(name: str = "job", replicas: dict | None = None, **spec) -> dict:
    job = JobBuilder(name, namespace="default")
    for replica_type, count in (replicas or {"worker": 2}).items():
        job = job.replica(replica_type, count, template=copy.deepcopy(POD))
    return job.spec(**spec).obj()


def training(kind: str, replicas: dict, name: str = "job", **spec) -> dict:
    job = JobBuilder(name, kind=kind, namespace="default")
    for replica_type, count in replicas.items():
        job = job.replica(replica_type, count, template=copy.deepcopy(TF_POD if kind == TENSORFLOW_KIND else POD))
    return job.spec(**spec).obj()


def request(operation: str, obj: dict | None, old: dict | None = None, **extra) -> dict:
    """An AdmissionReview as the API server sends it (the object named, with a uid and generation)."""
    kind = (obj or old)["kind"]
    for made in (obj, old):
        if made is not None:
            made["metadata"].setdefault("uid", "6d3c5e9a-0000-4000-8000-000000000001")
            made["metadata"].setdefault("generation", 1)
    body = {"uid": "review-1", "kind": {"group": "batch.tensorstack.dev", "version": "v1beta1", "kind": kind},
            "resource": {"group": "batch.tensorstack.dev", "version": "v1beta1",
                         "resource": KINDS[kind].api.plural},
            "name": (obj or old)["metadata"]["name"], "namespace": "default", "operation": operation,
            "object": obj, "oldObject": old, "dryRun": False, **extra}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


def answer(review: dict) -> dict:
    kind = KINDS[(review["request"]["object"] or review["request"]["oldObject"])["kind"]]
    response = admission.review(kind, review)
    assert response["apiVersion"] == "admission.k8s.io/v1" and response["kind"] == "AdmissionReview"
    assert response["response"]["uid"] == "review-1"
    return response["response"]


def denied(review: dict) -> dict:
    response = answer(review)
    assert response["allowed"] is False, response
    status = response["status"]
    assert status["code"] == 422 and status["reason"] == "Invalid", status
    return status


def allowed(review: dict) -> None:
    response = answer(review)
    assert response == {"uid": "review-1", "allowed": True}, response


def edit(obj: dict, change) -> dict:
    new = copy.deepcopy(obj)
    change(new["spec"])
    new["metadata"]["generation"] = obj["metadata"].get("generation", 1) + 1
    return new


def running(obj: dict, types: list[str] | None = None) -> dict:
    """The job as stored once the controller ran it: a status with its phase and the types it runs."""
    ran = copy.deepcopy(obj)
    types = types or [entry["type"] for entry in obj["spec"]["replicaSpecs"]]
    ran["status"] = {"phase": "Running", "tasks": [{"type": t} for t in types]}
    return ran


# --- the paths and names of the fixed interface ------------------------------------------------------------------


def test_paths_and_webhook_names_are_the_plans():
    assert [admission.path(kind.api) for kind in KINDS.values()] == [
        "/validate-batch-tensorstack-dev-v1beta1-genericjob",
        "/validate-batch-tensorstack-dev-v1beta1-tensorflowtrainingjob",
        "/validate-batch-tensorstack-dev-v1beta1-pytorchtrainingjob"]
    assert [admission.webhook_name(kind.api) for kind in KINDS.values()] == [
        "genericjobs.batch.tensorstack.dev", "tensorflowtrainingjobs.batch.tensorstack.dev",
        "pytorchtrainingjobs.batch.tensorstack.dev"]


# --- create ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("obj", [
    genericjob(),
    genericjob(successRules=[{"worker": [0]}], failureRules=[{"worker": [1]}]),
    training(TENSORFLOW_KIND, {"chief": 1, "worker": 2, "ps": 1}),
    training(PYTORCH_KIND, {"master": 1, "worker": 3}),
], ids=["genericjob", "genericjob-rules", "tensorflow", "pytorch"])
def test_a_valid_job_is_admitted(obj):
    allowed(request("CREATE", obj))
    allowed(request("CREATE", obj, dryRun=True))


def test_a_refusal_names_every_field_with_the_controllers_own_message():
    obj = genericjob(failureRules=[{"worker": [0]}, {"worker": [5]}, {"chief": [0]}])
    obj["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["args"] = ["$(service.port[http])"]
    status = denied(request("CREATE", obj))
    expected = GENERICJOB.parse({**obj, "metadata": {**obj["metadata"], "uid": "u", "generation": 1}})
    assert isinstance(expected, list) and len(expected) == 3
    assert status["message"] == "; ".join(str(problem) for problem in expected)
    assert status["message"].startswith('spec.failureRules[1]: rank 5 of "worker" is out of range [0, 2)')
    assert 'spec.failureRules[2]: replica type "chief" is not in spec.replicaSpecs' in status["message"]
    assert "spec.replicaSpecs[0].template.spec.containers[0].args[0]" in status["message"]
    assert status["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": p.field, "message": p.message}
                                           for p in expected]
    assert status["details"]["kind"] == "GenericJob" and status["details"]["group"] == "batch.tensorstack.dev"
    assert status["details"]["name"] == "job"


def test_more_than_five_problems_are_all_named():
    """The InvalidSpec condition shows five; the denial names them all."""
    obj = genericjob(failureRules=[{"worker": [rank]} for rank in range(10, 18)])
    status = denied(request("CREATE", obj))
    assert [f"spec.failureRules[{i}]" for i in range(8)] == [c["field"] for c in status["details"]["causes"]]
    assert all(f"spec.failureRules[{i}]: " in status["message"] for i in range(8))
    assert "more" not in status["message"]


def test_a_denial_of_countless_problems_is_bounded():
    """A made-up review of thousands of bad ranks (issue 47): the message names the first 100, the causes carry the
    first 1,000; the rest are counted."""
    obj = genericjob(failureRules=[{"worker": list(range(10, 1510))}])
    status = denied(request("CREATE", obj))
    assert len(status["details"]["causes"]) == admission.CAUSES_SHOWN
    assert status["details"]["causes"][-1]["message"].startswith(f"rank {10 + admission.CAUSES_SHOWN - 1} of")
    assert status["message"].endswith(f"; and {1500 - admission.MESSAGE_ERRORS_SHOWN} more")


def test_a_dry_run_is_answered_like_any_other():
    obj = genericjob(successRules=[{"ps": [0]}])
    assert answer(request("CREATE", obj, dryRun=True)) == answer(request("CREATE", obj))


@pytest.mark.parametrize(("obj", "field", "words"), [
    (training(PYTORCH_KIND, {"master": 2, "worker": 1}), "spec.replicaSpecs[0].replicas",
     'a replica type "master" has exactly one replica'),
    (training(TENSORFLOW_KIND, {"chief": 2, "worker": 1}), "spec.replicaSpecs[0].replicas",
     'at most one replica of type "chief"'),
    (genericjob(replicas={"worker": 0}), "spec.replicaSpecs",
     "a job needs at least one replica: the replicas of all its types add up to 0"),
], ids=["pytorch-master-of-two", "tensorflow-two-chiefs", "no-replica"])
def test_what_the_crd_also_refuses_is_refused_with_the_controllers_message(obj, field, words):
    status = denied(request("CREATE", obj))
    assert {"reason": "FieldValueInvalid", "field": field, "message": words} in status["details"]["causes"]


def test_a_create_is_judged_without_a_status_it_cannot_have():
    obj = training(TENSORFLOW_KIND, {"worker": 2})
    obj["status"] = {"tasks": [{"type": "ps"}]}  # the API server drops it; it must not count as recorded types
    allowed(request("CREATE", obj))


def test_a_review_without_uid_or_generation_in_the_object_is_still_judged():
    obj = genericjob(successRules=[{"worker": [3]}])
    review = request("CREATE", obj)
    del review["request"]["object"]["metadata"]["uid"], review["request"]["object"]["metadata"]["generation"]
    assert [c["field"] for c in denied(review)["details"]["causes"]] == ["spec.successRules[0]"]


# --- update ------------------------------------------------------------------------------------------------------


def test_a_scale_down_that_strands_a_rule_is_refused_and_one_that_does_not_is_admitted():
    old = running(genericjob(replicas={"worker": 4}, failureRules=[{"worker": [0]}, {"worker": [3]}]))
    stranding = edit(old, lambda spec: spec["replicaSpecs"][0].update(replicas=2))
    status = denied(request("UPDATE", stranding, old))
    assert status["message"] == 'spec.failureRules[1]: rank 3 of "worker" is out of range [0, 2)'
    fine = edit(old, lambda spec: spec["replicaSpecs"][0].update(replicas=4 + 2))
    allowed(request("UPDATE", fine, old))
    both = edit(old, lambda spec: (spec["replicaSpecs"][0].update(replicas=2), spec.update(failureRules=[
        {"worker": [0]}])))
    allowed(request("UPDATE", both, old))


def test_an_edit_refused_is_exactly_one_the_controller_would_hold():
    """The same parse, on the object the controller would read: what is refused would be held (or failed)."""
    old = running(genericjob(replicas={"worker": 3}, successRules=[{"worker": [2]}]))
    new = edit(old, lambda spec: spec["replicaSpecs"][0].update(replicas=1))
    status = denied(request("UPDATE", new, old))
    assert is_edit(new["status"])
    held = GENERICJOB.parse({**new, "metadata": {**new["metadata"], "uid": "u"}})
    assert status["message"] == GENERICJOB.invalid_spec_message(held)


def test_an_unresolvable_variable_added_by_an_edit_is_refused():
    old = running(genericjob())
    new = edit(old, lambda spec: spec["replicaSpecs"][0]["template"]["spec"]["containers"][0].update(
        command=["echo", "$(service.ps[0].host)"]))
    field = "spec.replicaSpecs[0].template.spec.containers[0].command[1]"
    assert [c["field"] for c in denied(request("UPDATE", new, old))["details"]["causes"]] == [field]


def test_scaling_every_replica_away_is_refused():
    old = running(training(TENSORFLOW_KIND, {"ps": 1, "worker": 2}))
    new = edit(old, lambda spec: [entry.update(replicas=0) for entry in spec["replicaSpecs"]])
    assert "a job needs at least one replica" in denied(request("UPDATE", new, old))["message"]


@pytest.mark.parametrize("kind", [TENSORFLOW_KIND, PYTORCH_KIND])
def test_training_replica_types_and_their_order_cannot_change(kind):
    old = running(training(kind, {"worker": 2, "ps": 1}))
    swapped = edit(old, lambda spec: spec["replicaSpecs"].reverse())
    status = denied(request("UPDATE", swapped, old))
    assert status["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.replicaSpecs",
        "message": "the replica types and their order cannot change once the job exists (it has [worker, ps]; the "
                   "spec now has [ps, worker]): only their replicas can"}]
    renamed = edit(old, lambda spec: spec["replicaSpecs"][1].update(type="evaluator"))
    assert "cannot change" in denied(request("UPDATE", renamed, old))["message"]
    allowed(request("UPDATE", edit(old, lambda spec: spec["replicaSpecs"][0].update(replicas=5)), old))


@pytest.mark.parametrize("kind", [TENSORFLOW_KIND, PYTORCH_KIND])
def test_before_the_first_status_write_the_old_spec_gives_the_types(kind):
    old = training(kind, {"worker": 2, "ps": 1})  # no status yet: the CRD's oldSelf rule compares the same way
    swapped = edit(old, lambda spec: spec["replicaSpecs"].reverse())
    assert "(it has [worker, ps]; the spec now has [ps, worker])" in denied(request("UPDATE", swapped, old))["message"]


def test_a_held_swap_may_be_undone():
    """The webhook was off: the swap was stored and the job is held. Swapping back is the valid edit that releases
    it, judged against the types the job runs (its status), not the held spec."""
    stored = running(training(PYTORCH_KIND, {"worker": 1, "node": 2}))
    held_swap = edit(stored, lambda spec: spec["replicaSpecs"].reverse())
    fixed = edit(held_swap, lambda spec: spec["replicaSpecs"].reverse())
    allowed(request("UPDATE", fixed, held_swap))


def test_genericjob_types_may_change():
    old = running(genericjob(replicas={"worker": 2, "ps": 1}))
    allowed(request("UPDATE", edit(old, lambda spec: spec["replicaSpecs"].reverse()), old))


def test_a_pytorch_master_scaled_to_two_is_refused():
    old = running(training(PYTORCH_KIND, {"master": 1, "worker": 2}))
    new = edit(old, lambda spec: spec["replicaSpecs"][0].update(replicas=2))
    assert denied(request("UPDATE", new, old))["message"] == (
        'spec.replicaSpecs[0].replicas: a replica type "master" has exactly one replica')


def test_resume_specs_cannot_change_once_set():
    resume = {"enabled": True, "resumeSpecs": [{"type": "worker", "command": ["sh"]}]}
    old = running(genericjob(runMode={"pause": resume}))
    changed = edit(old, lambda spec: spec["runMode"]["pause"]["resumeSpecs"][0].update(command=["bash"]))
    assert denied(request("UPDATE", changed, old))["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.runMode.pause.resumeSpecs",
        "message": "resumeSpecs cannot be changed once set"}]
    dropped = edit(old, lambda spec: spec.pop("runMode"))
    assert "resumeSpecs cannot be changed" in denied(request("UPDATE", dropped, old))["message"]
    allowed(request("UPDATE", edit(old, lambda spec: spec["runMode"]["pause"].update(enabled=False)), old))
    unset = running(genericjob())
    allowed(request("UPDATE", edit(unset, lambda spec: spec.update(runMode={"pause": resume})), unset))


def test_pytorch_elastic_bounds_cannot_change():
    elastic = {"enabled": True, "minReplicas": 2, "maxReplicas": 4, "expectedReplicas": 2}
    old = running(training(PYTORCH_KIND, {"worker": 2}, torchrunConfig={"enabled": True}, elastic=elastic))
    allowed(request("UPDATE", edit(old, lambda spec: spec["elastic"].update(expectedReplicas=3)), old))
    status = denied(request("UPDATE", edit(old, lambda spec: spec["elastic"].update(maxReplicas=8)), old))
    assert status["message"] == "spec.elastic.maxReplicas: maxReplicas is immutable"
    status = denied(request("UPDATE", edit(old, lambda spec: spec["elastic"].pop("minReplicas")), old))
    assert status["message"] == "spec.elastic.minReplicas: minReplicas is immutable"


def test_an_edit_of_a_finished_job_is_judged_as_any_edit():
    old = genericjob(replicas={"worker": 2}, cleanUpPolicy="None")
    old["status"] = {"phase": "Failed", "tasks": [{"type": "worker"}]}
    allowed(request("UPDATE", edit(old, lambda spec: spec.update(cleanUpPolicy="All")), old))
    stranding = edit(old, lambda spec: spec.update(successRules=[{"worker": [7]}]))
    denied(request("UPDATE", stranding, old))


# --- always allowed ----------------------------------------------------------------------------------------------


def invalid_stored() -> dict:
    """A job stored invalid (the webhook was off): its rule names a rank it does not have."""
    return running(genericjob(replicas={"worker": 1}, failureRules=[{"worker": [4]}]))


def test_an_update_that_leaves_the_spec_alone_is_allowed_even_when_the_stored_spec_is_invalid():
    old = invalid_stored()
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = ["example.com/cleanup"]
    new["metadata"]["labels"] = {"team": "a"}
    allowed(request("UPDATE", new, old))


def test_an_object_being_deleted_is_allowed():
    old = invalid_stored()
    new = edit(old, lambda spec: spec["replicaSpecs"][0].update(replicas=0))
    new["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    allowed(request("UPDATE", new, old))


def test_a_delete_is_never_refused():
    old = invalid_stored()
    allowed(request("DELETE", None, old))


def test_a_subresource_is_not_judged():
    old = invalid_stored()
    allowed(request("UPDATE", edit(old, lambda spec: spec.update(failureRules=[{"x": [9]}])), old,
                    subResource="status"))


def test_an_edit_of_an_invalid_job_that_leaves_it_invalid_is_refused():
    old = invalid_stored()
    still = edit(old, lambda spec: spec["replicaSpecs"][0].update(replicas=2))
    assert denied(request("UPDATE", still, old))["message"].startswith("spec.failureRules[0]: rank 4")
    fixed = edit(old, lambda spec: spec["replicaSpecs"][0].update(replicas=5))
    allowed(request("UPDATE", fixed, old))


# --- what is not a review of this kind ---------------------------------------------------------------------------


@pytest.mark.parametrize("body", [
    None, [], {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "x"}},
    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"operation": "CREATE"}},
], ids=["null", "list", "v1beta1", "no-request", "no-uid"])
def test_what_is_not_an_admission_review_is_a_bad_review(body):
    with pytest.raises(admission.BadReview):
        admission.review(GENERICJOB, body)


def test_another_kind_sent_here_is_refused_as_a_bad_request():
    review = request("CREATE", training(PYTORCH_KIND, {"worker": 1}))
    response = admission.review(GENERICJOB, review)["response"]
    assert response["allowed"] is False and response["status"]["code"] == 400
    assert "validates GenericJob.batch.tensorstack.dev, not PyTorchTrainingJob" in response["status"]["message"]


def test_a_review_without_an_object_is_refused():
    review = request("CREATE", genericjob())
    review["request"]["object"] = None
    response = admission.review(GENERICJOB, review)["response"]
    assert response["allowed"] is False and response["status"]["code"] == 422
