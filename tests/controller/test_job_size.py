"""The cap on the replicas of a job (MAX_TOTAL_REPLICAS): the largest status a capped job can have fits, with a
large spec, well inside one etcd object; the CRD's rule refuses more at the API server, naming the field and
the cap; the controller's validation refuses more for a job admitted before the rule existed."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from apimachinery.errors import ApiStatusError
from controller.jobs.decisions import oversize
from controller.jobs.decisions.job_conditions import (
    find_condition,
    finished_conditions,
    pause_conditions,
    progress_conditions,
    unfinished_conditions,
)
from controller.jobs.decisions.replica_records import Replica
from controller.jobs.decisions.status_codec import assemble
from controller.jobs.schema.api import MAX_REPLICAS, MAX_TOTAL_REPLICAS
from controller.jobs.schema.crd import MAX_REPLICA_TYPES
from controller.jobs.schema.validation import SpecError
from controller.kinds.registry import KINDS
from localcluster import ApiError, LocalCluster

CRDS = Path(__file__).resolve().parents[2] / "manifests" / "crds"
ETCD_LIMIT = 1536 * 1024  # etcd's default --max-request-bytes: the largest object the API server can store
LARGE_SPEC = 256 * 1024  # as large as the annotation of a client-side `kubectl apply` may carry it
CONTAINERS = 4  # containers per pod, each recorded in its replica's record
NAME = "n" * 63  # a job name at its limit (a label value)
TIME = "2026-01-01T00:00:00Z"
UID = "0" * 36


def worst_record(name: str) -> dict:
    """A replica's record at its largest: finished, restarted, every container terminated with the widest exit code."""
    containers = tuple({"name": f"{i}".rjust(63, "c"), "state": "terminated", "exitCode": -2147483648}
                       for i in range(CONTAINERS))
    return Replica(name, UID, "Succeeded", containers, 2**31 - 1, UID, TIME, 2**31 - 1, False)


def worst_status(kind, types: list[tuple[str, int]]) -> dict:
    """The status the controller's own code makes for a finished job whose every replica is at its largest."""
    records = [(t, [worst_record(f"{NAME}-{t}-{rank}") for rank in range(count)]) for t, count in types]
    long_message = "m" * 1024  # a condition message as long as an Event's
    conditions = unfinished_conditions([], TIME)
    conditions = progress_conditions(conditions, phase="Failed", records=[r for _, rs in records for r in rs],
                                     now=TIME)
    conditions = finished_conditions(conditions, succeeded=False, reason="DeadlineExceeded", message=long_message,
                                     now=TIME)
    conditions = pause_conditions(conditions, paused=True, pods_left=False, now=TIME)
    status = assemble({"observedGeneration": 2**31}, kind.status, phase="Failed", conditions=conditions,
                      records_by_type=records, start_time=TIME, completion_time=TIME, reason="DeadlineExceeded")
    if kind.api.kind == "TensorFlowTrainingJob":
        status["tensorboard"] = {"dependent": NAME, "ready": False, "action": "Create", "reason": "r" * 256,
                                 "note": long_message, "type": "Warning"}
    return status


def large_job(kind, types: list[tuple[str, int]]) -> dict:
    spec_padding = "x" * (LARGE_SPEC // len(types))
    replica_specs = [{"type": t, "replicas": count, "template": {"spec": {"containers": [
        {"name": "tensorflow", "image": "busybox:1.36", "args": [spec_padding]}]}}} for t, count in types]
    return {"apiVersion": f"{kind.api.group}/{kind.api.version}", "kind": kind.api.kind,
            "metadata": {"name": NAME, "namespace": "n" * 63, "uid": UID, "resourceVersion": "9" * 19,
                         "generation": 2**31, "creationTimestamp": TIME, "labels": {"a" * 63: "b" * 63},
                         "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update",
                                            "apiVersion": f"{kind.api.group}/{kind.api.version}", "time": TIME,
                                            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}},
                                           {"manager": "genericjob-controller", "operation": "Update",
                                            "apiVersion": f"{kind.api.group}/{kind.api.version}", "time": TIME,
                                            "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}},
                                            "subresource": "status"}]},
            "spec": {"replicaSpecs": replica_specs}}


# The shapes of a capped job with the longest pod names: GenericJob's longest replica type (63 characters) in one
# type, or the cap spread over every type it may have; TensorFlowTrainingJob's workers beside a chief and a ps.
SHAPES = [
    ("GenericJob", [("t" * 63, MAX_TOTAL_REPLICAS)]),
    ("GenericJob", [(f"{i}".rjust(63, "t"), MAX_TOTAL_REPLICAS // MAX_REPLICA_TYPES + (i < MAX_TOTAL_REPLICAS
                                                                                        % MAX_REPLICA_TYPES))
                    for i in range(MAX_REPLICA_TYPES)]),
    ("TensorFlowTrainingJob", [("chief", 1), ("ps", 9), ("worker", MAX_TOTAL_REPLICAS - 10)]),
]


@pytest.mark.parametrize(("kind_name", "types"), SHAPES, ids=["genericjob-one-type", "genericjob-64-types", "tftj"])
def test_the_largest_status_of_a_capped_job_fits_in_an_object_with_room_to_spare(kind_name, types):
    kind = KINDS[kind_name]
    assert sum(count for _, count in types) == MAX_TOTAL_REPLICAS
    job = {**large_job(kind, types), "status": worst_status(kind, types)}
    status_bytes = len(orjson.dumps(job["status"]))
    total = len(orjson.dumps(job))
    assert len(orjson.dumps(job["spec"])) >= LARGE_SPEC
    # Custom resources are stored as JSON: this is what etcd is asked to store, less the key.
    assert total <= 0.75 * ETCD_LIMIT, f"{kind_name}: {total} bytes (status {status_bytes}) of {ETCD_LIMIT}"


def test_no_replica_type_may_have_more_than_the_whole_job():
    assert MAX_REPLICAS == MAX_TOTAL_REPLICAS


# --- the CRD's rule -----------------------------------------------------------------------------


def typed_job(kind_name: str, name: str, counts: list[int]) -> dict:
    kind = KINDS[kind_name]
    names = ["worker", "ps", "chief", "evaluator"] if kind_name == "TensorFlowTrainingJob" else \
        [f"t{i}" for i in range(len(counts))]
    container = {"name": "tensorflow", "image": "busybox:1.36"}
    return {"apiVersion": f"{kind.api.group}/{kind.api.version}", "kind": kind.api.kind, "metadata": {"name": name},
            "spec": {"replicaSpecs": [{"type": t, "replicas": n, "template": {"spec": {"containers": [container]}}}
                                      for t, n in zip(names, counts, strict=False)]}}


@pytest.fixture
async def cluster():
    async with LocalCluster() as running:
        running.apply_crds(CRDS)
        yield running


@pytest.mark.parametrize(("kind_name", "counts"), [
    ("GenericJob", [MAX_TOTAL_REPLICAS, 1]),
    ("GenericJob", [20] * MAX_REPLICA_TYPES),
    ("TensorFlowTrainingJob", [MAX_TOTAL_REPLICAS, 1]),
])
async def test_the_api_server_refuses_more_replicas_than_the_cap_naming_the_field_and_the_cap(cluster, kind_name,
                                                                                              counts):
    kind = KINDS[kind_name]
    jobs = cluster.registry.get(kind.api.group, kind.api.version, kind.api.plural)
    with pytest.raises(ApiError) as refused:
        cluster.api.create(jobs, "default", typed_job(kind_name, "big", counts))
    assert refused.value.code == 422
    causes = refused.value.details["causes"]
    assert {"reason": "FieldValueInvalid", "field": "spec.replicaSpecs",
            "message": f'Invalid value: the total of replicas over all replica types must be at most '
                       f"{MAX_TOTAL_REPLICAS}: each replica is a record in the job's status, which must fit in one "
                       "object of the API server"} in causes, causes
    # The cap itself is allowed.
    allowed = [MAX_TOTAL_REPLICAS - 1, 1] if kind_name == "TensorFlowTrainingJob" else [MAX_TOTAL_REPLICAS]
    cluster.api.create(jobs, "default", typed_job(kind_name, "capped", allowed))


# --- the controller's validation, for jobs admitted before the rule -------------------------------


@pytest.mark.parametrize(("kind_name", "counts", "total"), [
    ("GenericJob", [10_000] * MAX_REPLICA_TYPES, 640_000),
    ("GenericJob", [600, 600], 1200),
    ("TensorFlowTrainingJob", [1000, 1], 1001),
])
def test_the_controllers_validation_refuses_a_job_over_the_cap(kind_name, counts, total):
    kind = KINDS[kind_name]
    obj = typed_job(kind_name, "big", counts)
    obj["metadata"].update(namespace="default", uid=UID, generation=1)
    problems = kind.parse(obj)
    assert isinstance(problems, list)
    assert problems[0] == SpecError("spec.replicaSpecs", f"the total of replicas over all replica types must be at "
                                    f"most {MAX_TOTAL_REPLICAS} (it asks for {total}): each replica is a record in "
                                    "the job's status, which must fit in one object of the API server")
    assert kind.invalid_spec_message(problems).startswith(
        f"spec.replicaSpecs: the total of replicas over all replica types must be at most {MAX_TOTAL_REPLICAS}")


# --- a status too large to store ------------------------------------------------------------------


@pytest.mark.parametrize(("code", "message", "too_large"), [
    (413, "Request entity too large: limit is 3145728", True),
    (500, "etcdserver: request is too large", True),
    (500, "rpc error: code = ResourceExhausted desc = trying to send message larger than max (2 vs. 1)", True),
    (500, "Internal error occurred: something else", False),
    (422, "etcdserver: request is too large", False),
])
def test_what_counts_as_too_large(code, message, too_large):
    assert ApiStatusError(code, "", message).too_large is too_large


@pytest.mark.parametrize("kind_name", ["GenericJob", "TensorFlowTrainingJob"])
def test_the_compact_status_keeps_the_counts_and_says_why(kind_name):
    kind = KINDS[kind_name]
    big = worst_status(kind, [("worker", 300)])
    compact = oversize.compact_status(kind.status, big, "why", TIME)
    assert "tasks" not in compact and kind.status.stored_types(compact) == []
    assert compact["aggregate"] == big["aggregate"] and compact["backoffCount"] == big["backoffCount"]
    assert (compact["phase"], compact["reason"]) == ("Failed", "StatusTooLarge")
    assert find_condition(compact["conditions"], "Failed") == {
        "type": "Failed", "status": "True", "reason": "StatusTooLarge", "message": "why", "lastTransitionTime": TIME}
    assert oversize.failed_too_large(compact) and not oversize.failed_too_large(big)
    assert len(orjson.dumps(compact)) < 4096


def test_the_fallbacks_get_smaller_and_each_says_failed_only_with_the_phase():
    kind = KINDS["GenericJob"]
    big = worst_status(kind, [("worker", 300)])
    attempts = oversize.fallbacks(kind.status, big, "etcdserver: request is too large", TIME, 3)
    sizes = [len(orjson.dumps(status)) for _, status in attempts]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] < 64
    for text, status in attempts:
        assert (status["phase"], status["reason"]) == ("Failed", "StatusTooLarge") and oversize.failed_too_large(status)
        failed = find_condition(status.get("conditions") or (), "Failed")
        assert failed is None or failed["message"] == text
    assert "Failed" not in oversize.nothing_fits("x").replace("phase Failed", "")
