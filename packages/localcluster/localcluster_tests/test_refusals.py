"""Refusals a controller meets on a real server: undecodable quantities (400), Service ports the Service
API rejects (422 with field paths), and a full ResourceQuota (403, by fault injection)."""

from __future__ import annotations

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from .test_crud import pod, status_of


def with_resources(name: str, **resources) -> dict:
    made = pod(name)
    made["spec"]["containers"][0]["resources"] = resources
    return made


async def test_a_pod_with_a_bad_quantity_is_a_bad_request(core):
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod("default", with_resources("a", requests={"cpu": "lots"}))
    body = status_of(exc.value)
    assert exc.value.status == 400 and body["reason"] == "BadRequest"
    assert body["message"] == ('Pod in version "v1" cannot be handled as a Pod: quantities must match the regular '
                               "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod("default", with_resources("a", limits={"memory": "32MMi"}))
    assert status_of(exc.value)["message"].endswith("cannot be handled as a Pod: unable to parse quantity's suffix")
    made = await core.create_namespaced_pod("default", with_resources("a", requests={"cpu": "500m"}, limits={"cpu": 1}))
    assert made.spec.containers[0].resources.limits == {"cpu": "1"}
    # A patch is decoded too.
    with pytest.raises(ApiException) as exc:
        await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"x": "y"}},
                                                         "spec": {"overhead": {"cpu": "lots"}}})
    assert exc.value.status == 400


def service(name: str, ports: list[dict], **spec) -> dict:
    return {"metadata": {"name": name}, "spec": {"ports": ports, **spec}}


@pytest.mark.parametrize(("ports", "causes"), [
    ([{"name": "HTTP", "port": 80}], [("FieldValueInvalid", "spec.ports[0].name")]),
    ([{"port": 80, "protocol": "tcp"}], [("FieldValueNotSupported", "spec.ports[0].protocol")]),
    # targetPort defaults to port, so a port out of range makes two errors, as on a real server.
    ([{"port": 0}], [("FieldValueInvalid", "spec.ports[0].port"), ("FieldValueInvalid", "spec.ports[0].targetPort")]),
    ([{"port": 80, "targetPort": 70000}], [("FieldValueInvalid", "spec.ports[0].targetPort")]),
    ([{"port": 80, "targetPort": "80"}], [("FieldValueInvalid", "spec.ports[0].targetPort")]),
    ([{"port": 80, "targetPort": "a-very-long-port-name"}], [("FieldValueInvalid", "spec.ports[0].targetPort")]),
    ([{"port": 80, "nodePort": 30080}], [("FieldValueForbidden", "spec.ports[0].nodePort")]),
    ([{"name": "a", "port": 80}, {"port": 81}], [("FieldValueRequired", "spec.ports[1].name")]),
    ([{"name": "a", "port": 80}, {"name": "a", "port": 81}], [("FieldValueDuplicate", "spec.ports[1].name")]),
    ([{"name": "a", "port": 80}, {"name": "b", "port": 80}], [("FieldValueDuplicate", "spec.ports[1]")]),
])
async def test_service_ports_are_validated_as_the_service_api_does(core, ports, causes):
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_service("default", service("s", ports))
    body = status_of(exc.value)
    assert exc.value.status == 422 and body["reason"] == "Invalid"
    assert [(c["reason"], c["field"]) for c in body["details"]["causes"]] == causes
    assert body["message"].startswith(f'Service "s" is invalid: {"[" if len(causes) > 1 else ""}{causes[0][1]}')


async def test_valid_service_ports_are_defaulted(core):
    made = await core.create_namespaced_service("default", service("s", [
        {"name": "http", "port": 80, "targetPort": "web"}, {"name": "dns", "port": 53, "protocol": "UDP"},
        {"name": "tcp-dns", "port": 53, "targetPort": 0}]))
    assert [(p.name, p.port, p.target_port, p.protocol) for p in made.spec.ports] == [
        ("http", 80, "web", "TCP"), ("dns", 53, 53, "UDP"), ("tcp-dns", 53, 53, "TCP")]
    with pytest.raises(ApiException) as exc:
        await core.patch_namespaced_service("s", "default", {"spec": {"ports": [{"name": "Bad", "port": 1}]}})
    assert exc.value.status == 422


async def test_injected_403_is_the_quota_admission_answer(cluster, core):
    cluster.faults.configure(error_rate=1.0, error_code=403, verbs=["create"], resources=["pods"])
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod("default", pod("a"))
    body = status_of(exc.value)
    assert exc.value.status == 403 and body["reason"] == "Forbidden"
    assert body["message"].startswith('pods "a" is forbidden: exceeded quota: ')
    await core.list_namespaced_pod("default")  # other verbs pass
    cluster.faults.clear()
    await core.create_namespaced_pod("default", pod("a"))
    assert cluster.faults.injected["403"] == 1
