from workqueue import FakeClock, ItemExponentialFailureRateLimiter, RateLimitingQueue


async def test_add_rate_limited_delays_by_the_limiter_and_forget_resets():
    clock = FakeClock()
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(base=1.0, max=60.0), clock=clock)

    q.add_rate_limited("a")
    assert len(q) == 0
    clock.step(1.0)
    assert len(q) == 1
    q.done(await q.get())

    q.add_rate_limited("a")  # second failure: 2 s
    clock.step(1.5)
    assert len(q) == 0
    clock.step(0.5)
    assert len(q) == 1
    assert q.num_requeues("a") == 2

    q.forget("a")
    assert q.num_requeues("a") == 0


async def test_default_limiter_runs_on_the_queues_clock():
    clock = FakeClock()
    q = RateLimitingQueue(clock=clock)

    q.add_rate_limited("a")
    assert len(q) == 0
    clock.step(0.005)

    assert len(q) == 1
    assert q.num_requeues("a") == 1


async def test_plain_add_and_add_after_still_work():
    clock = FakeClock()
    q = RateLimitingQueue(clock=clock)
    q.add("now")
    q.add_after("later", 1.0)

    assert len(q) == 1
    clock.step(1.0)
    assert [await q.get(), await q.get()] == ["now", "later"]
