"""Stream pods' output (the pods/log subresource with `follow=true`) as prefixed lines, like `kubectl logs -f`.

Best effort: a pod deleted before its log is read (a fast failure the controller replaces at
once) has nothing left to show, and such a pod is skipped without complaint. To keep that window small the
progress follows a pod as soon as the pod says a container started, not when the job's status lists it; and at
the end `drain` lets the streams of pods that have finished reach their end before the summary is printed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import aiohttp

from apimachinery.errors import ApiStatusError
from kubeclient.rest import RestClient

CONNECT_TIMEOUT = 10.0
RETRY_FIRST, RETRY_MAX, RETRY_FOR = 0.25, 4.0, 120.0  # seconds: a stream that could not start is tried again


class LogFollower:
    def __init__(self, rest: RestClient, emit: Callable[[str], None]) -> None:
        self.rest = rest
        self.emit = emit
        self._tasks: dict[tuple[str, str | None], asyncio.Task] = {}  # (pod uid, container) -> its stream

    def follow(self, namespace: str, pod: str, uid: str, containers: list[str], label: str) -> None:
        """Stream each container of this pod once; lines are printed as `label | line` (`label/container`
        when the pod has several containers)."""
        for container in containers if containers else [None]:
            if (uid, container) in self._tasks:
                continue
            shown = f"{label}/{container}" if container and len(containers) > 1 else label
            task = asyncio.get_running_loop().create_task(self._stream(namespace, pod, container, shown))
            self._tasks[(uid, container)] = task

    async def drain(self, timeout: float) -> None:
        """Wait up to `timeout` for the streams to end: a finished container's stream ends once all its output is
        read (the kubelet closes it), so its last lines are printed before what comes after."""
        pending = [task for task in self._tasks.values() if not task.done()]
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    async def stop(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def _stream(self, namespace: str, pod: str, container: str | None, label: str) -> None:
        """Follow until the stream ends. A stream that could not start (the container not started yet as the
        kubelet sees it, a connection refused or slow on a loaded machine) is tried again, with backoff, for up to
        RETRY_FOR seconds; one that ends after some output is not (a second stream would repeat it)."""
        loop = asyncio.get_running_loop()
        give_up, delay = loop.time() + RETRY_FOR, RETRY_FIRST
        while True:
            printed = [False]
            try:
                await self._read(namespace, pod, container, label, printed)
                return
            except ApiStatusError as err:
                if err.code in (404, 410):  # the pod is gone: nothing left to show
                    return
            except (aiohttp.ClientError, OSError, TimeoutError):
                pass
            if printed[0] or loop.time() + delay > give_up:
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX)

    async def _read(self, namespace: str, pod: str, container: str | None, label: str, printed: list[bool]) -> None:
        query = {"follow": "true", **({"container": container} if container else {})}
        response = await self.rest.stream(f"/api/v1/namespaces/{namespace}/pods/{pod}/log", query,
                                          timeout=CONNECT_TIMEOUT, accept="*/*")
        try:
            async for raw in response.content:
                printed[0] = True
                self.emit(f"{label} | {raw.decode(errors='replace').rstrip()}")
        finally:
            response.release()
