"""Throughput of WorkQueue add/get/done cycles, with and without metrics.

Run: /work/venv/bin/python bench/bench_workqueue.py [--cycles N]

Scenarios:
  sequential    one coroutine does add, get, done in a loop: the queue's own cost.
  backlog N     all keys are added up front, then N worker coroutines get and done
                them, each awaiting one loop turn per key as a reconcile would.
  trickle N     a producer adds one key per loop turn, so workers mostly block in
                get() and are woken per key: the path of a controller fed by events.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from prometheus_client import CollectorRegistry

# Run as a script from anywhere: make the repository root importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workqueue import ShutDown, WorkQueue


async def sequential(queue: WorkQueue[int], cycles: int) -> float:
    start = time.perf_counter()
    for i in range(cycles):
        queue.add(i)
        key = await queue.get()
        queue.done(key)
    return cycles / (time.perf_counter() - start)


async def with_workers(queue: WorkQueue[int], cycles: int, workers: int, trickle: bool) -> float:
    async def worker() -> int:
        handled = 0
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return handled
            await asyncio.sleep(0)  # stands in for the awaits of a reconcile
            queue.done(key)
            handled += 1

    start = time.perf_counter()
    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    for key in range(cycles):
        queue.add(key)
        if trickle:
            await asyncio.sleep(0)
    # Drain: workers finish the remaining keys, then get() raises ShutDown.
    queue.shutdown()
    handled = sum(await asyncio.gather(*tasks))
    elapsed = time.perf_counter() - start
    assert handled == cycles, (handled, cycles)
    return cycles / elapsed


async def main(cycles: int) -> None:
    print(f"{'scenario':<14}{'no metrics':>14}{'metrics':>14}   (add/get/done cycles per second)")
    for label, run in [
        ("sequential", lambda q: sequential(q, cycles)),
        *((f"backlog {n}", lambda q, n=n: with_workers(q, cycles, n, False)) for n in (1, 4, 16, 64)),
        *((f"trickle {n}", lambda q, n=n: with_workers(q, cycles, n, True)) for n in (1, 4, 16, 64)),
    ]:
        no_metrics = await run(WorkQueue())
        metrics = await run(WorkQueue("bench", registry=CollectorRegistry()))
        print(f"{label:<14}{no_metrics:>14,.0f}{metrics:>14,.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cycles", type=int, default=200_000)
    asyncio.run(main(parser.parse_args().cycles))
