import asyncio

from tests.workqueue.support import run_ready, within
from workqueue import DelayingQueue, FakeClock


def make_queue() -> tuple[DelayingQueue, FakeClock]:
    clock = FakeClock()
    return DelayingQueue(clock=clock), clock


async def drain_now(q: DelayingQueue) -> list:
    """Every key ready right now, in order (marked done at once)."""
    keys = []
    while len(q):
        key = await q.get()
        q.done(key)
        keys.append(key)
    return keys


async def test_delayed_keys_join_in_ready_time_order():
    q, clock = make_queue()
    q.add_after("c", 3.0)
    q.add_after("a", 1.0)
    q.add_after("b", 2.0)

    clock.step(0.5)
    assert await drain_now(q) == []
    clock.step(0.5)
    assert await drain_now(q) == ["a"]
    clock.step(5.0)
    assert await drain_now(q) == ["b", "c"]


async def test_earlier_ready_time_wins_when_a_key_is_delayed_again():
    q, clock = make_queue()
    q.add_after("later-first", 5.0)
    q.add_after("later-first", 2.0)
    q.add_after("sooner-first", 2.0)
    q.add_after("sooner-first", 5.0)

    clock.step(2.0)
    assert await drain_now(q) == ["later-first", "sooner-first"]
    clock.step(10.0)
    assert await drain_now(q) == []  # the superseded ready times do not add them again


async def test_zero_or_negative_delay_adds_immediately():
    q, _ = make_queue()
    q.add_after("zero", 0)
    q.add_after("negative", -1.0)

    assert await drain_now(q) == ["zero", "negative"]


async def test_blocked_getter_wakes_when_the_delay_elapses():
    q, clock = make_queue()
    getter = asyncio.create_task(q.get())
    q.add_after("a", 1.0)
    await run_ready()
    assert not getter.done()

    clock.step(1.0)

    assert await within(getter) == "a"


async def test_delayed_key_that_is_already_waiting_is_deduplicated():
    q, clock = make_queue()
    q.add("a")
    q.add_after("a", 1.0)

    clock.step(1.0)

    assert await drain_now(q) == ["a"]


async def test_delayed_key_being_processed_is_queued_after_done():
    q, clock = make_queue()
    q.add("a")
    key = await q.get()
    q.add_after("a", 1.0)

    clock.step(1.0)
    assert len(q) == 0
    q.done(key)

    assert await drain_now(q) == ["a"]


async def test_one_timer_serves_all_delayed_keys():
    q, clock = make_queue()
    q.add_after("a", 5.0)
    q.add_after("b", 1.0)  # earlier: re-arms the single timer
    q.add_after("c", 3.0)

    assert clock.pending() == 1
    clock.step(1.0)
    assert clock.pending() == 1  # re-armed for "c"


async def test_shutdown_cancels_pending_delays():
    q, clock = make_queue()
    q.add_after("a", 1.0)
    q.add_after("b", 2.0)

    q.shutdown()
    q.add_after("c", 1.0)

    assert clock.pending() == 0
    clock.step(10.0)
    assert len(q) == 0


async def test_add_after_works_on_the_real_clock():
    q = DelayingQueue()
    q.add_after("a", 0.001)

    assert await within(q.get()) == "a"
    q.shutdown()


async def test_delayed_counts_keys_waiting_for_their_delay():
    from workqueue import DelayingQueue, FakeClock

    clock = FakeClock()
    queue = DelayingQueue(clock=clock)
    queue.add_after("a", 1.0)
    queue.add_after("a", 0.5)
    queue.add_after("b", 2.0)
    assert queue.delayed == 2 and len(queue) == 0
    clock.step(0.6)
    assert queue.delayed == 1 and len(queue) == 1
