"""The cache transforms (controller/jobs/execution/trim.py) drop what the engine never reads and keep what it does:
plans made from trimmed pods, Services and PodGroups are the plans made from the objects as the server sends them."""

from __future__ import annotations

import copy

import pytest

from controller.jobs.children import services
from controller.jobs.children.pods import mode_annotation, pod_mode
from controller.jobs.decisions import upkeep
from controller.jobs.decisions.plan import plan
from controller.jobs.execution import trim
from controller.jobs.execution.trim import LAST_APPLIED
from controller.kinds.genericjob.kind import GENERICJOB

from .plan_support import at, make_job, make_pod

MANAGED = [{"manager": "kubelet", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}]


def as_served(pod: dict) -> dict:
    """A pod as an API server sends it: a spec, annotations, managedFields, and the status's other fields."""
    served = copy.deepcopy(pod)
    served.update(apiVersion="v1", kind="Pod")
    served["metadata"].update(annotations={"kubectl.kubernetes.io/restartedAt": "now", "note": "x"},
                              managedFields=MANAGED, resourceVersion="7", creationTimestamp=at(0),
                              ownerReferences=[{"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob",
                                                "name": "job", "uid": "job-uid", "controller": True}])
    served["spec"] = {"containers": [{"name": "main", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}],
                      "nodeName": "node-1", "restartPolicy": "Never", "volumes": [{"name": "v", "emptyDir": {}}]}
    served["status"].update(hostIP="10.0.0.1", podIP="10.1.0.1", qosClass="Burstable", startTime=at(1),
                            conditions=[{"type": "Ready", "status": "True", "lastTransitionTime": at(1)}])
    return served


PODS = [
    [make_pod("worker", 0, "u0", "Pending"), make_pod("worker", 1, "u1", "Running")],
    [make_pod("worker", 0, "u0", "Succeeded"), make_pod("worker", 1, "u1", "Failed", exit_code=137,
                                                        container_reason="OOMKilled")],
    [make_pod("worker", 0, "u0", "Running", terminating=True), make_pod("worker", 1, "u1", "Failed",
                                                                        reason="Evicted")],
]


def test_a_trimmed_pod_has_no_spec_annotations_or_managed_fields_and_keeps_metadata_and_status():
    served = as_served(make_pod("worker", 0, "u0", "Running"))
    trimmed = trim.trim_pod(copy.deepcopy(served))
    assert set(trimmed) == {"apiVersion", "kind", "metadata", "status"}
    assert "annotations" not in trimmed["metadata"] and "managedFields" not in trimmed["metadata"]
    kept = {k: v for k, v in served["metadata"].items() if k not in ("annotations", "managedFields")}
    assert trimmed["metadata"] == kept
    assert trimmed["status"] == served["status"]


def test_a_trimmed_pod_keeps_the_kinds_own_annotations_only():
    """`<prefix>/run-mode` says which mode a pod was made in: a debug change replaces pods by it, and a debug
    pod's end is no outcome. The controller trims with its kind's prefix; nothing else is kept."""
    served = as_served(make_pod("worker", 0, "u0", "Running"))
    mode = mode_annotation(GENERICJOB.api)
    served["metadata"]["annotations"] = {mode: "debug", "team.example/owner": "x", LAST_APPLIED: "{}"}
    trimmed = trim.trim_pod(copy.deepcopy(served), keep_prefix=f"{GENERICJOB.api.label_prefix}/")
    assert trimmed["metadata"]["annotations"] == {mode: "debug"}
    assert pod_mode(GENERICJOB.api, trimmed) == pod_mode(GENERICJOB.api, served) == "debug"


@pytest.mark.parametrize("pods", PODS)
@pytest.mark.parametrize("policy", ["Never", "OnFailure", "Always"])
def test_plans_from_trimmed_pods_are_the_plans_from_served_pods(pods, policy):
    job = make_job(("worker", 2, policy, 3))
    served = [as_served(p) for p in pods]
    status = plan(GENERICJOB, job, {}, served, at(2)).status
    for now in (at(3), at(100)):
        full = plan(GENERICJOB, job, status, served, now, clock=200.0)
        trimmed = plan(GENERICJOB, job, status, [trim.trim_pod(copy.deepcopy(p)) for p in served], now, clock=200.0)
        assert trimmed == full


def test_a_trimmed_service_keeps_its_ports_and_metadata_only():
    served = {"apiVersion": "v1", "kind": "Service",
              "metadata": {"name": "job-worker-0", "namespace": "ns", "uid": "s0", "managedFields": MANAGED,
                           "annotations": {"a": "b"}, "labels": {"x": "y"}},
              "spec": {"clusterIP": "None", "clusterIPs": ["None"], "selector": {"x": "y"},
                       "ports": [{"name": "http", "port": 80, "targetPort": 80, "protocol": "TCP"}]},
              "status": {"loadBalancer": {}}}
    trimmed = trim.trim_service(copy.deepcopy(served))
    assert trimmed["spec"] == {"ports": served["spec"]["ports"]} and "status" not in trimmed
    assert trimmed["metadata"] == {"name": "job-worker-0", "namespace": "ns", "uid": "s0", "labels": {"x": "y"}}
    assert services.stored_ports(trimmed) == services.stored_ports(served)


def test_a_trimmed_podgroup_keeps_its_spec():
    served = {"apiVersion": "scheduler.tensorstack.dev/v1beta1", "kind": "PodGroup",
              "metadata": {"name": "job", "namespace": "ns", "uid": "g", "managedFields": MANAGED},
              "spec": {"minMember": 2, "queue": "default"}, "status": {"phase": "Running"}}
    trimmed = trim.trim_podgroup(copy.deepcopy(served))
    assert trimmed["spec"] == served["spec"] and "status" not in trimmed and "managedFields" not in trimmed["metadata"]
    job = make_job(("worker", 2))
    for terminal in (False, True):
        assert upkeep.podgroup_actions(GENERICJOB, job, [trimmed], terminal=terminal, making=True) == \
            upkeep.podgroup_actions(GENERICJOB, job, [served], terminal=terminal, making=True)


def test_a_trimmed_job_loses_only_the_last_applied_configuration():
    job = {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob",
           "metadata": {"name": "j", "namespace": "ns", "uid": "u", "resourceVersion": "3", "generation": 2,
                        "annotations": {trim.LAST_APPLIED: "{...}", "keep": "me"}},
           "spec": {"replicaSpecs": []}, "status": {"phase": "Running"}}
    expected = copy.deepcopy(job)
    del expected["metadata"]["annotations"][trim.LAST_APPLIED]
    assert trim.trim_job(copy.deepcopy(job)) == expected
    untouched = copy.deepcopy(expected)
    assert trim.trim_job(untouched) == expected
