"""The event recorder: aggregation of repeats into one Event's count, bounds, and best effort."""

from __future__ import annotations

import asyncio
import re
import time

from controller.runtime.client import KubeClient
from controller.runtime.events import MESSAGE_LIMIT, EventRecorder, truncate_utf8
from localcluster.testing import until

JOB = {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob",
       "metadata": {"name": "job", "namespace": "ns", "uid": "u1", "resourceVersion": "7"}}

MINE = {"controller": "genericjob"}  # the EventMetrics labels of the recorder under test


class FakeClient:
    def __init__(self, fail_creates: bool = False) -> None:
        self.calls: list[tuple] = []
        self.fail_creates = fail_creates

    async def create_event(self, event: dict) -> None:
        await asyncio.sleep(0)
        if self.fail_creates:
            raise OSError("down")
        self.calls.append(("create", event["metadata"]["name"], event["reason"], event["message"], event["count"]))

    async def patch_event(self, namespace: str, name: str, changes: dict) -> None:
        await asyncio.sleep(0)
        self.calls.append(("patch", name, changes["count"]))


async def drained(recorder: EventRecorder) -> None:
    await asyncio.wait_for(recorder._idle.wait(), 1)


async def test_an_event_is_created_once_and_repeats_bump_its_count():
    client = FakeClient()
    recorder = EventRecorder(client)
    recorder.start()
    recorder.record(JOB, "Normal", "SuccessfulCreate", "Created pod: job-worker-0")
    await drained(recorder)
    recorder.record(JOB, "Normal", "SuccessfulCreate", "Created pod: job-worker-0")
    recorder.record(JOB, "Normal", "SuccessfulCreate", "Created pod: job-worker-0")  # shares the queued patch
    recorder.record(JOB, "Normal", "SuccessfulCreate", "Created pod: job-worker-1")
    await drained(recorder)
    await recorder.stop()
    [(_, name, *_), patch, other] = client.calls
    assert client.calls[0][2:] == ("SuccessfulCreate", "Created pod: job-worker-0", 1)
    assert patch == ("patch", name, 3)
    assert other[0] == "create" and other[3] == "Created pod: job-worker-1"


async def test_events_are_named_as_client_go_names_them_so_they_sort_by_time():
    """`<object>.<hex of the time in ns>` (client-go: fmt.Sprintf("%v.%x", ref.Name, t.UnixNano())), not a random
    suffix: `kubectl get events` lists Events by name, so they read in the order they happened."""
    client = FakeClient()
    recorder = EventRecorder(client, senders=1)
    recorder.start()
    before = time.time_ns()
    for index in range(20):
        recorder.record(JOB, "Normal", "SuccessfulCreate", f"Created pod: job-worker-{index}")
    after = time.time_ns()
    await drained(recorder)
    await recorder.stop()
    names = [call[1] for call in client.calls]
    assert len(set(names)) == 20  # unique even when the clock does not move between two Events
    stamps = [int(name.removeprefix("job."), 16) for name in names]
    assert all(re.fullmatch(r"job\.[0-9a-f]+", name) for name in names)
    assert before <= stamps[0] and stamps == sorted(stamps) and stamps[-1] <= after + 20
    assert names == sorted(names)  # same length in hex for the next 500 years: by name is by time


async def test_repeats_after_the_window_make_a_new_event():
    client = FakeClient()
    recorder = EventRecorder(client, dedupe_seconds=0.0)
    recorder.start()
    recorder.record(JOB, "Normal", "Paused", "The job is paused.")
    recorder.record(JOB, "Normal", "Paused", "The job is paused.")
    await drained(recorder)
    await recorder.stop()
    assert [call[0] for call in client.calls] == ["create", "create"]


async def test_a_failed_create_is_not_patched_and_never_raises():
    client = FakeClient(fail_creates=True)
    recorder = EventRecorder(client)
    recorder.start()
    recorder.record(JOB, "Warning", "InvalidSpec", "spec.successRules[0]: bad")
    recorder.record(JOB, "Warning", "InvalidSpec", "spec.successRules[0]: bad")
    await drained(recorder)
    await recorder.stop()
    assert client.calls == [] and recorder.dropped == 1


async def test_the_queue_is_bounded():
    client = FakeClient()
    recorder = EventRecorder(client, max_queue=2)
    for index in range(5):
        recorder.record(JOB, "Normal", "SuccessfulCreate", f"Created pod: job-worker-{index}")
    assert recorder.dropped == 3
    recorder.start()
    await drained(recorder)
    await recorder.stop()
    assert len(client.calls) == 2


class GatedClient(FakeClient):
    """Creates wait at a gate, so a test can see how many are in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.in_flight = 0
        self.most_in_flight = 0

    async def create_event(self, event: dict) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.gate.wait()
            await super().create_event(event)
        finally:
            self.in_flight -= 1


async def test_senders_work_concurrently_and_the_backlog_is_measured():
    from prometheus_client import CollectorRegistry

    from controller.runtime.metrics import EventMetrics

    registry = CollectorRegistry()
    client = GatedClient()
    recorder = EventRecorder(client, senders=3, metrics=EventMetrics(registry, "genericjob"))
    recorder.start()
    for index in range(5):
        recorder.record(JOB, "Normal", "SuccessfulCreate", f"Created pod: job-worker-{index}")
    await until(lambda: client.in_flight == 3)
    assert recorder.pending == 5 and registry.get_sample_value("genericjob_events_pending", MINE) == 5
    client.gate.set()
    await drained(recorder)
    await recorder.stop()
    assert client.most_in_flight == 3 and len(client.calls) == 5
    assert recorder.pending == 0 and registry.get_sample_value("genericjob_events_pending", MINE) == 0
    assert registry.get_sample_value("genericjob_events_total", {**MINE, "result": "sent"}) == 5


async def test_a_repeat_is_patched_only_after_its_create_was_answered():
    client = GatedClient()
    recorder = EventRecorder(client, senders=2)
    recorder.start()
    recorder.record(JOB, "Normal", "SuccessfulCreate", "Created pod: job-worker-0")
    await until(lambda: client.in_flight == 1)
    recorder.record(JOB, "Normal", "SuccessfulCreate", "Created pod: job-worker-0")  # the second sender takes it
    for _ in range(10):
        await asyncio.sleep(0)
    assert client.calls == []  # the patch waits for the create, which waits at the gate
    client.gate.set()
    await drained(recorder)
    await recorder.stop()
    assert [call[0] for call in client.calls] == ["create", "patch"] and client.calls[1][2] == 2


async def test_stop_cancels_a_patch_waiting_for_its_create():
    client = GatedClient()
    recorder = EventRecorder(client, senders=2)
    recorder.start()
    recorder.record(JOB, "Normal", "SuccessfulCreate", "Created pod: job-worker-0")
    recorder.record(JOB, "Normal", "SuccessfulCreate", "Created pod: job-worker-0")
    await until(lambda: client.in_flight == 1)
    await recorder.stop(drain_timeout=0.0)
    assert client.calls == [] and recorder._tasks == []


def test_a_message_is_cut_at_a_character_boundary_to_at_most_1024_bytes():
    assert truncate_utf8("中" * 1000, MESSAGE_LIMIT) == "中" * 341  # 1023 bytes: a 342nd would need 1026
    assert truncate_utf8("a" + "中" * 1000, MESSAGE_LIMIT) == "a" + "中" * 341  # 1024 exactly
    assert truncate_utf8("ab" + "中" * 1000, MESSAGE_LIMIT) == "ab" + "中" * 340  # the cut character goes whole
    assert truncate_utf8("x" * 1023 + "é", MESSAGE_LIMIT) == "x" * 1023
    assert truncate_utf8("x" * 1021 + "🙂", MESSAGE_LIMIT) == "x" * 1021  # 4 bytes: 1025 in all
    assert truncate_utf8("short 中文", MESSAGE_LIMIT) == "short 中文"
    assert truncate_utf8("bad \udc80 byte", MESSAGE_LIMIT) == "bad ? byte"  # a lone surrogate could not be sent


async def test_a_long_multibyte_message_reaches_the_server_cut_by_bytes(cluster, rest_client, core):
    recorder = EventRecorder(KubeClient(rest_client, qps=100, burst=100))
    recorder.start()
    job = {**JOB, "metadata": {**JOB["metadata"], "namespace": "default"}}
    recorder.record(job, "Warning", "Failed", "任务失败" + "错" * 1000)
    await drained(recorder)
    await recorder.stop()
    assert recorder.sent == 1
    (event,) = (await core.list_namespaced_event("default")).items
    assert event.message == "任务失败" + "错" * 337  # 341 characters of 3 bytes: 1023 bytes, a 342nd would not fit
    assert len(event.message.encode()) <= MESSAGE_LIMIT
