import pytest

from workqueue import (
    BucketRateLimiter,
    FakeClock,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)


def test_exponential_doubles_per_failure_from_5ms():
    limiter = ItemExponentialFailureRateLimiter()

    delays = [limiter.when("a") for _ in range(5)]

    assert delays == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08])
    assert limiter.num_requeues("a") == 5


def test_exponential_is_capped_at_1000_seconds():
    limiter = ItemExponentialFailureRateLimiter()

    delays = [limiter.when("a") for _ in range(3000)]  # far past float overflow of 2**n

    assert delays[17] == pytest.approx(0.005 * 2**17)  # 655 s: last step under the cap
    assert delays[18:] == [1000.0] * (3000 - 18)


def test_exponential_tracks_keys_separately_and_forget_resets():
    limiter = ItemExponentialFailureRateLimiter(base=1.0, max=60.0)
    limiter.when("a")
    limiter.when("a")

    assert limiter.when("b") == 1.0
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 1.0


def test_bucket_allows_the_burst_then_spaces_tries_by_one_over_qps():
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10, burst=100, clock=clock)

    burst = [limiter.when(i) for i in range(100)]
    after = [limiter.when(i) for i in range(3)]

    assert burst == [0.0] * 100
    assert after == pytest.approx([0.1, 0.2, 0.3])  # each reserves a token further ahead


def test_bucket_refills_with_time():
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10, burst=2, clock=clock)
    limiter.when("x")
    limiter.when("x")

    clock.step(0.1)
    assert limiter.when("x") == 0.0
    assert limiter.when("x") == pytest.approx(0.1)

    clock.step(10.0)  # refills only up to the burst
    assert [limiter.when("x") for _ in range(3)] == pytest.approx([0.0, 0.0, 0.1])


def test_bucket_does_not_track_keys():
    limiter = BucketRateLimiter(clock=FakeClock())
    limiter.when("a")
    limiter.forget("a")

    assert limiter.num_requeues("a") == 0


def test_bucket_rejects_a_limit_that_can_never_grant():
    with pytest.raises(ValueError):
        BucketRateLimiter(qps=0)
    with pytest.raises(ValueError):
        BucketRateLimiter(burst=0)


def test_max_of_takes_the_longest_delay_and_updates_every_limiter():
    clock = FakeClock()
    exponential = ItemExponentialFailureRateLimiter(base=0.5, max=100.0)
    bucket = BucketRateLimiter(qps=1, burst=2, clock=clock)
    limiter = MaxOfRateLimiter(exponential, bucket)

    assert [limiter.when("a") for _ in range(3)] == [0.5, 1.0, 2.0]  # exponential dominates
    assert limiter.when("b") == 2.0  # bucket: 2 tokens over-reserved at 1 qps
    assert limiter.num_requeues("a") == 3

    limiter.forget("a")
    assert exponential.num_requeues("a") == 0
    assert limiter.num_requeues("a") == 0


def test_max_of_needs_a_limiter():
    with pytest.raises(ValueError):
        MaxOfRateLimiter()


def test_default_controller_rate_limiter_combines_both():
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock)

    assert [limiter.when("hot") for _ in range(4)] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    assert [limiter.when(i) for i in range(96)] == pytest.approx([0.005] * 96)
    assert limiter.when("new") == pytest.approx(0.1)  # burst of 100 spent: the bucket dominates
    assert limiter.num_requeues("hot") == 4
