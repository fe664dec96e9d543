"""Built-in kinds beyond pods and services, through kubernetes_asyncio: leases, events, secrets, jobs."""

from __future__ import annotations

import base64
import json

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


async def test_jobs_and_cron_jobs_run_to_completion(api_client):
    """A job's pod template restarts OnFailure or Never, and a cron job needs a schedule (422, as ValidateJob)."""
    batch = client.BatchV1Api(api_client)
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Always"}}
    with pytest.raises(ApiException) as exc:
        await batch.create_namespaced_job("default", {"metadata": {"name": "j"}, "spec": {"template": template}})
    assert (exc.value.status, json.loads(exc.value.body)["message"]) == (
        422, 'Job.batch "j" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always": supported '
             'values: "OnFailure", "Never"')
    cron_job = {"metadata": {"name": "cj"}, "spec": {"schedule": "", "jobTemplate": {"spec": {"template": {
        **template, "spec": {**template["spec"], "restartPolicy": "OnFailure"}}}}}}
    with pytest.raises(ApiException) as exc:
        await batch.create_namespaced_cron_job("default", cron_job)
    assert exc.value.status == 422 and "spec.schedule: Required value" in exc.value.body
    # A selector the user manages is kept as it is: no generated labels.
    manual = {"metadata": {"name": "m"}, "spec": {"manualSelector": True, "selector": {"matchLabels": {"a": "b"}},
                                                   "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
                                                       **template["spec"], "restartPolicy": "Never"}}}}
    created = await batch.create_namespaced_job("default", manual)
    assert created.spec.selector.match_labels == {"a": "b"} and created.spec.template.metadata.labels == {"a": "b"}
    assert created.metadata.labels == {"a": "b"}  # SetDefaults_Job: the template's labels, when it has none
