"""desired_service as a pure function, and what it makes is accepted by the API."""

from __future__ import annotations

import copy

from controller.jobs.children.pods import desired_pod
from controller.jobs.children.services import desired_service
from controller.jobs.schema.naming import owner_reference
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.genericjob.models import LABEL_JOB_NAME, LABEL_JOB_UID, LABEL_RANK, LABEL_REPLICA_TYPE, GenericJob
from localcluster import LocalCluster
from tests.builders import JobBuilder


def make_job(spec: dict, name: str = "generic-example", uid: str = "uid-1") -> GenericJob:
    return JobBuilder(name, namespace="ns", uid=uid).spec(**spec).model()


def guide_job(ports: list[dict] | None = None, replicas: int = 1) -> GenericJob:
    """The user guide's Service example: port 2222 named http on every replica."""
    return make_job({
        "service": {"ports": ports if ports is not None else [{"name": "http", "port": 2222}]},
        "replicaSpecs": [{"type": "worker", "replicas": replicas, "template": {"spec": {"containers": [
            {"name": "main", "image": "trainer"}]}}}],
    })


def test_the_user_guides_service_example():
    assert desired_service(GENERICJOB, guide_job(), "worker", 0) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "generic-example-worker-0",
            "namespace": "ns",
            "labels": {LABEL_JOB_NAME: "generic-example", LABEL_JOB_UID: "uid-1", LABEL_REPLICA_TYPE: "worker",
                       LABEL_RANK: "0"},
            "ownerReferences": [owner_reference(GENERICJOB.api, "generic-example", "uid-1")],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {LABEL_JOB_UID: "uid-1", LABEL_REPLICA_TYPE: "worker", LABEL_RANK: "0"},
            "ports": [{"name": "http", "port": 2222, "targetPort": 2222, "protocol": "TCP"}],
            "publishNotReadyAddresses": True,
        },
    }


def test_no_service_without_spec_service():
    job = make_job({"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [{}]}}}]})
    assert desired_service(GENERICJOB, job, "worker", 0) is None


def test_the_service_is_named_like_the_pod_and_selects_exactly_that_pod():
    job = guide_job(replicas=3)
    for rank in range(3):
        service, pod = desired_service(GENERICJOB, job, "worker", rank), desired_pod(GENERICJOB, job, "worker", rank)
        assert service["metadata"]["name"] == pod["metadata"]["name"] == f"generic-example-worker-{rank}"
        selector = service["spec"]["selector"].items()
        assert selector <= pod["metadata"]["labels"].items()
        others = [desired_pod(GENERICJOB, job, "worker", r)["metadata"]["labels"].items()
                  for r in range(3) if r != rank]
        assert not any(selector <= labels for labels in others)


def test_the_selector_uses_the_uid_so_a_recreated_job_never_selects_old_pods():
    old, new = guide_job(), make_job(guide_job().spec.model_dump(by_alias=True), uid="uid-2")
    assert not desired_service(GENERICJOB, new, "worker", 0)["spec"]["selector"].items() <= \
        desired_pod(GENERICJOB, old, "worker", 0)["metadata"]["labels"].items()


def test_ports_pass_through_with_the_api_servers_defaults():
    job = guide_job([
        {"name": "http", "port": 2222},
        {"name": "metrics", "port": 9090, "targetPort": "metrics-port", "protocol": "TCP"},
        {"name": "dns", "port": 53, "targetPort": 5353, "protocol": "UDP"},
    ])
    assert desired_service(GENERICJOB, job, "worker", 0)["spec"]["ports"] == [
        {"name": "http", "port": 2222, "targetPort": 2222, "protocol": "TCP"},
        {"name": "metrics", "port": 9090, "targetPort": "metrics-port", "protocol": "TCP"},
        {"name": "dns", "port": 53, "targetPort": 5353, "protocol": "UDP"},
    ]


def test_an_unnamed_single_port_and_no_ports():
    assert desired_service(GENERICJOB, guide_job([{"port": 80}]), "worker", 0)["spec"]["ports"] == [
        {"port": 80, "targetPort": 80, "protocol": "TCP"}]
    # A headless Service needs no ports: the replica still gets its host name.
    service = desired_service(GENERICJOB, guide_job([]), "worker", 0)
    assert service["spec"]["ports"] == [] and service["spec"]["clusterIP"] == "None"


async def test_services_are_accepted_by_the_api_server_unchanged_in_what_the_controller_sets():
    job = guide_job([{"name": "http", "port": 2222}, {"name": "grpc", "port": 9000, "targetPort": "grpc"}], 2)
    async with LocalCluster() as cluster:
        services = cluster.registry.get("", "v1", "services")
        cluster.api.ensure_namespace("ns")
        for rank in range(2):
            desired = desired_service(GENERICJOB, job, "worker", rank)
            stored = cluster.api.create(services, "ns", copy.deepcopy(desired))
            for key, value in desired["spec"].items():
                assert stored["spec"][key] == value
