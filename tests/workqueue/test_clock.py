import asyncio

import pytest

from tests.workqueue.support import run_ready, within
from workqueue import FakeClock, RealClock


def test_fake_clock_fires_due_timers_in_order_at_their_own_time():
    clock = FakeClock(start=10.0)
    fired = []
    clock.call_at(12.0, lambda: fired.append(("b", clock.now())))
    clock.call_at(11.0, lambda: fired.append(("a", clock.now())))
    clock.call_at(15.0, lambda: fired.append(("c", clock.now())))

    clock.step(3.0)

    assert fired == [("a", 11.0), ("b", 12.0)]
    assert clock.now() == 13.0
    assert clock.pending() == 1


def test_fake_clock_fires_timers_scheduled_by_callbacks_within_the_step():
    clock = FakeClock()
    fired = []
    clock.call_at(1.0, lambda: clock.call_at(2.0, lambda: fired.append(clock.now())))

    clock.step(5.0)

    assert fired == [2.0]


def test_fake_clock_skips_cancelled_timers():
    clock = FakeClock()
    fired = []
    clock.call_at(1.0, lambda: fired.append("x")).cancel()

    assert clock.pending() == 0
    clock.step(2.0)
    assert fired == []


def test_fake_clock_refuses_to_go_backwards():
    with pytest.raises(ValueError):
        FakeClock().step(-1.0)


async def test_fake_clock_wakes_sleepers_on_step():
    clock = FakeClock()
    sleeper = asyncio.create_task(clock.sleep_until(5.0))
    await run_ready()

    clock.step(4.0)
    await run_ready()
    assert not sleeper.done()

    clock.step(1.0)
    await within(sleeper)


async def test_fake_clock_survives_a_sleeper_cancelled_while_its_timer_is_due():
    clock = FakeClock()
    sleeper = asyncio.create_task(clock.sleep_until(1.0))
    await run_ready()

    sleeper.cancel()
    clock.step(1.0)  # the sleeper has not run its cleanup yet

    with pytest.raises(asyncio.CancelledError):
        await within(sleeper)


async def test_real_clock_timer_fires():
    clock = RealClock()
    fired = asyncio.Event()

    clock.call_at(clock.now() + 0.001, fired.set)

    await within(fired.wait())


async def test_real_clock_sleep_until_returns_after_the_deadline():
    clock = RealClock()
    deadline = clock.now() + 0.001

    await within(clock.sleep_until(deadline))

    assert clock.now() >= deadline
