"""Object semantics through kubernetes_asyncio over HTTP: create, read, update, patch, errors."""

from __future__ import annotations

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from localcluster.errors import STALE


def pod(name: str, labels: dict | None = None, **meta) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}, **meta},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}]},
    }


def status_of(exc: ApiException) -> dict:
    import json

    return json.loads(exc.body)


async def test_discovery_and_version(api_client, core):
    from kubernetes_asyncio import client

    version = await client.VersionApi(api_client).get_code()
    assert version.major == "1" and version.minor == "35"
    resources = await core.get_api_resources()
    names = {r.name for r in resources.resources}
    assert {"pods", "pods/status", "services", "namespaces", "events"} <= names
    groups = await client.ApisApi(api_client).get_api_versions()
    assert "coordination.k8s.io" in {g.name for g in groups.groups}


async def test_create_assigns_metadata(core):
    created = await core.create_namespaced_pod("default", pod("a"))
    meta = created.metadata
    assert meta.uid and meta.creation_timestamp and meta.generation == 1
    assert int(meta.resource_version) > 0
    assert created.status.phase == "Pending"
    assert created.spec.restart_policy == "Always"  # defaulted like the apiserver


async def test_resource_versions_come_from_one_global_counter(core):
    a = await core.create_namespaced_pod("default", pod("a"))
    svc = await core.create_namespaced_service("default", {
        "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    b = await core.create_namespaced_pod("default", pod("b"))
    rvs = [int(x.metadata.resource_version) for x in (a, svc, b)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


async def test_generate_name(core):
    created = await core.create_namespaced_pod("default", pod("", generateName="worker-"))
    assert created.metadata.name.startswith("worker-") and len(created.metadata.name) == len("worker-") + 5


async def test_already_exists_and_not_found(core):
    await core.create_namespaced_pod("default", pod("a"))
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod("default", pod("a"))
    assert exc.value.status == 409
    body = status_of(exc.value)
    assert body["reason"] == "AlreadyExists" and body["message"] == 'pods "a" already exists'
    with pytest.raises(ApiException) as exc:
        await core.read_namespaced_pod("missing", "default")
    assert exc.value.status == 404
    assert status_of(exc.value)["message"] == 'pods "missing" not found'


async def test_namespace_must_exist(core):
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod("nowhere", pod("a"))
    assert exc.value.status == 404
    assert status_of(exc.value)["message"] == 'namespaces "nowhere" not found'
    await core.create_namespace({"metadata": {"name": "nowhere"}})
    await core.create_namespaced_pod("nowhere", pod("a"))


async def test_update_with_stale_resource_version_conflicts(core):
    created = await core.create_namespaced_pod("default", pod("a"))
    first = created.to_dict()
    fresh = await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"x": "1"}}})
    assert fresh.metadata.resource_version != created.metadata.resource_version
    body = {"metadata": {"name": "a", "resourceVersion": first["metadata"]["resource_version"],
                         "labels": {"x": "2"}}, "spec": pod("a")["spec"]}
    with pytest.raises(ApiException) as exc:
        await core.replace_namespaced_pod("a", "default", body)
    assert exc.value.status == 409
    body = status_of(exc.value)
    assert body["reason"] == "Conflict"
    assert body["message"] == f'Operation cannot be fulfilled on pods "a": {STALE}'


async def test_update_without_change_keeps_resource_version(core):
    created = await core.create_namespaced_pod("default", pod("a", {"x": "1"}))
    again = await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"x": "1"}}})
    assert again.metadata.resource_version == created.metadata.resource_version


async def test_generation_bumps_only_on_spec_changes(core):
    await core.create_namespaced_pod("default", pod("a"))
    labelled = await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"a": "b"}}})
    assert labelled.metadata.generation == 1
    changed = await core.patch_namespaced_pod(
        "a", "default", {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}})
    assert changed.metadata.generation == 2


async def test_kinds_whose_strategy_keeps_no_generation_have_none(core):
    """Services, ConfigMaps (and Secrets, Namespaces, RBAC...) get no generation, on create or on any change."""
    await core.create_namespaced_service("default", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    changed = await core.patch_namespaced_service("s", "default", {"spec": {"sessionAffinity": "ClientIP"}})
    assert changed.metadata.generation is None
    created = await core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"k": "v"}})
    changed = await core.patch_namespaced_config_map("c", "default", {"data": {"k": "w"}})
    assert created.metadata.generation is None and changed.metadata.generation is None
    # What the create gave stays, and an update can change it no more than on a real server (rest.BeforeUpdate).
    await core.create_namespaced_config_map("default", {"metadata": {"name": "g", "generation": 7}})
    changed = await core.patch_namespaced_config_map("g", "default", {"metadata": {"generation": 9},
                                                                        "data": {"k": "v"}})
    assert changed.metadata.generation == 7
    with pytest.raises(ApiException) as exc:  # ValidateObjectMeta's nonnegative check
        await core.create_namespaced_config_map("default", {"metadata": {"name": "n", "generation": -1}})
    assert exc.value.status == 422
    message = status_of(exc.value)["message"]
    assert "metadata.generation: Invalid value: -1: must be greater than or equal to 0" in message


async def test_pod_spec_is_immutable(core):
    await core.create_namespaced_pod("default", pod("a"))
    with pytest.raises(ApiException) as exc:
        await core.patch_namespaced_pod("a", "default", {"spec": {"restartPolicy": "Never"}})
    assert exc.value.status == 422
    assert "pod updates may not change fields" in status_of(exc.value)["message"]
    image = await core.patch_namespaced_pod(
        "a", "default", {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}})
    assert image.spec.containers[0].image == "busybox:1.37"


async def test_invalid_names_are_rejected_with_the_field(core):
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_service("default", {
            "metadata": {"name": "9-starts-with-digit"}, "spec": {"ports": [{"port": 80}]}})
    body = status_of(exc.value)
    assert exc.value.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert body["message"].startswith('Service "9-starts-with-digit" is invalid: metadata.name: Invalid value')
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod("default", pod("a", {"too-long": "x" * 64}))
    assert status_of(exc.value)["details"]["causes"][0]["field"] == "metadata.labels"


async def test_patch_types(core):
    from kubernetes_asyncio.client import ApiClient  # noqa: F401 - documents which client sends them

    await core.create_namespaced_pod("default", pod("a", {"keep": "1", "drop": "1"}))
    merged = await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"drop": None}}})
    assert merged.metadata.labels == {"keep": "1"}
    jp = await core.patch_namespaced_pod(
        "a", "default", [{"op": "add", "path": "/metadata/labels/new", "value": "2"}])
    assert jp.metadata.labels == {"keep": "1", "new": "2"}


async def test_list_pagination_is_consistent(core):
    for i in range(25):
        await core.create_namespaced_pod("default", pod(f"p{i:02d}"))
    first = await core.list_namespaced_pod("default", limit=10)
    assert len(first.items) == 10 and first.metadata._continue
    assert first.metadata.remaining_item_count == 15
    # A pod created between pages is not in this list: pages come from one snapshot.
    await core.create_namespaced_pod("default", pod("p99"))
    names = [p.metadata.name for p in first.items]
    token = first.metadata._continue
    while token:
        page = await core.list_namespaced_pod("default", limit=10, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        names += [p.metadata.name for p in page.items]
        token = page.metadata._continue
    assert names == [f"p{i:02d}" for i in range(25)]


async def test_expired_continue_token_is_410(cluster, core):
    for i in range(3):
        await core.create_namespaced_pod("default", pod(f"p{i}"))
    first = await core.list_namespaced_pod("default", limit=1)
    cluster.expire_history()
    with pytest.raises(ApiException) as exc:
        await core.list_namespaced_pod("default", limit=1, _continue=first.metadata._continue)
    assert exc.value.status == 410 and status_of(exc.value)["reason"] == "Expired"


async def test_label_and_field_selectors(cluster, core):
    await core.create_namespaced_pod("default", pod("a", {"app": "x", "tier": "web"}))
    await core.create_namespaced_pod("default", pod("b", {"app": "y"}))
    await core.create_namespaced_pod("default", pod("c", {"app": "x"}))

    async def names(**kw):
        return sorted(p.metadata.name for p in (await core.list_namespaced_pod("default", **kw)).items)

    assert await names(label_selector="app=x") == ["a", "c"]
    assert await names(label_selector="app in (x,y),!tier") == ["b", "c"]
    assert await names(label_selector="app!=x") == ["b"]
    assert await names(field_selector="metadata.name=b") == ["b"]
    await core.patch_namespaced_pod_status("c", "default", {"status": {"phase": "Running"}})
    assert await names(field_selector="status.phase=Running") == ["c"]
    with pytest.raises(ApiException) as exc:
        await core.list_namespaced_pod("default", field_selector="spec.bogus=1")
    assert exc.value.status == 400


async def test_list_across_namespaces(core):
    await core.create_namespace({"metadata": {"name": "other"}})
    await core.create_namespaced_pod("default", pod("a"))
    await core.create_namespaced_pod("other", pod("a"))
    everything = await core.list_pod_for_all_namespaces()
    assert sorted(p.metadata.namespace for p in everything.items) == ["default", "other"]


async def test_dry_run_stores_nothing(core):
    created = await core.create_namespaced_pod("default", pod("a"), dry_run="All")
    assert created.metadata.name == "a"
    with pytest.raises(ApiException):
        await core.read_namespaced_pod("a", "default")


async def test_paginated_list_at_a_compacted_version_is_410(cluster, core):
    first = await core.create_namespaced_pod("default", pod("a"))
    await core.create_namespaced_pod("default", pod("b"))
    cluster.expire_history()
    with pytest.raises(ApiException) as exc:
        await core.list_namespaced_pod("default", limit=1, resource_version=first.metadata.resource_version)
    assert exc.value.status == 410
    # Without a limit the watch cache serves it (NotOlderThan semantics), as the real server does.
    everything = await core.list_namespaced_pod("default", resource_version=first.metadata.resource_version)
    assert len(everything.items) == 2
