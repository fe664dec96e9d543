"""Writes the API server refuses, and pods that vanish as soon as they are made (issue 12, faults 3, 6-9).

Every refused write is a Warning Event on the job with the server's message and a ReplicaFailure
condition while it lasts; it never costs the reconcile's other writes or its Events; the job is
retried with backoff until the server accepts. Pods deleted just after their creation are replaced
at once, not after the expectation TTL.
"""

from __future__ import annotations

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from .conftest import FOREVER, condition, genericjob, phase, template, until

BAD_QUANTITY = ("Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression "
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
PORTS = {"ports": [{"name": "http", "port": 2222}]}


def with_cpu(cpu: str) -> dict:
    made = template(FOREVER)
    made["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return made


def failure(job: dict) -> tuple[str, str, str] | None:
    found = condition(job, "ReplicaFailure")
    return (found["status"], found["reason"], found["message"]) if found else None


async def test_pods_deleted_just_after_creation_are_replaced_at_once(cluster, controller, jobs, history):
    """Each job's pod is deleted the moment the server stores it (before the controller can look at
    the job again); the controller makes a new one within seconds, far inside the 60 s TTL."""
    pods = cluster.registry.get("", "v1", "pods")
    first_uids: dict[str, str] = {}

    def delete_first_pod(ev) -> None:
        meta = ev.obj["metadata"]
        if ev.key == ("", "pods") and ev.type == "ADDED" and meta["name"] not in first_uids:
            first_uids[meta["name"]] = meta["uid"]
            # Deleted within the create, before any watch has sent the ADDED: the controller can never record
            # this pod (a later delete raced the controller's look at the job, and a recorded pod's loss fails it).
            cluster.api.delete(pods, meta["namespace"], meta["name"], {"gracePeriodSeconds": 0})

    cluster.store.subscribe(delete_first_pod)
    names = [f"job{i}" for i in range(5)]
    for name in names:
        await jobs.submit(genericjob(name, {"worker": 1}, script=FOREVER))
    for name in names:
        pod = f"{name}-worker-0"
        await until(lambda pod=pod: len(history.uids(pod)) >= 2 and history.uids(pod)[0] in history.deleted,
                    timeout=10, what=f"{pod} replaced")
        running = await jobs.wait_phase(name, "Running", timeout=10)
        [live] = await jobs.pods(name)
        assert live.metadata.uid == history.uids(pod)[-1] != first_uids[pod]
        assert phase(running) == "Running"
    # Lowering expectations early never makes the controller ask twice for a pod it has made.
    assert cluster.faults.requests[("create", "pods", 409)] == 0
    assert cluster.faults.requests[("create", "pods", 201)] == 10


async def test_a_pod_refused_with_400_is_visible_and_the_rest_is_made(cluster, controller, jobs):
    """`cpu: 1e1.5` makes the API server's decoder answer 400 (the CRD lets it in: its quantity pattern, as
    controller-gen writes it, allows a decimal exponent). The valid pods of the types listed after it, and every
    Service, are still made; the job says why one pod is missing."""
    job = genericjob("job", {"bad": 1, "good": 2}, service=PORTS)
    job["spec"]["replicaSpecs"][0]["template"] = with_cpu("1e1.5")
    job["spec"]["replicaSpecs"][1]["template"] = template(FOREVER)
    await jobs.submit(job)
    made = await jobs.wait_pods("job", lambda found: len(found) == 2)
    assert [p.metadata.name for p in made] == ["job-good-0", "job-good-1"]
    await until(lambda: _services_count(jobs, 3), what="services")
    assert await _service_names(jobs) == ["job-bad-0", "job-good-0", "job-good-1"]
    [refused] = await jobs.wait_event("job", "FailedCreate")
    assert refused.type == "Warning"
    assert refused.message == f"Error creating pod job-bad-0: {BAD_QUANTITY}"
    created = {e.message for e in await jobs.wait_event("job", "SuccessfulCreate", count=2)}
    assert created == {"Created pod: job-good-0", "Created pod: job-good-1"}
    shown = await jobs.wait(
        "job", lambda j: failure(j) == ("True", "FailedCreate", f"Error creating pod job-bad-0: {BAD_QUANTITY}"))
    assert phase(shown) == "Pending"
    # Retried with backoff: the same Warning counted again, not a new Event per attempt.
    await until(lambda: _event_count(jobs, "FailedCreate", 2), what="a retry")

    # Fixed template: the pod is made and the condition clears.
    fixed = [{**spec, "template": with_cpu("500m") if spec["type"] == "bad" else spec["template"]}
             for spec in job["spec"]["replicaSpecs"]]
    await jobs.patch("job", {"spec": {"replicaSpecs": fixed}})
    cleared = await jobs.wait("job", lambda j: phase(j) == "Running" and (failure(j) or ("",))[0] == "False")
    assert failure(cleared) == ("False", "NoFailure", "No replica has failed.")
    assert len(await jobs.pods("job")) == 3


async def test_a_pod_refused_with_403_quota_is_visible_then_made(cluster, controller, jobs):
    cluster.faults.configure(error_rate=1.0, error_code=403, verbs=["create"], resources=["pods"])
    await jobs.submit(genericjob("job", {"worker": 2}, script=FOREVER))
    [refused] = await jobs.wait_event("job", "FailedCreate")
    quota = 'pods "job-worker-0" is forbidden: exceeded quota: injected'
    assert refused.type == "Warning" and refused.message.startswith(f"Error creating pod job-worker-0: {quota}")
    shown = await jobs.wait("job", lambda j: (failure(j) or ("",))[0] == "True")
    assert failure(shown)[1] == "FailedCreate" and quota in failure(shown)[2]
    assert cluster.faults.injected["403"] >= 1
    cluster.faults.clear()
    running = await jobs.wait("job", lambda j: phase(j) == "Running" and failure(j)[0] == "False", timeout=15)
    assert failure(running)[1] == "NoFailure"
    assert len(await jobs.pods("job")) == 2


async def test_a_refused_service_costs_no_other_write_nor_event(cluster, controller, jobs):
    cluster.faults.configure(error_rate=1.0, error_code=403, verbs=["create"], resources=["services"])
    await jobs.submit(genericjob("job", {"worker": 2}, script=FOREVER, service=PORTS))
    await jobs.wait_phase("job", "Running")
    [running] = await jobs.wait_event("job", "Running")  # the phase Event of that reconcile is not lost
    assert running.message == "The job is running."
    [refused] = await jobs.wait_event("job", "FailedCreate")
    assert refused.type == "Warning"
    assert refused.message.startswith('Error creating Service job-worker-0: services "job-worker-0" is forbidden: '
                                      "exceeded quota")
    shown = await jobs.wait("job", lambda j: (failure(j) or ("",))[0] == "True")
    assert failure(shown)[1] == "FailedCreate" and "Service job-worker-0" in failure(shown)[2]
    assert await jobs.services("job") == []
    cluster.faults.clear()
    await until(lambda: _services_count(jobs, 2), timeout=15, what="services made")
    await jobs.wait("job", lambda j: failure(j)[0] == "False", timeout=15)


async def test_a_refused_delete_is_visible_then_done(cluster, controller, jobs):
    await jobs.submit(genericjob("job", {"worker": 1}, script=FOREVER))
    await jobs.wait_phase("job", "Running")
    cluster.faults.configure(error_rate=1.0, error_code=403, verbs=["delete"], resources=["pods"])
    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": True}}}})  # pausing deletes the pods
    [refused] = await jobs.wait_event("job", "FailedDelete")
    assert refused.type == "Warning"
    assert refused.message.startswith('Error deleting pod job-worker-0: pods "job-worker-0" is forbidden')
    await jobs.wait_event("job", "Paused")  # the phase Event of the reconcile that was refused
    shown = await jobs.wait("job", lambda j: (failure(j) or ("",))[0] == "True")
    assert failure(shown)[1] == "FailedDelete" and phase(shown) == "Paused"
    assert len(await jobs.pods("job")) == 1
    assert not [e for e in await jobs.events("job") if e.reason == "SuccessfulDelete"]  # nothing was deleted
    cluster.faults.clear()
    await jobs.wait_pods("job", lambda found: not found, timeout=15)
    await jobs.wait("job", lambda j: failure(j)[0] == "False", timeout=15)


async def test_service_ports_the_service_api_refuses_are_refused_at_apply(cluster, jobs):
    for ports, field in (([{"name": "HTTP", "port": 80}], "spec.service.ports[0].name"),
                         ([{"port": 80, "protocol": "tcp"}], "spec.service.ports[0].protocol"),
                         ([{"port": 70000}], "spec.service.ports[0].port"),
                         ([{"port": 80, "targetPort": "much-too-long-name"}], "spec.service.ports[0].targetPort"),
                         ([{"port": 80, "targetPort": 0}], "spec.service.ports[0].targetPort"),
                         ([{"port": 80}, {"port": 81}], "spec.service.ports")):
        with pytest.raises(ApiException) as refused:
            await jobs.submit(genericjob("job", {"worker": 1}, service={"ports": ports}))
        assert refused.value.status == 422, ports
        assert field in refused.value.body, (ports, refused.value.body)


async def test_services_follow_a_ports_edit(cluster, controller, jobs):
    await jobs.submit(genericjob("job", {"worker": 2}, script=FOREVER, service=PORTS))
    await until(lambda: _services_count(jobs, 2), what="services")
    new_ports = [{"name": "grpc", "port": 9000, "targetPort": "grpc"}, {"name": "dns", "port": 53, "protocol": "UDP"}]
    await jobs.patch("job", {"spec": {"service": {"ports": new_ports}}})

    async def updated():
        found = await jobs.services("job")
        return len(found) == 2 and all(
            [(p.name, p.port, p.target_port, p.protocol) for p in s.spec.ports]
            == [("grpc", 9000, "grpc", "TCP"), ("dns", 53, 53, "UDP")] for s in found)

    await until(updated, what="ports updated")


async def test_podgroup_follows_scale_edits(cluster, controller, jobs):
    await jobs.submit(genericjob("job", {"worker": 3}, script=FOREVER,
                                 scheduler={"t9kScheduler": {"queue": "gpu", "priority": 7}}))
    await until(lambda: _podgroup_spec(jobs, {"minMember": 3, "queue": "gpu", "priority": 7}), what="podgroup")
    for replicas in (5, 2):
        job = await jobs.get("job")
        specs = [{**job["spec"]["replicaSpecs"][0], "replicas": replicas}]
        await jobs.patch("job", {"spec": {"replicaSpecs": specs}})
        await until(lambda n=replicas: _podgroup_spec(jobs, {"minMember": n, "queue": "gpu", "priority": 7}),
                    what=f"minMember {replicas}")
        await jobs.wait_pods("job", lambda found, n=replicas: len([p for p in found
                                                                    if not p.metadata.deletion_timestamp]) == n)
    await jobs.patch("job", {"spec": {"scheduler": {"t9kScheduler": {"queue": "cpu", "priority": 9}}}})
    await until(lambda: _podgroup_spec(jobs, {"minMember": 2, "queue": "cpu", "priority": 9}), what="queue, priority")
    [group] = await jobs.podgroups()
    assert group["metadata"]["name"] == "job"  # the same PodGroup, patched


async def _service_names(jobs) -> list[str]:
    return [s.metadata.name for s in await jobs.services("job")]


async def _services_count(jobs, count: int) -> bool:
    return len(await jobs.services("job")) == count


async def _event_count(jobs, reason: str, count: int) -> bool:
    return any(e.reason == reason and (e.count or 1) >= count for e in await jobs.events("job"))


async def _podgroup_spec(jobs, spec: dict) -> bool:
    groups = await jobs.podgroups()
    return len(groups) == 1 and groups[0]["spec"] == spec
