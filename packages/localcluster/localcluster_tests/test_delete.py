"""Deletion over HTTP: preconditions, finalizers, grace periods, propagation and garbage collection."""

from __future__ import annotations

import asyncio
import json

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from localcluster.testing import until

from .test_crud import pod


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
    assert json.loads(exc.value.body)["message"] == (
        f'Operation cannot be fulfilled on Pod "a": the UID in the precondition (not-the-uid) does not match the UID '
        f"in record ({created.metadata.uid}). The object might have been deleted and then recreated")
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
    await until(lambda: _phase_is(core, "slow", "Running"))
    pending = await core.delete_namespaced_pod("slow", "default")
    assert pending.metadata.deletion_timestamp is not None
    assert pending.metadata.deletion_grace_period_seconds == 30
    assert not await gone(core, "slow")  # still terminating
    await until(lambda: gone(core, "slow"))


@pytest.mark.runner("scripted")
async def test_force_delete_skips_grace(cluster, core):
    cluster.runner.set_script("default/stuck", {"stuck_terminating": True})
    await core.create_namespaced_pod("default", pod("stuck"))
    await until(lambda: _phase_is(core, "stuck", "Running"))
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
    await until(lambda: _all_gone(core, "child-1", "child-2"))
    assert not await gone(core, "unrelated")


async def test_foreground_propagation_deletes_dependents_first(core):
    owner = await make_owner(core)
    held = owned_pod("child", owner)
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await core.create_namespaced_pod("default", held)
    await core.delete_namespaced_config_map("owner", "default", propagation_policy="Foreground")

    async def child_deleting():
        return (await core.read_namespaced_pod("child", "default")).metadata.deletion_timestamp

    await until(child_deleting)
    waiting = await core.read_namespaced_config_map("owner", "default")
    assert waiting.metadata.deletion_timestamp and "foregroundDeletion" in waiting.metadata.finalizers
    await core.patch_namespaced_pod("child", "default", {"metadata": {"finalizers": None}})

    async def owner_gone():
        try:
            await core.read_namespaced_config_map("owner", "default")
        except ApiException as exc:
            return exc.status == 404
        return False

    await until(owner_gone)
    assert await gone(core, "child")


async def test_orphan_propagation_keeps_dependents(core):
    owner = await make_owner(core)
    await core.create_namespaced_pod("default", owned_pod("child", owner))
    await core.delete_namespaced_config_map("owner", "default", propagation_policy="Orphan")

    async def orphaned():
        child = await core.read_namespaced_pod("child", "default")
        return not child.metadata.owner_references

    await until(orphaned)
    with pytest.raises(ApiException):
        await core.read_namespaced_config_map("owner", "default")


async def test_dependent_of_missing_owner_is_collected(core):
    class Ghost:
        class metadata:
            name = "ghost"
            uid = "00000000-0000-0000-0000-000000000000"

    await core.create_namespaced_pod("default", owned_pod("child", Ghost))
    await until(lambda: gone(core, "child"))


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

    await until(one_owner_left)


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

    await until(ns_gone)
    assert await gone(core, "a", "doomed")


async def _phase_is(core, name: str, phase: str) -> bool:
    return (await core.read_namespaced_pod(name, "default")).status.phase == phase


async def _all_gone(core, *names: str) -> bool:
    return all([await gone(core, n) for n in names])


# --- the answer to a DELETE: status code and body, as DeleteResource and Store.Delete give them -----

async def call(cluster, method: str, path: str, body: dict | None = None, **params) -> tuple[int, dict]:

    async with cluster.session() as session, session.request(
            method, cluster.url + path, json=body, params={k: str(v) for k, v in params.items()}) as answer:
        return answer.status, await answer.json()


CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


async def test_an_object_left_waiting_on_finalizers_answers_200_with_it_marked(cluster, core):
    await core.create_namespaced_config_map("default", {"metadata": {"name": "held", "finalizers": ["x.dev/hold"]}})
    code, body = await call(cluster, "DELETE", f"{CONFIGMAPS}/held")
    assert code == 200  # not 202: the real handler keeps 202 for orphanDependents=false alone
    meta = body["metadata"]
    assert body["kind"] == "ConfigMap" and meta["deletionTimestamp"] and meta["deletionGracePeriodSeconds"] == 0
    assert "generation" not in meta  # a ConfigMap has none: its strategy never sets one
    code, again = await call(cluster, "DELETE", f"{CONFIGMAPS}/held")
    assert code == 200 and again["metadata"]["resourceVersion"] == meta["resourceVersion"]  # nothing new to write


async def test_marking_for_deletion_makes_a_new_generation_of_an_object_that_has_one(cluster, core):
    # A kind that does not track it keeps the generation its create gave (rest.BeforeCreate leaves it), and
    # marking bumps whatever generation is there (markAsDeleting); pods' own: test_an_unscheduled_pod_...
    await core.create_namespaced_config_map("default", {"metadata": {"name": "given", "generation": 3,
                                                                     "finalizers": ["x.dev/hold"]}})
    code, body = await call(cluster, "DELETE", f"{CONFIGMAPS}/given")
    assert code == 200 and body["metadata"]["generation"] == 4


async def test_foreground_deletion_and_a_namespace_answer_200_with_the_object(cluster, core):
    await make_owner(core)
    code, body = await call(cluster, "DELETE", f"{CONFIGMAPS}/owner", {"propagationPolicy": "Foreground"})
    assert code == 200 and body["metadata"]["finalizers"] == ["foregroundDeletion"]
    await core.create_namespace({"metadata": {"name": "doomed"}})
    code, body = await call(cluster, "DELETE", "/api/v1/namespaces/doomed")
    assert code == 200 and body["kind"] == "Namespace" and body["status"]["phase"] == "Terminating"


async def test_orphan_dependents_false_on_an_object_not_gone_at_once_answers_202(cluster, core):
    await core.create_namespaced_config_map("default", {"metadata": {"name": "held", "finalizers": ["x.dev/hold"]}})
    code, body = await call(cluster, "DELETE", f"{CONFIGMAPS}/held", orphanDependents="false")
    assert code == 202 and body["metadata"]["deletionTimestamp"]
    # kubernetes_asyncio takes the 202 as a success too.
    await core.create_namespaced_config_map("default", {"metadata": {"name": "other", "finalizers": ["x.dev/h"]}})
    _, status, _ = await core.delete_namespaced_config_map_with_http_info("other", "default", orphan_dependents=False)
    assert status == 202


async def test_an_object_gone_at_once_answers_a_status_unless_its_registry_returns_it(cluster, core):
    created = await core.create_namespaced_config_map("default", {"metadata": {"name": "plain"}})
    code, body = await call(cluster, "DELETE", f"{CONFIGMAPS}/plain", orphanDependents="false")
    assert code == 200  # gone at once: 200 whatever the options
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": {"name": "plain", "kind": "configmaps", "uid": created.metadata.uid}}
    await core.create_namespaced_pod("default", pod("p"))
    code, body = await call(cluster, "DELETE", "/api/v1/namespaces/default/pods/p")
    assert code == 200 and body["kind"] == "Pod" and body["metadata"]["name"] == "p"
    await core.create_namespaced_resource_quota("default", {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}})
    code, body = await call(cluster, "DELETE", "/api/v1/namespaces/default/resourcequotas/q")
    assert code == 200 and body["kind"] == "ResourceQuota"


@pytest.mark.runner("scripted")
async def test_a_pod_given_a_grace_period_answers_200_with_it_marked(cluster, core):
    cluster.runner.set_script("default/slow", {"terminate_after": 0.3})
    created = await core.create_namespaced_pod("default", pod("slow"))
    await until(lambda: _phase_is(core, "slow", "Running"))
    code, body = await call(cluster, "DELETE", "/api/v1/namespaces/default/pods/slow")
    assert code == 200 and body["metadata"]["deletionGracePeriodSeconds"] == 30
    assert body["metadata"]["generation"] == created.metadata.generation + 1
    await until(lambda: gone(core, "slow"))


async def test_delete_collection_answers_the_list_as_it_was(cluster, core):
    await core.create_namespaced_config_map("default", {"metadata": {"name": "a", "finalizers": ["x.dev/h"]}})
    code, body = await call(cluster, "DELETE", CONFIGMAPS)
    assert code == 200 and body["kind"] == "ConfigMapList"
    # kube-root-ca.crt too (the root-ca-cert-publisher makes it again at once)
    assert [(o["metadata"]["name"], o["metadata"].get("deletionTimestamp")) for o in body["items"]] == \
        [("a", None), ("kube-root-ca.crt", None)]


async def test_background_policy_drops_the_orphan_finalizer_and_deletes_at_once(core):
    await core.create_namespaced_config_map("default", {"metadata": {"name": "a", "finalizers": ["orphan"]}})
    await core.delete_namespaced_config_map("a", "default", propagation_policy="Background")
    with pytest.raises(ApiException) as exc:
        await core.read_namespaced_config_map("a", "default")
    assert exc.value.status == 404


# --- a pod deleted with no grace left: marked, then removed (MODIFIED, then DELETED) ----------------

async def _deletion_events(cluster, name: str, since: str) -> list[tuple[str, dict]]:
    from .test_watch import PODS, RawWatch

    async with RawWatch(cluster, PODS, resourceVersion=since) as w:
        seen = []
        while not seen or seen[-1][0] != "DELETED":
            ev = await w.next()
            if ev["object"]["metadata"]["name"] == name:
                seen.append((ev["type"], ev["object"]))
        return seen


async def test_an_unscheduled_pod_is_seen_marked_then_deleted(cluster, core):
    created = await core.create_namespaced_pod("default", pod("a"))
    deleted = await core.delete_namespaced_pod("a", "default")
    assert deleted.metadata.deletion_timestamp and deleted.metadata.deletion_grace_period_seconds == 0
    events = await _deletion_events(cluster, "a", created.metadata.resource_version)
    assert [kind for kind, _ in events] == ["MODIFIED", "DELETED"]
    marked, final = events[0][1]["metadata"], events[1][1]["metadata"]
    assert marked["deletionTimestamp"] and marked["deletionGracePeriodSeconds"] == 0
    assert marked["generation"] == 2
    assert int(final["resourceVersion"]) == int(marked["resourceVersion"]) + 1
    assert final["deletionTimestamp"] == marked["deletionTimestamp"]


@pytest.mark.runner("scripted")
async def test_a_force_deleted_pod_and_a_graceful_one_end_marked_then_deleted(cluster, core):
    cluster.runner.set_script("default/stuck", {"stuck_terminating": True})
    cluster.runner.set_script("default/slow", {"terminate_after": 0.1})
    for name in ("stuck", "slow"):
        await core.create_namespaced_pod("default", pod(name))
        await until(lambda name=name: _phase_is(core, name, "Running"))
    since = (await core.list_namespaced_pod("default")).metadata.resource_version
    await core.delete_namespaced_pod("stuck", "default")
    await core.delete_namespaced_pod("stuck", "default", grace_period_seconds=0)  # the user forces it
    stuck = await _deletion_events(cluster, "stuck", since)
    assert [(kind, obj["metadata"]["deletionGracePeriodSeconds"]) for kind, obj in stuck] == [
        ("MODIFIED", 30), ("MODIFIED", 0), ("DELETED", 0)]
    await core.delete_namespaced_pod("slow", "default")  # its kubelet deletes it with no grace left
    slow = await _deletion_events(cluster, "slow", since)
    kinds = [kind for kind, _ in slow]
    assert kinds[0] == "MODIFIED" and kinds[-2:] == ["MODIFIED", "DELETED"]
    assert slow[-2][1]["metadata"]["deletionGracePeriodSeconds"] == 0
    assert slow[-2][1]["status"]["phase"] == "Failed"
