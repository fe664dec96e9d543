"""Raw HTTP to a LocalCluster, for tests that need what typed clients hide: query parameters such as
fieldManager, force and dryRun, any Content-Type (apply-patch+yaml), the User-Agent, and error bodies;
and raw WebSockets (exec, port-forward) for what kubectl never sends."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

import aiohttp

from localcluster import LocalCluster

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


class Rest:
    def __init__(self, session: aiohttp.ClientSession, cluster: LocalCluster) -> None:
        self.session, self.url = session, cluster.url

    async def call(self, method: str, path: str, body=None, content_type: str = "application/json",
                   user_agent: str | None = None, **query: str) -> tuple[int, dict]:
        """(status, JSON body); a `body` that is not a str is sent as JSON (which is YAML too)."""
        headers = {"Content-Type": content_type}
        if user_agent is not None:
            headers["User-Agent"] = user_agent
        data = body if isinstance(body, str) or body is None else json.dumps(body)
        async with self.session.request(method, self.url + path, data=data, headers=headers, params=query) as r:
            return r.status, await r.json(content_type=None)

    async def ok(self, method: str, path: str, body=None, content_type: str = "application/json",
                 user_agent: str | None = None, **query: str) -> dict:
        status, answer = await self.call(method, path, body, content_type, user_agent, **query)
        assert status in (200, 201), f"{method} {path} answered {status}: {answer}"
        return answer

    async def apply(self, path: str, config, manager: str, **query: str) -> tuple[int, dict]:
        return await self.call("PATCH", path, config, APPLY, fieldManager=manager, **query)

    def websocket(self, path: str, protocols: tuple[str, ...], query: list[tuple[str, str]] | None = None):
        """A WebSocket upgrade of `path` (exec, port-forward), as `async with rest.websocket(...) as ws`."""
        return self.session.ws_connect(self.url + path, protocols=protocols, params=query or [])


@contextlib.asynccontextmanager
async def connect(cluster: LocalCluster) -> AsyncIterator[Rest]:
    async with cluster.session() as session:
        yield Rest(session, cluster)


def entries(obj: dict) -> dict[tuple[str, str, str], dict]:
    """managedFields by (manager, operation, subresource)."""
    return {(e["manager"], e["operation"], e.get("subresource", "")): e for e in obj["metadata"].get("managedFields")
            or []}


def fields(obj: dict, manager: str, operation: str = "Update", subresource: str = "") -> dict:
    return entries(obj)[(manager, operation, subresource)]["fieldsV1"]
