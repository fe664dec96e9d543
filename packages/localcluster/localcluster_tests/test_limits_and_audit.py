"""The request body limit (the apiserver's 3 MiB: 413), etcd's object limit (1.5 MiB: a 500 with etcd's
message), and the audit log of writes that checkers in other processes read from `GET /_localcluster/audit`:
a ring of the last writes at absolute positions."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from localcluster.endpoints.http import MAX_REQUEST_BYTES
from localcluster.errors import ETCD_MAX_REQUEST_BYTES
from localcluster.storage.audit import AuditLog
from localcluster.storage.store import MODIFIED, Event

from .rest import connect
from .test_crud import pod


async def test_a_body_over_the_limit_gets_413_with_a_status(cluster, core):
    big = pod("big")
    big["metadata"]["annotations"] = {"blob": "x" * (MAX_REQUEST_BYTES + 1)}
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_pod("default", big)
    assert caught.value.status == 413
    status = json.loads(caught.value.body)
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "RequestEntityTooLarge", 413)
    assert str(MAX_REQUEST_BYTES) in status["message"]
    # Under the limit is served as before (and the server is still fine), as long as etcd can store the object.
    # Not in an annotation: those are held to 256 KiB (test_an_object_too_large_for_its_last_applied_annotation_...).
    fits = pod("fits")
    fits["spec"]["containers"][0]["args"] = ["x" * (ETCD_MAX_REQUEST_BYTES - 4096)]
    await core.create_namespaced_pod("default", fits)


async def test_an_object_larger_than_etcd_stores_gets_etcds_error_as_a_500(cluster, core):
    """The body is within the apiserver's limit, the object is not within etcd's: etcd's error is no Status, so
    the apiserver answers 500 with etcd's message and no reason (ErrorToAPIStatus; kubernetes#112152)."""
    big = pod("big")
    big["spec"]["containers"][0]["args"] = ["x" * ETCD_MAX_REQUEST_BYTES]
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_pod("default", big)
    assert caught.value.status == 500
    status = json.loads(caught.value.body)
    assert status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": "etcdserver: request is too large", "code": 500}
    assert (await core.list_namespaced_pod("default")).items == []
    # An update that grows an object past the limit is refused alike, and the stored object is unchanged.
    await core.create_namespaced_pod("default", pod("grows"))
    with pytest.raises(ApiException) as caught:
        await core.patch_namespaced_pod_status("grows", "default",
                                               {"status": {"message": "x" * ETCD_MAX_REQUEST_BYTES}})
    assert (caught.value.status, json.loads(caught.value.body)["message"]) == (500, "etcdserver: request is too large")
    assert (await core.read_namespaced_pod("grows", "default")).status.message is None


async def test_an_object_too_large_only_with_its_managed_fields_is_stored_without_them(cluster, core):
    """The handlers try a write etcd refused once more without managedFields (rest.go's isTooLargeError)."""
    await core.create_namespaced_pod("default", pod("first"))
    pods = cluster.registry.get("", "v1", "pods")
    stored = cluster.api.get(pods, "default", "first")
    assert stored["metadata"]["managedFields"]
    bare = {**stored, "metadata": {k: v for k, v in stored["metadata"].items() if k != "managedFields"}}
    cluster.api.max_object_bytes = len(json.dumps(bare, separators=(",", ":"))) + 64  # room for another name
    second = await core.create_namespaced_pod("default", pod("second"))
    assert second.metadata.managed_fields is None
    assert "managedFields" not in cluster.api.get(pods, "default", "second")["metadata"]


async def test_the_audit_log_keeps_every_pod_write_across_dropped_watches_and_expired_history(cluster, core):
    await core.create_namespaced_pod("default", pod("a"))
    cluster.drop_watches()
    cluster.expire_history()
    await core.delete_namespaced_pod("a", "default", grace_period_seconds=0)
    async with connect(cluster) as rest:
        first = await rest.ok("GET", "/_localcluster/audit")
        after = await rest.ok("GET", "/_localcluster/audit", since=str(first["next"]))
    records = [r for r in first["records"] if r["name"] == "a"]
    assert records[0]["type"] == "ADDED" and records[-1]["type"] == "DELETED"
    assert len({r["uid"] for r in records}) == 1 and records[0]["resource"] == "pods"
    assert [r["rv"] for r in records] == sorted(r["rv"] for r in records)
    assert after == {"first": 0, "next": first["next"], "records": []}


async def test_the_audit_log_is_a_ring_whose_positions_stay_absolute(cluster, core):
    cluster.audit.resize(3)
    async with connect(cluster) as rest:
        # the server's own writes come first (the `kubernetes` Service): positions count from after them
        base = (await rest.ok("GET", "/_localcluster/audit"))["next"]
        for name in ("p0", "p1"):
            await core.create_namespaced_pod("default", pod(name))
        seen = await rest.ok("GET", "/_localcluster/audit", since=str(base))
        assert seen["next"] == base + 2 and seen["first"] == max(base + 2 - 3, 0)  # 3 kept
        assert [r["name"] for r in seen["records"]] == ["p0", "p1"]
        for name in ("p2", "p3", "p4", "p5"):
            await core.create_namespaced_pod("default", pod(name))
        late = await rest.ok("GET", "/_localcluster/audit", since=str(seen["next"]))
        # positions base+2 and base+3 (p2, p3) are gone: `first` tells the reader it missed them
        assert (late["first"], late["next"]) == (base + 3, base + 6)
        assert [r["name"] for r in late["records"]] == ["p3", "p4", "p5"]
        assert (await rest.ok("GET", "/_localcluster/audit", since=str(base + 5)))["records"][0]["name"] == "p5"
        assert (await rest.ok("GET", "/_localcluster/audit", since=str(base + 6)))["records"] == []
        status, answer = await rest.call("GET", "/_localcluster/audit", since="soon")
        assert (status, answer["reason"]) == (400, "BadRequest")


def test_the_audit_log_keeps_its_newest_records_when_it_shrinks():
    log = AuditLog(size=10)
    for rv in range(1, 6):
        log.on_event(Event(rv, ("", "pods"), MODIFIED, {"metadata": {"name": f"p{rv}"}}, None))
    log.resize(2)
    assert (log.first, log.next, [r["name"] for r in log.since(0)["records"]]) == (3, 5, ["p4", "p5"])
    log.on_event(Event(6, ("", "configmaps"), MODIFIED, {"metadata": {"name": "c"}}, None))  # not audited
    assert log.next == 5
