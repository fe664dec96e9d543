"""The process runner records the scheduler's and the kubelet's Events about each pod, as a cluster does."""

from __future__ import annotations

from pathlib import Path

import pytest

from localcluster.testing import Kubectl, until

from .process_runner_support import config_error, process_pod, running, wait_phase, wait_pod
from .test_delete import gone

pytestmark = pytest.mark.runner("process")
CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"


async def reasons(core, name: str) -> list:
    listed = await core.list_namespaced_event("default", field_selector=f"involvedObject.name={name}")
    return sorted(listed.items, key=lambda e: int(e.metadata.resource_version))


async def test_a_pods_life_is_told_by_events(cluster, core):
    created = await core.create_namespaced_pod("default", process_pod("told", "sleep", "60"))
    await wait_pod(core, "told", running)

    async def started():
        events = await reasons(core, "told")
        return events if [e.reason for e in events] == ["Scheduled", "Pulled", "Created", "Started"] else None

    scheduled, pulled, made, began = await until(started)
    assert (scheduled.type, scheduled.message, scheduled.reporting_component, scheduled.source.component) == (
        "Normal", "Successfully assigned default/told to localnode", "default-scheduler", None)
    assert scheduled.event_time is not None and scheduled.count is None
    assert pulled.message == 'Container image "ignored" already present on machine and can be accessed by the pod'
    assert (made.message, began.message) == ("Container created", "Container started")
    for event in (pulled, made, began):
        assert (event.type, event.source.component, event.source.host, event.reporting_component) == (
            "Normal", "kubelet", "localnode", "kubelet")
        assert event.involved_object.field_path == "spec.containers{main}"
        assert event.count == 1 and event.first_timestamp is not None
    for event in (scheduled, pulled, made, began):
        involved = event.involved_object
        assert (involved.kind, involved.name, involved.uid, involved.api_version) == (
            "Pod", "told", created.metadata.uid, "v1")
        assert event.metadata.name.startswith("told.")

    await core.delete_namespaced_pod("told", "default")
    await until(lambda: gone(core, "told"))
    killing = [e for e in await reasons(core, "told") if e.reason == "Killing"]
    assert [(e.type, e.message) for e in killing] == [("Normal", "Stopping container main")]


async def test_a_pod_created_on_the_node_has_no_scheduler_event(cluster, core):
    """Bound at creation, it never met the scheduler: the kubelet's events only."""
    pod = process_pod("bound", "sleep", "60")
    pod["spec"]["nodeName"] = "localnode"
    await core.create_namespaced_pod("default", pod)
    await wait_pod(core, "bound", running)

    async def started():
        events = await reasons(core, "bound")
        return events if "Started" in [e.reason for e in events] else None

    assert [e.reason for e in await until(started)] == ["Pulled", "Created", "Started"]
    await core.delete_namespaced_pod("bound", "default", grace_period_seconds=0)


async def test_a_crash_loop_backs_off_with_counted_events(cluster, core):
    cluster.runner.backoff = (0.02, 0.05)
    await core.create_namespaced_pod("default", process_pod("crash", "sh", "-c", "exit 1", restart="Always"))

    async def backed_off():
        events = {e.reason: e for e in await reasons(core, "crash")}
        return events if "BackOff" in events and events["Started"].count >= 3 else None

    events = await until(backed_off)
    uid = (await core.read_namespaced_pod("crash", "default")).metadata.uid
    assert events["BackOff"].type == "Warning"
    assert events["BackOff"].message == f"Back-off restarting failed container main in pod crash_default({uid})"
    assert len(await reasons(core, "crash")) == 5  # repeats raise a count, they add no Event
    await core.delete_namespaced_pod("crash", "default")
    await until(lambda: gone(core, "crash"))


@pytest.mark.runner("scripted")
async def test_the_scripted_runner_records_no_events(cluster, core):
    body = process_pod("quiet", "true", annotations={"localcluster.dev/script": '{"run_for": 0}'})
    await core.create_namespaced_pod("default", body)
    await wait_phase(core, "quiet", "Succeeded")
    assert await reasons(core, "quiet") == []


async def test_kubectl_describe_shows_why_a_container_waits(cluster, core, tmp_path):
    kubectl = Kubectl(cluster, tmp_path)
    body = process_pod("cfg", "true", env=[{"name": "T", "valueFrom": {"secretKeyRef": {"name": "x", "key": "k"}}}])
    await core.create_namespaced_pod("default", body)
    await wait_pod(core, "cfg", config_error)
    text = (await kubectl.ok("describe", "pod", "cfg")).out
    events = text[text.index("Events:"):]
    assert "Normal   Scheduled  " in events and "default-scheduler  Successfully assigned default/cfg to localnode" \
        in events
    assert 'kubelet            spec.containers{main}: Error: secret "x" not found' in events
    assert "Warning  Failed" in events
    assert "Reason:       CreateContainerConfigError" in text
    listed = (await kubectl.ok("get", "events")).rows()
    scheduled = next(row for row in listed if row[2] == "Scheduled")
    assert scheduled[0] != "<invalid>" and scheduled[0].endswith("s")  # its eventTime has microseconds


async def test_a_gang_pod_is_scheduled_by_t9k_scheduler(cluster, core):
    """The Scheduled Event names the scheduler that bound the pod: T9k Scheduler for a PodGroup's pods."""
    cluster.apply_crds(CRDS)
    group = "scheduler.tensorstack.dev"
    cluster.api.create(cluster.api.registry.get(group, "v1beta1", "podgroups"), "default", {
        "apiVersion": f"{group}/v1beta1", "kind": "PodGroup", "metadata": {"name": "gang"},
        "spec": {"minMember": 1, "queue": "default"}})
    pod = process_pod("member", "sleep", "60", annotations={f"{group}/group-name": "gang"})
    pod["spec"]["schedulerName"] = "t9k-scheduler"
    await core.create_namespaced_pod("default", pod)
    await wait_pod(core, "member", running)

    async def scheduled():
        return next((e for e in await reasons(core, "member") if e.reason == "Scheduled"), None)

    event = await until(scheduled)
    assert (event.reporting_component, event.reporting_instance, event.message) == (
        "t9k-scheduler", "t9k-scheduler-localnode", "Successfully assigned default/member to localnode")
