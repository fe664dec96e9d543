import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from workqueue import (
    DURATION_BUCKETS,
    FakeClock,
    ItemExponentialFailureRateLimiter,
    RateLimitingQueue,
    WorkQueue,
)

JOBS = {"name": "jobs", "controller": "jobs"}


def sample(registry: CollectorRegistry, metric: str, labels: dict = JOBS, **extra: str) -> float | None:
    return registry.get_sample_value(metric, {**labels, **extra})


async def test_metrics_follow_a_scripted_sequence():
    registry = CollectorRegistry()
    clock = FakeClock()
    q = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(base=1.0, max=60.0), "jobs", clock=clock, registry=registry
    )

    q.add("a")
    q.add("b")
    q.add("a")  # deduplicated: not an add
    assert sample(registry, "workqueue_adds_total") == 2
    assert sample(registry, "workqueue_depth") == 2

    clock.step(1.0)
    a = await q.get()  # waited 1 s
    assert sample(registry, "workqueue_depth") == 1
    clock.step(2.0)
    assert sample(registry, "workqueue_unfinished_work_seconds") == 2.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 2.0

    b = await q.get()  # waited 3 s
    clock.step(1.0)
    assert sample(registry, "workqueue_unfinished_work_seconds") == 3.0 + 1.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 3.0

    q.done(a)  # worked 3 s
    assert sample(registry, "workqueue_unfinished_work_seconds") == 1.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 1.0

    q.add_rate_limited("a")  # a retry; becomes an add after 1 s
    q.add_after("c", 0)  # also a retry, added at once
    assert sample(registry, "workqueue_retries_total") == 2
    assert sample(registry, "workqueue_adds_total") == 3
    clock.step(1.0)
    assert sample(registry, "workqueue_adds_total") == 4
    assert sample(registry, "workqueue_depth") == 2

    q.done(b)  # worked 2 s
    assert sample(registry, "workqueue_unfinished_work_seconds") == 0.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 0.0

    assert sample(registry, "workqueue_queue_duration_seconds_count") == 2
    assert sample(registry, "workqueue_queue_duration_seconds_sum") == 4.0
    assert sample(registry, "workqueue_queue_duration_seconds_bucket", le="0.1") == 0
    assert sample(registry, "workqueue_queue_duration_seconds_bucket", le="1.0") == 1  # le is inclusive
    assert sample(registry, "workqueue_queue_duration_seconds_bucket", le="10.0") == 2
    assert sample(registry, "workqueue_work_duration_seconds_count") == 2
    assert sample(registry, "workqueue_work_duration_seconds_sum") == 5.0
    assert sample(registry, "workqueue_work_duration_seconds_bucket", le="1.0") == 0
    assert sample(registry, "workqueue_work_duration_seconds_bucket", le="+Inf") == 2


async def test_duration_histograms_use_controller_runtime_buckets():
    registry = CollectorRegistry()
    q = WorkQueue("jobs", clock=FakeClock(), registry=registry)
    q.add("a")
    q.done(await q.get())

    text = generate_latest(registry).decode()

    assert DURATION_BUCKETS == pytest.approx([1e-8 * 10**i for i in range(10)])
    for bound in ("1e-08", "1e-07", "0.001", "1.0", "10.0", "+Inf"):
        series = f'workqueue_work_duration_seconds_bucket{{controller="jobs",le="{bound}",name="jobs"}}'
        assert f"{series} 1.0" in text
    assert 'workqueue_adds_total{controller="jobs",name="jobs"} 1.0' in text


async def test_queues_with_different_names_share_a_registry():
    registry = CollectorRegistry()
    jobs = WorkQueue("jobs", clock=FakeClock(), registry=registry)
    pods = WorkQueue("pods", clock=FakeClock(), registry=registry)

    jobs.add("a")
    pods.add("a")
    pods.add("b")

    assert sample(registry, "workqueue_adds_total") == 1
    assert sample(registry, "workqueue_adds_total", {"name": "pods", "controller": "pods"}) == 2


async def test_a_queue_recreated_under_the_same_name_continues_its_counters():
    registry = CollectorRegistry()
    clock = FakeClock()
    first = WorkQueue("jobs", clock=clock, registry=registry)
    first.add("a")
    first.shutdown()

    WorkQueue("jobs", clock=clock, registry=registry).add("b")

    assert sample(registry, "workqueue_adds_total") == 2


def test_one_name_cannot_mix_clocks_on_a_registry():
    registry = CollectorRegistry()
    WorkQueue("jobs", clock=FakeClock(), registry=registry)

    with pytest.raises(ValueError):
        WorkQueue("jobs", clock=FakeClock(), registry=registry)


def test_a_clash_with_another_collector_is_reported_every_time():
    registry = CollectorRegistry()
    prometheus_client.Gauge("workqueue_depth", "someone else's", registry=registry)

    for _ in range(2):  # not remembered as registered after the first failure
        with pytest.raises(ValueError):
            WorkQueue("jobs", registry=registry)


def test_metrics_need_a_queue_name():
    with pytest.raises(ValueError):
        WorkQueue(registry=CollectorRegistry())


async def test_without_a_registry_nothing_is_recorded_anywhere():
    q = WorkQueue("unregistered")
    q.add("a")
    q.done(await q.get())

    labels = {"name": "unregistered", "controller": "unregistered"}
    assert prometheus_client.REGISTRY.get_sample_value("workqueue_adds_total", labels) is None
