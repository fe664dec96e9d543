"""Events through core/v1 and events.k8s.io/v1: one store, two APIs, the real server's field mapping and rules."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from .test_delete import call
from .test_watch import RawWatch

CORE = "/api/v1/namespaces/default/events"
EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"
STAMP = "2026-01-01T00:00:00Z"
MICRO = "2026-01-01T00:00:00.000000Z"


async def merge_patch(cluster, path: str, patch: dict) -> tuple[int, dict]:
    headers = {"Content-Type": "application/merge-patch+json"}
    async with cluster.session() as session, session.patch(
            cluster.url + path, data=json.dumps(patch), headers=headers) as answer:
        return answer.status, await answer.json()


def core_event(name: str = "job.1", **fields) -> dict:
    """A core/v1 Event as controllers' recorders write it (no eventTime: the legacy rules)."""
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"apiVersion": "example.dev/v1", "kind": "Widget", "name": "w",
                               "namespace": "default", "uid": "u-1"},
            "reason": "Created", "message": "Created pod: w-0", "type": "Normal",
            "source": {"component": "widget-controller", "host": "node-1"},
            "firstTimestamp": STAMP, "lastTimestamp": STAMP, "count": 1,
            "reportingComponent": "widget-controller", "reportingInstance": "node-1", **fields}


def v1_event(name: str = "e1", **fields) -> dict:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
            "eventTime": MICRO, "reportingController": "example.dev/widgets", "reportingInstance": "widgets-0",
            "action": "Scale", "reason": "Scaled", "note": "scaled to 3", "type": "Normal",
            "regarding": {"kind": "Widget", "name": "w", "namespace": "default"}, **fields}


# --- events.k8s.io/v1 validation ----------------------------------------------------------------

async def test_an_events_v1_event_without_event_time_is_422_naming_the_field(cluster, api_client):
    body = v1_event()
    del body["eventTime"]
    with pytest.raises(ApiException) as exc:
        await client.EventsV1Api(api_client).create_namespaced_event("default", body)
    assert exc.value.status == 422
    status = json.loads(exc.value.body)
    assert status["reason"] == "Invalid"
    assert status["message"] == 'Event.events.k8s.io "e1" is invalid: eventTime: Required value'
    assert status["details"] == {"name": "e1", "group": "events.k8s.io", "kind": "Event", "causes": [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "eventTime"}]}
    for path in (CORE, EVENTS):
        assert (await call(cluster, "GET", path))[1]["items"] == []  # nothing was created


async def test_events_v1_requires_what_the_strict_rules_require(cluster):
    bare = {"metadata": {"name": "e1"}, "eventTime": MICRO, "deprecatedCount": 2,
            "deprecatedSource": {"component": "x"}, "deprecatedFirstTimestamp": STAMP}
    code, status = await call(cluster, "POST", EVENTS, bare)
    assert code == 422
    assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == [
        ("reportingController", "Required value"),
        ("reportingController", 'Invalid value: "": name part must be non-empty'),
        ("reportingController", 'Invalid value: "": name part must consist of alphanumeric characters, \'-\', '
                                "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',"
                                "  or 'my.name',  or '123-abc', regex used for validation is "
                                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        ("reportingInstance", "Required value"), ("action", "Required value"), ("reason", "Required value"),
        ("type", 'Invalid value: "": has invalid value: '),
        ("firstTimestamp", 'Invalid value: "": needs to be unset'),
        ("count", 'Invalid value: "": needs to be unset'),
        ("source", 'Invalid value: "": needs to be unset')]
    code, _ = await call(cluster, "POST", EVENTS, v1_event(series={"count": 1}))
    assert code == 422


async def test_core_v1_events_keep_the_legacy_rules(cluster):
    code, _ = await call(cluster, "POST", CORE, core_event())  # no eventTime, no action: fine
    assert code == 201
    code, status = await call(cluster, "POST", CORE, core_event("job.2", eventTime=MICRO, reportingComponent=""))
    assert code == 422
    assert status["message"] == ('Event "job.2" is invalid: [reportingController: Required value, reportingController: '
                                 'Invalid value: "": name part must be non-empty, reportingController: Invalid value: '
                                 '"": name part must consist of alphanumeric characters, \'-\', \'_\' or \'.\', and '
                                 "must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                                 "or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'"
                                 "), action: Required value]")
    elsewhere = core_event("job.3")
    elsewhere["involvedObject"]["namespace"] = "other"
    code, status = await call(cluster, "POST", CORE, elsewhere)
    assert code == 422 and status["details"]["causes"][0]["field"] == "involvedObject.namespace"


async def test_a_note_is_limited_to_1024_bytes_not_characters(cluster):
    """pkg/apis/core/validation/events.go checks len(event.Message), Go's byte length, though its message says
    "characters": 342 Chinese characters (1026 bytes) are too many, 341 (1023 bytes) fit."""
    cause = {"reason": "FieldValueInvalid", "message": 'Invalid value: "": can have at most 1024 characters',
             "field": "message"}
    code, status = await call(cluster, "POST", EVENTS, v1_event("long", note="中" * 1000))
    assert code == 422 and status["reason"] == "Invalid" and status["details"]["causes"] == [cause]
    code, status = await call(cluster, "POST", EVENTS, v1_event("over", note="中" * 342))
    assert code == 422 and status["details"]["causes"] == [cause]
    code, _ = await call(cluster, "POST", EVENTS, v1_event("fits", note="中" * 341))
    assert code == 201
    code, status = await call(cluster, "POST", CORE, core_event("job.9", eventTime=MICRO, action="Create",
                                                                 message="中" * 342))
    assert code == 422 and status["details"]["causes"] == [cause]
    code, status = await call(cluster, "POST", EVENTS, v1_event("why", reason="原" * 43))  # 129 bytes
    assert code == 422 and status["details"]["causes"][0]["field"] == "reason"


# --- one store, two APIs ------------------------------------------------------------------------

async def test_an_event_written_through_core_v1_reads_through_events_v1(cluster):
    code, created = await call(cluster, "POST", CORE, core_event())
    assert code == 201
    code, seen = await call(cluster, "GET", f"{EVENTS}/job.1")
    assert code == 200
    assert seen == {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": created["metadata"], "eventTime": None,
        "reportingController": "widget-controller", "reportingInstance": "node-1", "reason": "Created",
        "regarding": {"apiVersion": "example.dev/v1", "kind": "Widget", "name": "w", "namespace": "default",
                      "uid": "u-1"},
        "note": "Created pod: w-0", "type": "Normal",
        "deprecatedSource": {"component": "widget-controller", "host": "node-1"},
        "deprecatedFirstTimestamp": STAMP, "deprecatedLastTimestamp": STAMP, "deprecatedCount": 1}
    code, listed = await call(cluster, "GET", EVENTS)
    assert listed["kind"] == "EventList" and listed["apiVersion"] == "events.k8s.io/v1"
    assert listed["items"] == [seen]


async def test_an_event_written_through_events_v1_reads_through_core_v1(cluster):
    code, created = await call(cluster, "POST", EVENTS, v1_event())
    assert code == 201
    assert created["deprecatedSource"] == {} and created["deprecatedFirstTimestamp"] is None
    code, seen = await call(cluster, "GET", f"{CORE}/e1")
    assert code == 200
    assert seen == {
        "apiVersion": "v1", "kind": "Event", "metadata": created["metadata"],
        "involvedObject": {"kind": "Widget", "name": "w", "namespace": "default"}, "reason": "Scaled",
        "message": "scaled to 3", "source": {}, "firstTimestamp": None, "lastTimestamp": None, "type": "Normal",
        "eventTime": MICRO, "action": "Scale", "reportingComponent": "example.dev/widgets",
        "reportingInstance": "widgets-0"}


async def test_writes_through_either_api_are_watched_through_both(cluster):
    code, first = await call(cluster, "POST", CORE, core_event())
    since = first["metadata"]["resourceVersion"]
    async with RawWatch(cluster, EVENTS, resourceVersion=since) as new, \
            RawWatch(cluster, CORE, resourceVersion=since) as old:
        await call(cluster, "POST", EVENTS, v1_event())
        code, counted = await merge_patch(cluster, f"{CORE}/job.1", {"count": 2})
        assert code == 200
        await call(cluster, "DELETE", f"{EVENTS}/job.1")
        seen_new = [await new.next() for _ in range(3)]
        seen_old = [await old.next() for _ in range(3)]
    assert [(e["type"], e["object"]["apiVersion"], e["object"]["metadata"]["name"]) for e in seen_new] == [
        ("ADDED", "events.k8s.io/v1", "e1"), ("MODIFIED", "events.k8s.io/v1", "job.1"),
        ("DELETED", "events.k8s.io/v1", "job.1")]
    assert seen_new[1]["object"]["deprecatedCount"] == 2
    assert [(e["type"], e["object"]["apiVersion"], e["object"]["metadata"]["name"]) for e in seen_old] == [
        ("ADDED", "v1", "e1"), ("MODIFIED", "v1", "job.1"), ("DELETED", "v1", "job.1")]
    assert seen_old[0]["object"]["message"] == "scaled to 3"
    # One store: one resourceVersion for both views of a write.
    assert seen_new[1]["object"]["metadata"]["resourceVersion"] == counted["metadata"]["resourceVersion"]
    assert seen_old[1]["object"]["metadata"]["resourceVersion"] == counted["metadata"]["resourceVersion"]


async def test_an_events_v1_patch_applies_to_the_events_v1_view(cluster):
    await call(cluster, "POST", CORE, core_event())
    series = {"count": 2, "lastObservedTime": MICRO}
    code, patched = await merge_patch(cluster, f"{EVENTS}/job.1", {"series": series})
    assert code == 200 and patched["series"] == series
    code, status = await merge_patch(cluster, f"{EVENTS}/job.1", {"note": "changed"})
    assert code == 422
    assert status["message"] == ('Event.events.k8s.io "job.1" is invalid: message: Invalid value: "changed": '
                                 "field is immutable")
    code, seen = await call(cluster, "GET", f"{CORE}/job.1")
    assert seen["series"] == series and seen["message"] == "Created pod: w-0"


async def test_field_selectors_use_each_apis_field_labels(cluster):
    await call(cluster, "POST", CORE, core_event())
    await call(cluster, "POST", EVENTS, v1_event(regarding={"kind": "Widget", "name": "v", "namespace": "default"}))

    async def names(path: str, selector: str) -> list[str] | int:
        code, body = await call(cluster, "GET", path, fieldSelector=selector)
        return [e["metadata"]["name"] for e in body["items"]] if code == 200 else code

    assert await names(CORE, "involvedObject.name=w") == ["job.1"]
    assert await names(EVENTS, "regarding.name=v") == ["e1"]
    assert await names(EVENTS, "reportingController=example.dev/widgets") == ["e1"]
    assert await names(CORE, "reportingComponent=widget-controller") == ["job.1"]
    # "source" is the source component, or the reporting controller of an Event that has none.
    assert await names(CORE, "source=example.dev/widgets") == ["e1"]
    assert await names(EVENTS, "source=widget-controller") == ["job.1"]
    assert await names(EVENTS, "involvedObject.name=w") == 400
    assert await names(CORE, "regarding.name=v") == 400
    code, status = await call(cluster, "GET", CORE, fieldSelector="note=x")
    assert code == 400 and status["message"] == "field label not supported: note"
