"""Writes to /status and to the main resource: what each keeps from the request, per kind's REST strategy."""

from __future__ import annotations

import copy

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from localcluster.testing import until

from .test_crd import CRD, GROUP, MERGE, PLURAL, VERSION, widget
from .test_crud import pod


async def test_the_main_endpoint_of_a_pod_ignores_status(core):
    await core.create_namespaced_pod("default", pod("a"))
    ignored = await core.patch_namespaced_pod("a", "default", {"status": {"phase": "Running"}})
    assert ignored.status.phase == "Pending"


async def test_a_pod_status_patch_also_applies_labels_annotations_and_finalizers(core):
    owner = await core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    await core.create_namespaced_pod("default", pod("a", {"app": "x"}, ownerReferences=[ref]))
    updated = await core.patch_namespaced_pod_status("a", "default", {
        "status": {"phase": "Running"},
        "metadata": {"labels": {"sneaky": "yes"}, "annotations": {"note": "hi"}, "finalizers": ["x.dev/hold"],
                     "ownerReferences": None},
        "spec": {"activeDeadlineSeconds": 5}})
    assert updated.status.phase == "Running"
    assert updated.metadata.labels == {"app": "x", "sneaky": "yes"}  # the pod status strategy's quirk
    assert updated.metadata.annotations == {"note": "hi"} and updated.metadata.finalizers == ["x.dev/hold"]
    assert [r.uid for r in updated.metadata.owner_references] == [owner.metadata.uid]  # kept from the stored pod
    assert updated.spec.active_deadline_seconds is None  # and so is the spec
    assert updated.metadata.generation == 1


async def test_a_pod_status_put_takes_the_metadata_it_is_given(core):
    await core.create_namespaced_pod("default", pod("a", {"app": "x"}))
    current = (await core.read_namespaced_pod("a", "default")).to_dict()
    body = {"metadata": {"name": "a", "resourceVersion": current["metadata"]["resource_version"],
                         "annotations": {"seen": "1"}},
            "spec": {"containers": [{"name": "other", "image": "x"}]},
            "status": {"phase": "Running"}}
    updated = await core.replace_namespaced_pod_status("a", "default", body)
    assert updated.metadata.labels is None  # a PUT replaces the labels too: none were sent
    assert updated.metadata.annotations == {"seen": "1"}
    assert [c.name for c in updated.spec.containers] == ["main"]
    assert updated.status.phase == "Running"
    assert updated.status.qos_class == "BestEffort"  # the QoS class is kept when a write drops it


async def test_a_pod_status_write_validates_the_metadata_it_takes(core):
    await core.create_namespaced_pod("default", pod("a"))
    with pytest.raises(ApiException) as exc:
        await core.patch_namespaced_pod_status("a", "default", {"metadata": {"labels": {"bad": "-x-"}}})
    assert exc.value.status == 422


async def test_service_and_deployment_status_writes(api_client, core):
    await core.create_namespaced_service("default", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    svc = await core.patch_namespaced_service_status("s", "default", {"metadata": {"labels": {"a": "b"}}})
    assert svc.metadata.labels == {"a": "b"}
    apps = client.AppsV1Api(api_client)
    await apps.create_namespaced_deployment("default", {
        "metadata": {"name": "d", "labels": {"app": "d"}},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}},
                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    # The deployment controller annotates it with its ReplicaSet's revision first (through /status, too).
    revision = {"deployment.kubernetes.io/revision": "1"}
    await until(lambda: _annotated(apps, "d", revision))
    deployment = await apps.patch_namespaced_deployment_status("d", "default", {
        "metadata": {"labels": {"app": "changed"}, "annotations": {"a": "b"}}, "status": {"replicas": 1}})
    assert deployment.metadata.labels == {"app": "d"}  # a Deployment's status strategy keeps its labels
    assert deployment.metadata.annotations == {**revision, "a": "b"} and deployment.status.replicas == 1
    batch = client.BatchV1Api(api_client)
    await batch.create_namespaced_job("default", {
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}})
    job = await batch.patch_namespaced_job_status("j", "default", {
        "metadata": {"labels": {"a": "b"}}, "spec": {"parallelism": 5}, "status": {"active": 1}})
    assert job.metadata.labels["a"] == "b" and job.spec.parallelism == 1 and job.status.active == 1


@pytest.fixture
async def widgets(api_client, custom):
    await client.ApiextensionsV1Api(api_client).create_custom_resource_definition(copy.deepcopy(CRD))
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w", size=1))
    return custom


async def test_a_custom_resource_status_write_ignores_everything_but_status(widgets):
    updated = await widgets.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", PLURAL, "w",
        {"status": {"phase": "Ready"}, "metadata": {"labels": {"sneaky": "yes"}}, "spec": {"size": 9}},
        _content_type=MERGE)
    assert updated["status"] == {"phase": "Ready"}
    assert "labels" not in updated["metadata"] and updated["spec"]["size"] == 1
    # A PUT of /status without a status clears it: the custom resource status strategy takes it whole.
    body = {**updated, "status": None}
    del body["status"]
    cleared = await widgets.replace_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "w", body)
    assert "status" not in cleared


async def test_the_main_endpoint_of_a_custom_resource_ignores_status(widgets):
    updated = await widgets.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "w", {"status": {"phase": "Ready"}, "metadata": {"labels": {"a": "b"}}},
        _content_type=MERGE)
    assert "status" not in updated and updated["metadata"]["labels"] == {"a": "b"}


async def _annotated(apps, name: str, annotations: dict) -> bool:
    return (await apps.read_namespaced_deployment(name, "default")).metadata.annotations == annotations
