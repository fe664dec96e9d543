"""Deletion over HTTP: preconditions, finalizers, grace periods, propagation and garbage collection."""

from __future__ import annotations

import asyncio
import json

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from .test_crud import pod


async def eventually(check, timeout: float = 5.0, interval: float = 0.01):
    """Poll an async predicate until it holds: waiting on the server's asynchronous GC."""
    async with asyncio.timeout(timeout):
        while True:
            result = await check()
            if result:
                return result
            await asyncio.sleep(interval)


async def gone(core, name: str, namespace: str = "default") -> bool:
    try:
        await core.read_namespaced_pod(name, namespace)
    except ApiException as exc:
        return exc.status == 404
    return False


def owned_pod(name: str, owner, controller: bool = True, block: bool = True) -> dict:
    body = pod(name)
    body["metadata"]["ownerReferences"] = [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name, "uid": owner.metadata.uid,
        "controller": controller, "blockOwnerDeletion": block}]
    return body


async def make_owner(core, name: str = "owner"):
    return await core.create_namespaced_config_map("default", {"metadata": {"name": name}})


async def test_delete_returns_object_and_emits_version(core):
    created = await core.create_namespaced_pod("default", pod("a"))
    deleted = await core.delete_namespaced_pod("a", "default")
    assert deleted.metadata.uid == created.metadata.uid
    assert int(deleted.metadata.resource_version) > int(created.metadata.resource_version)
    assert await gone(core, "a")


async def test_delete_preconditions(core):
    created = await core.create_namespaced_pod("default", pod("a"))
    with pytest.raises(ApiException) as exc:
        await core.delete_namespaced_pod("a", "default", body={"preconditions": {"uid": "not-the-uid"}})
    assert exc.value.status == 409
    assert "Precondition failed: UID in precondition" in json.loads(exc.value.body)["message"]
    with pytest.raises(ApiException) as exc:
        await core.delete_namespaced_pod("a", "default", body={"preconditions": {"resourceVersion": "1"}})
    assert exc.value.status == 409
    await core.delete_namespaced_pod("a", "default", body={"preconditions": {"uid": created.metadata.uid}})
    assert await gone(core, "a")


async def test_finalizers_hold_deletion_until_removed(core):
    body = pod("a")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await core.create_namespaced_pod("default", body)
    held = await core.delete_namespaced_pod("a", "default")
    assert held.metadata.deletion_timestamp is not None
    still = await core.read_namespaced_pod("a", "default")
    assert still.metadata.finalizers == ["example.com/hold"]
    await core.patch_namespaced_pod("a", "default", {"metadata": {"finalizers": None}})
    assert await gone(core, "a")


@pytest.mark.runner("scripted")
async def test_graceful_deletion_waits_for_the_kubelet(cluster, core):
    cluster.runner.set_script("default/slow", {"terminate_after": 0.3})
    await core.create_namespaced_pod("default", pod("slow"))
    await eventually(lambda: _phase_is(core, "slow", "Running"))
    pending = await core.delete_namespaced_pod("slow", "default")
    assert pending.metadata.deletion_timestamp is not None
    assert pending.metadata.deletion_grace_period_seconds == 30
    assert not await gone(core, "slow")  # still terminating
    await eventually(lambda: gone(core, "slow"))


@pytest.mark.runner("scripted")
async def test_force_delete_skips_grace(cluster, core):
    cluster.runner.set_script("default/stuck", {"stuck_terminating": True})
    await core.create_namespaced_pod("default", pod("stuck"))
    await eventually(lambda: _phase_is(core, "stuck", "Running"))
    await core.delete_namespaced_pod("stuck", "default")
    await asyncio.sleep(0.1)
    assert not await gone(core, "stuck")  # the lost node never confirms
    await core.delete_namespaced_pod("stuck", "default", grace_period_seconds=0)
    assert await gone(core, "stuck")


async def test_unscheduled_pods_are_deleted_at_once(core):
    await core.create_namespaced_pod("default", pod("a"))
    await core.delete_namespaced_pod("a", "default")
    assert await gone(core, "a")


async def test_background_propagation_collects_dependents(core):
    owner = await make_owner(core)
    await core.create_namespaced_pod("default", owned_pod("child-1", owner))
    await core.create_namespaced_pod("default", owned_pod("child-2", owner))
    await core.create_namespaced_pod("default", pod("unrelated"))
    await core.delete_namespaced_config_map("owner", "default", propagation_policy="Background")
    await eventually(lambda: _all_gone(core, "child-1", "child-2"))
    assert not await gone(core, "unrelated")


async def test_foreground_propagation_deletes_dependents_first(core):
    owner = await make_owner(core)
    held = owned_pod("child", owner)
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await core.create_namespaced_pod("default", held)
    await core.delete_namespaced_config_map("owner", "default", propagation_policy="Foreground")

    async def child_deleting():
        return (await core.read_namespaced_pod("child", "default")).metadata.deletion_timestamp

    await eventually(child_deleting)
    waiting = await core.read_namespaced_config_map("owner", "default")
    assert waiting.metadata.deletion_timestamp and "foregroundDeletion" in waiting.metadata.finalizers
    await core.patch_namespaced_pod("child", "default", {"metadata": {"finalizers": None}})

    async def owner_gone():
        try:
            await core.read_namespaced_config_map("owner", "default")
        except ApiException as exc:
            return exc.status == 404
        return False

    await eventually(owner_gone)
    assert await gone(core, "child")


async def test_orphan_propagation_keeps_dependents(core):
    owner = await make_owner(core)
    await core.create_namespaced_pod("default", owned_pod("child", owner))
    await core.delete_namespaced_config_map("owner", "default", propagation_policy="Orphan")

    async def orphaned():
        child = await core.read_namespaced_pod("child", "default")
        return not child.metadata.owner_references

    await eventually(orphaned)
    with pytest.raises(ApiException):
        await core.read_namespaced_config_map("owner", "default")


async def test_dependent_of_missing_owner_is_collected(core):
    class Ghost:
        class metadata:
            name = "ghost"
            uid = "00000000-0000-0000-0000-000000000000"

    await core.create_namespaced_pod("default", owned_pod("child", Ghost))
    await eventually(lambda: gone(core, "child"))


async def test_dependent_with_a_surviving_owner_stays(core):
    first = await make_owner(core, "first")
    second = await make_owner(core, "second")
    body = owned_pod("child", first, controller=False)
    body["metadata"]["ownerReferences"].append({
        "apiVersion": "v1", "kind": "ConfigMap", "name": "second", "uid": second.metadata.uid})
    await core.create_namespaced_pod("default", body)
    await core.delete_namespaced_config_map("first", "default")

    async def one_owner_left():
        child = await core.read_namespaced_pod("child", "default")
        return [r.name for r in child.metadata.owner_references or []] == ["second"]

    await eventually(one_owner_left)


async def test_delete_collection(core):
    for name, app in (("a", "x"), ("b", "x"), ("c", "y")):
        await core.create_namespaced_pod("default", pod(name, {"app": app}))
    await core.delete_collection_namespaced_pod("default", label_selector="app=x")
    remaining = await core.list_namespaced_pod("default")
    assert [p.metadata.name for p in remaining.items] == ["c"]


async def test_namespace_deletion_removes_contents(core):
    await core.create_namespace({"metadata": {"name": "doomed"}})
    await core.create_namespaced_pod("doomed", pod("a"))
    await core.delete_namespace("doomed")
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod("doomed", pod("b"))
    assert exc.value.status in (403, 404)

    async def ns_gone():
        try:
            await core.read_namespace("doomed")
        except ApiException as err:
            return err.status == 404
        return False

    await eventually(ns_gone)
    assert await gone(core, "a", "doomed")


async def _phase_is(core, name: str, phase: str) -> bool:
    return (await core.read_namespaced_pod(name, "default")).status.phase == phase


async def _all_gone(core, *names: str) -> bool:
    return all([await gone(core, n) for n in names])
