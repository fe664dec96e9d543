"""Stream pods' output (the pods/log subresource with `follow=true`) as prefixed lines, like `kubectl logs -f`.

Best effort: a pod deleted before its log is read (a fast failure the controller replaces at
once) has nothing left to show, and such a pod is skipped without complaint.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import aiohttp

from kubeclient.lean_kubernetes_asyncio import ApiClient

CONNECT_TIMEOUT = 10.0


class LogFollower:
    def __init__(self, api_client: ApiClient, emit: Callable[[str], None]) -> None:
        self.api_client = api_client
        self.emit = emit
        self._tasks: dict[tuple[str, str | None], asyncio.Task] = {}  # (pod uid, container) -> its stream

    def follow(self, namespace: str, pod: str, uid: str, containers: list[str], label: str) -> None:
        """Stream each container of this pod once; lines are printed as `label | line` (`label/container`
        when the pod has several containers)."""
        for container in containers or [None]:
            if (uid, container) in self._tasks:
                continue
            shown = f"{label}/{container}" if container and len(containers) > 1 else label
            task = asyncio.get_running_loop().create_task(self._stream(namespace, pod, container, shown))
            self._tasks[(uid, container)] = task

    async def stop(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def _stream(self, namespace: str, pod: str, container: str | None, label: str) -> None:
        query = [("follow", "true")] + ([("container", container)] if container else [])
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT)
        with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError):
            response = await self.api_client.call_api(
                f"/api/v1/namespaces/{namespace}/pods/{pod}/log", "GET", query_params=query,
                header_params={"Accept": "*/*"}, auth_settings=["BearerToken"], _preload_content=False,
                _request_timeout=timeout)
            try:
                if response.status >= 400:  # gone already, or not started: nothing to show
                    return
                async for raw in response.content:
                    self.emit(f"{label} | {raw.decode(errors='replace').rstrip()}")
            finally:
                response.release()
