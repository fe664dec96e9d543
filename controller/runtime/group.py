"""Several controllers run as one: what the manager runs when `run` serves more than one job kind.

The members share one informer factory (one informer per resource, namespace and label selector,
however many ask for it; each kind's child informers select that kind's children only), and each keeps
its own work queue, workers, write budget and Event recorder. The group has the lifecycle of one
controller, so the manager cannot tell them apart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from controller.runtime.controller import Runnable, start_all, stop_all
from informers import Resource


class ControllerGroup:
    def __init__(self, members: Sequence[Runnable], missing_api_hint: Callable[[Resource], str] | None = None
                 ) -> None:
        if not members:
            raise ValueError("a controller group needs at least one controller")
        factories = {id(member.factory) for member in members}
        if len(factories) != 1:
            raise ValueError("the controllers of a group must share one informer factory")
        self.members = list(members)
        self.factory = members[0].factory
        self.client = members[0].client  # for the start-up checks: every member has the same credentials
        # For the start-up checks: what to do, besides installing it, about an API one member needs and is missing.
        self.missing_api_hint = missing_api_hint

    def start_informers(self) -> None:
        for member in self.members:
            member.start_informers()

    async def wait_for_sync(self, timeout: float) -> None:
        for member in self.members:  # each may have more to do once the shared caches are synced
            await member.wait_for_sync(timeout)

    def run_workers(self) -> None:
        for member in self.members:
            member.run_workers()

    async def start(self, sync_timeout: float = 60.0) -> None:
        await start_all(self, sync_timeout)

    async def stop_workers(self, drain: bool = True) -> None:
        await asyncio.gather(*(member.stop_workers(drain) for member in self.members))

    async def stop(self) -> None:
        await stop_all(self)

    def healthy(self) -> bool:
        return all(member.healthy() for member in self.members)

    def problems(self) -> list[str]:
        # The informers are shared: each member reports them alike, so keep one copy of each line.
        return list(dict.fromkeys(problem for member in self.members for problem in member.problems()))
