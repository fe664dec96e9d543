"""A Manager run in-process against an in-process localcluster, for tests that reach inside it."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator

import aiohttp

from controller.jobs.execution.config import JobConfig
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.registry import make_controller
from controller.runtime.leader import LeaderElectionConfig
from controller.runtime.manager import Manager, ManagerConfig
from localcluster import LocalCluster
from tests.e2e.conftest import CRDS, FAST

from .subprocesses import until


@contextlib.asynccontextmanager
async def cluster_with_crds() -> AsyncIterator[LocalCluster]:
    async with LocalCluster(runner="scripted", bookmark_interval=1.0) as running:
        running.apply_crds(CRDS)
        yield running


def manager_config(leader_election: LeaderElectionConfig | None = None, shutdown_timeout: float = 2.0
                   ) -> ManagerConfig:
    controller = JobConfig(workers=2, qps=0, informer_options=FAST, shutdown_timeout=shutdown_timeout,
                                  restart_backoff=0)
    # GenericJob alone: these tests reach into the one JobController (manager.controller.services, ...).
    serve = functools.partial(make_controller, kinds=[GENERICJOB])
    return ManagerConfig(controller=controller, make_controller=serve, leader_election=leader_election,
                         metrics_address="127.0.0.1:0",
                         health_address="127.0.0.1:0", sync_timeout=10, metrics_secure=False)


class Running:
    """A Manager's run() as a task, and its HTTP endpoints."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.task: asyncio.Task | None = None
        self.session = aiohttp.ClientSession()
        self.url = ""

    async def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.manager.run())
        address = await until(lambda: self.manager.server.addresses.get("health"), what="health address")
        self.url = f"http://{address}"

    async def get(self, path: str) -> tuple[int, str]:
        async with self.session.get(self.url + path) as answer:
            return answer.status, await answer.text()

    async def answers(self, path: str, status: int, text: str = "") -> tuple[int, str]:
        async def check():
            got = await self.get(path)
            return got if got[0] == status and text in got[1] else None

        return await until(check, what=f"{path} answering {status} {text!r}")

    async def stop(self) -> int:
        self.manager.stop()
        return await self.exit_code()

    async def exit_code(self, timeout: float = 15.0) -> int:
        try:
            return await asyncio.wait_for(self.task, timeout)
        finally:
            await self.session.close()

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            await self.stop()
        await self.session.close()
