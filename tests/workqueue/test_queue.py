import asyncio
import collections

import pytest

from tests.workqueue.support import run_ready, within
from workqueue import ShutDown, WorkQueue


async def test_adding_a_waiting_key_again_is_a_no_op():
    q = WorkQueue()
    for key in ["a", "b", "a", "b", "a"]:
        q.add(key)

    assert len(q) == 2
    assert [await q.get(), await q.get()] == ["a", "b"]
    assert len(q) == 0


async def test_keys_come_out_in_the_order_they_were_added():
    q = WorkQueue()
    for key in range(100):
        q.add(key)

    assert [await q.get() for _ in range(100)] == list(range(100))


async def test_get_blocks_until_a_key_is_added():
    q = WorkQueue()
    getter = asyncio.create_task(q.get())
    await run_ready()
    assert not getter.done()

    q.add("a")

    assert await within(getter) == "a"


async def test_key_added_while_processing_is_queued_once_after_done():
    q = WorkQueue()
    q.add("a")
    key = await q.get()

    q.add("a")
    q.add("a")
    assert len(q) == 0  # not handed out while its worker still holds it

    q.done(key)
    assert len(q) == 1
    assert await q.get() == "a"
    q.done("a")
    assert len(q) == 0


async def test_done_without_re_add_does_not_requeue():
    q = WorkQueue()
    q.add("a")
    q.done(await q.get())

    assert len(q) == 0


async def test_one_key_is_never_processed_by_two_workers_at_once():
    q = WorkQueue()
    active = collections.Counter()
    max_active = collections.Counter()
    handled = collections.Counter()

    async def worker():
        while True:
            try:
                key = await q.get()
            except ShutDown:
                return
            active[key] += 1
            max_active[key] = max(max_active[key], active[key])
            for _ in range(3):  # stay in flight across several loop turns
                await asyncio.sleep(0)
            active[key] -= 1
            handled[key] += 1
            q.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(8)]
    for i in range(300):
        q.add("hot")
        q.add(f"cold-{i % 5}")
        await asyncio.sleep(0)
    q.shutdown()  # workers still finish what is queued, then get() raises ShutDown
    await within(asyncio.gather(*workers))

    assert max_active["hot"] == 1
    assert all(count == 1 for count in max_active.values())
    assert handled["hot"] > 1  # re-adds during processing were not lost
    assert not active or set(active.values()) == {0}


async def test_shutdown_wakes_every_blocked_getter():
    q = WorkQueue()
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await run_ready()

    q.shutdown()

    results = await within(asyncio.gather(*getters, return_exceptions=True))
    assert all(isinstance(r, ShutDown) for r in results)
    assert q.shutting_down


async def test_adds_after_shutdown_are_dropped():
    q = WorkQueue()
    q.shutdown()

    q.add("a")

    assert len(q) == 0
    with pytest.raises(ShutDown):
        await q.get()


async def test_keys_queued_before_shutdown_are_still_handed_out():
    q = WorkQueue()
    q.add("a")
    q.add("b")
    q.shutdown()

    assert [await q.get(), await q.get()] == ["a", "b"]
    with pytest.raises(ShutDown):
        await q.get()


async def test_shutdown_with_drain_waits_for_keys_in_flight():
    q = WorkQueue()
    q.add("a")
    q.add("b")
    a = await q.get()
    b = await q.get()
    drain = asyncio.create_task(q.shutdown_with_drain())
    await run_ready()
    assert q.shutting_down
    q.add("c")
    assert len(q) == 0

    q.done(a)
    await run_ready()
    assert not drain.done()  # b is still in flight

    q.done(b)
    assert await within(drain) is True


async def test_a_drain_that_happened_is_reported_even_if_a_queued_key_is_taken_next():
    # A key queued before the shutdown is still handed out; a worker taking it the moment after the
    # last in-flight key is done must not turn a finished drain into a "still running" warning.
    q = WorkQueue()
    q.add("a")
    a = await q.get()
    q.add("b")  # waiting while a is in flight
    drain = asyncio.create_task(q.shutdown_with_drain())
    await run_ready()
    q.done(a)
    b = await q.get()  # the next worker takes b before the drainer runs
    assert await within(drain) is True
    q.done(b)


async def test_shutdown_with_drain_gives_up_after_timeout():
    q = WorkQueue()
    q.add("a")
    key = await q.get()

    assert await within(q.shutdown_with_drain(timeout=0.01)) is False

    q.done(key)  # finishing late is still allowed


async def test_shutdown_with_drain_returns_at_once_when_nothing_is_in_flight():
    q = WorkQueue()
    q.add("waiting")  # queued but not handed out: not waited for

    assert await within(q.shutdown_with_drain()) is True


async def test_shutdown_cuts_a_drain_short():
    q = WorkQueue()
    q.add("a")
    await q.get()
    drain = asyncio.create_task(q.shutdown_with_drain())
    await run_ready()

    q.shutdown()

    assert await within(drain) is False


async def test_done_for_a_key_not_being_processed_is_an_error():
    q = WorkQueue()
    q.add("a")
    with pytest.raises(ValueError):
        q.done("a")  # waiting, not handed out
    q.done(await q.get())
    with pytest.raises(ValueError):
        q.done("a")  # second done for one get


async def test_a_cancelled_getter_passes_its_wake_up_on():
    q = WorkQueue()
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await run_ready()

    q.add("a")  # wakes `first`...
    first.cancel()  # ...which is cancelled before it can take the key

    assert await within(second) == "a"
    assert first.cancelled()


async def test_a_cancelled_getter_does_not_swallow_later_keys():
    q = WorkQueue()
    cancelled = asyncio.create_task(q.get())
    await run_ready()
    cancelled.cancel()
    await run_ready()
    waiting = asyncio.create_task(q.get())
    await run_ready()

    q.add("a")

    assert await within(waiting) == "a"


async def test_an_empty_queue_is_still_truthy():
    q = WorkQueue()
    assert len(q) == 0
    assert q
