"""Built-in kinds beyond pods and services, through kubernetes_asyncio: leases, events, secrets."""

from __future__ import annotations

import base64

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException


async def test_lease_resource_version_guards_updates(api_client):
    leases = client.CoordinationV1Api(api_client)
    body = {"metadata": {"name": "leader"}, "spec": {
        "holderIdentity": "a", "leaseDurationSeconds": 15,
        "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": "2026-01-01T00:00:00.000000Z"}}
    created = await leases.create_namespaced_lease("default", body)
    assert created.spec.holder_identity == "a"
    renewed = created.to_dict()
    raw = {"metadata": {"name": "leader", "resourceVersion": created.metadata.resource_version},
           "spec": {**body["spec"], "renewTime": "2026-01-01T00:00:05.000000Z"}}
    after = await leases.replace_namespaced_lease("leader", "default", raw)
    assert after.metadata.resource_version != renewed["metadata"]["resource_version"]
    with pytest.raises(ApiException) as exc:  # a second candidate racing with the stale version
        await leases.replace_namespaced_lease("leader", "default", {**raw, "spec": {**raw["spec"],
                                                                                    "holderIdentity": "b"}})
    assert exc.value.status == 409


async def test_core_events(core):
    event = {"metadata": {"name": "job.1"}, "involvedObject": {"kind": "GenericJob", "name": "job", "uid": "u"},
             "reason": "Created", "message": "Created pod: job-worker-0", "type": "Normal"}
    await core.create_namespaced_event("default", event)
    found = await core.list_namespaced_event("default", field_selector="involvedObject.name=job")
    assert [e.reason for e in found.items] == ["Created"]
    none = await core.list_namespaced_event("default", field_selector="involvedObject.name=other")
    assert none.items == []


async def test_events_k8s_io(api_client):
    events = client.EventsV1Api(api_client)
    body = {"metadata": {"name": "e1"}, "eventTime": "2026-01-01T00:00:00.000000Z", "reason": "Started",
            "action": "Run", "reportingController": "test", "reportingInstance": "test-1", "type": "Normal",
            "regarding": {"kind": "Pod", "name": "p"}}
    await events.create_namespaced_event("default", body)
    listed = await events.list_namespaced_event("default")
    assert [e.reason for e in listed.items] == ["Started"]


async def test_secret_string_data_becomes_data(core):
    created = await core.create_namespaced_secret("default", {"metadata": {"name": "s"},
                                                              "stringData": {"token": "hunter2"}})
    assert created.type == "Opaque"
    assert base64.b64decode(created.data["token"]) == b"hunter2"
    assert created.string_data is None
