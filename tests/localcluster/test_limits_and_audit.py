"""The request body limit (the apiserver's 3 MiB: 413) and the audit log of writes that checkers in
other processes read from `GET /_localcluster/audit`."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from localcluster.http import MAX_REQUEST_BYTES

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
    # Just under the limit is served as before (and the server is still fine). Not in an annotation: those are
    # held to 256 KiB (test_an_object_too_large_for_its_last_applied_annotation_is_refused).
    fits = pod("fits")
    fits["spec"]["containers"][0]["args"] = ["x" * (MAX_REQUEST_BYTES // 2)]
    await core.create_namespaced_pod("default", fits)


async def test_the_audit_log_keeps_every_pod_write_across_dropped_watches_and_expired_history(cluster, core):
    await core.create_namespaced_pod("default", pod("a"))
    cluster.drop_watches()
    cluster.expire_history()
    await core.delete_namespaced_pod("a", "default", grace_period_seconds=0)
    async with cluster.session() as session:
        async with session.get(f"{cluster.url}/_localcluster/audit") as answer:
            first = await answer.json()
        async with session.get(f"{cluster.url}/_localcluster/audit?since={first['next']}") as answer:
            rest = await answer.json()
    records = [r for r in first["records"] if r["name"] == "a"]
    assert records[0]["type"] == "ADDED" and records[-1]["type"] == "DELETED"
    assert len({r["uid"] for r in records}) == 1 and records[0]["resource"] == "pods"
    assert [r["rv"] for r in records] == sorted(r["rv"] for r in records)
    assert rest == {"next": first["next"], "records": []}
