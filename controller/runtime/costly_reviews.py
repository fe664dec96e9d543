"""Admission reviews decided at a bounded cost to the event loop: a cheap count of a review's size says whether it
is decided on the loop (what any real job's review is) or in a worker process, which is killed when its request
ends (its deadline, or its client gone).

    if costly(body):
        about, answer = await pool.decide(handler, body)   # a process; cancelling the await kills the work
    else:
        about, answer = decide(handler, body)              # on the loop: milliseconds at most

Why processes, not threads: the costly steps of a review are single calls into C that hold the GIL throughout
(orjson decoding 3 MiB of small objects, pydantic-core validating 200,000 rules: each up to a second), so a thread
stalls the loop as much as the loop itself would, and a thread cannot be stopped once its request has ended.

The count is made on the body before it is decoded (decoding a 3 MiB body is itself up to a second of the loop's
time): every rule, replica type, container, env var or rank is at least one `{`, `[` or `,` of the JSON, so their
number bounds the review's parsed size from above; `$(` counts the variables to substitute, the costliest item
(tens of µs each). A string containing them only counts more than it costs. Measured (bench/bench_webhook.py) on
the costliest shapes: ~15 µs per counted item on a loaded 2-core machine, so a review under the bounds costs the
loop under ~15 ms; the examples' jobs count 20 to 300.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable
from typing import Any

import orjson
from pebble import ProcessPool

COSTLY_BYTES = 64 * 1024  # a review longer than this is costly whatever it holds (strings to match, to copy)
COSTLY_ITEMS = 1000  # objects, arrays and their items: `{`, `[`, `,`
COSTLY_VARIABLES = 100  # `$(` (variable references, substituted for every replica type)
WORKERS = 2  # the costly reviews decided at once; the others wait for a worker within their deadline

Handler = Callable[[Any], dict]  # a decoded AdmissionReview -> the AdmissionReview to answer


class BadRequest(ValueError):
    """The body is not a request the handler can answer: HTTP 400 with this message."""


def costly(body: bytes) -> bool:
    """Whether deciding `body` could stall the event loop: a count, not a parse (bytes.count scans at memory
    speed: ~1 ms for 3 MiB)."""
    if len(body) > COSTLY_BYTES:
        return True
    items = body.count(b"{") + body.count(b"[") + body.count(b",")
    return items > COSTLY_ITEMS or body.count(b"$(") > COSTLY_VARIABLES


def decide(handler: Handler, body: bytes) -> tuple[dict, bytes]:
    """(what the request was about, for the log; the answer, encoded)."""
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise BadRequest(f"the body is not JSON: {err}") from None
    answer = handler(review)
    request = review.get("request") if isinstance(review, dict) else None
    about = {key: request.get(key) for key in ("operation", "namespace", "name")} if isinstance(request, dict) else {}
    if isinstance(request, dict) and isinstance(request.get("kind"), dict):
        about["kind"] = request["kind"].get("kind")
    response = answer.get("response") if isinstance(answer, dict) else None
    if isinstance(response, dict) and response.get("allowed") is False:
        status = response.get("status")
        status = status if isinstance(status, dict) else {}
        about.update(uid=response.get("uid"), denied={"code": status.get("code"), "message": status.get("message")})
    return about, orjson.dumps(answer)


WORKER_NICENESS = 10  # a worker yields the CPU to the controller's own process: the loop runs first


def _ready() -> None:
    """A worker's first task: it has started."""


def _lower_priority() -> None:
    """A worker's start: on a machine of few cores the costly reviews compete with the event loop for the CPU;
    niced, they get what the loop leaves."""
    os.nice(WORKER_NICENESS)


class ReviewPool:
    """Worker processes for the costly reviews (pebble's ProcessPool: a task cancelled while it runs has its worker
    stopped and replaced). The workers are forked from a forkserver that has imported the handlers' modules: a
    clean process (not a fork of the controller's threads), replaced in milliseconds."""

    def __init__(self, handlers: dict[str, Handler], workers: int = WORKERS) -> None:
        modules = sorted({getattr(h, "func", h).__module__ for h in handlers.values()} | {__name__})
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(modules)
        self._pool = ProcessPool(max_workers=workers, initializer=_lower_priority, context=context)
        self._starting, self._started = asyncio.Lock(), False

    async def start(self) -> None:
        """Start the workers (and, the first time in a process, the forkserver, importing the handlers' modules: a
        second or so) off the loop, and wait until one has answered. Once; `decide` calls it."""
        async with self._starting:
            if not self._started:
                future = await asyncio.to_thread(self._pool.schedule, _ready)
                await asyncio.wrap_future(future)
                self._started = True

    async def decide(self, handler: Handler, body: bytes) -> tuple[dict, bytes]:
        """`decide` in a worker. Cancelled (the request's deadline, its client gone): the worker is stopped."""
        if not self._started:
            await self.start()
        future = self._pool.schedule(decide, args=(handler, body))
        try:
            return await asyncio.wrap_future(future)
        finally:
            future.cancel()  # a no-op once done; else the worker computing it is stopped

    async def stop(self) -> None:
        """Stop the workers, whatever they compute, and wait for them (off the loop)."""
        self._pool.stop()
        await asyncio.to_thread(self._pool.join, 5)


__all__ = ["COSTLY_BYTES", "COSTLY_ITEMS", "COSTLY_VARIABLES", "BadRequest", "Handler", "ReviewPool", "costly",
           "decide"]
