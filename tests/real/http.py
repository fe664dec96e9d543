"""A minimal JSON client for the envtest API server, for the test kubelet and the fidelity corpus: raw requests
(any verb, body and content type) and watch streams, answers as (status, parsed body)."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator

import aiohttp
import orjson

from .envtest import ADMIN_TOKEN


class Http:
    def __init__(self, url: str, ca_pem: bytes, token: str = ADMIN_TOKEN) -> None:
        self.url, self.ca_pem = url, ca_pem
        self._ssl = ssl.create_default_context(cadata=ca_pem.decode())
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def from_kubeconfig(cls, config: dict) -> Http:
        """For a kubeconfig (a dict) naming its server's CA by data and its user by token: either server's."""
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        return cls(cluster["server"], base64.b64decode(cluster["certificate-authority-data"]), user["token"])

    async def __aenter__(self) -> Http:
        self._session = aiohttp.ClientSession(headers=self._headers, connector=aiohttp.TCPConnector(ssl=self._ssl))
        return self

    async def __aexit__(self, *exc) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(self, method: str, path: str, body=None, content_type: str = "application/json",
                      params: dict | None = None, raw: bytes | None = None) -> tuple[int, dict | None]:
        assert self._session is not None
        data = raw if raw is not None else (orjson.dumps(body) if body is not None else None)
        headers = {"Content-Type": content_type} if data is not None else {}
        async with self._session.request(method, self.url + path, data=data, headers=headers,
                                         params=params) as answer:
            text = await answer.read()
            try:
                if answer.status == 200 and (params or {}).get("watch"):  # a JSON event a line
                    parsed = {"events": [orjson.loads(line) for line in text.splitlines() if line.strip()]}
                else:
                    parsed = orjson.loads(text) if text else None
            except orjson.JSONDecodeError:
                parsed = {"_text": text.decode(errors="replace")}
            return answer.status, parsed

    async def watch(self, path: str, resource_version: str, timeout: float = 300,
                    field_selector: str | None = None) -> AsyncIterator[dict]:
        """The events of one watch request from `resource_version`, until the server ends it."""
        assert self._session is not None
        params = {"watch": "1", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(int(timeout)), **({"fieldSelector": field_selector} if field_selector else {})}
        async with self._session.get(self.url + path, params=params,
                                     timeout=aiohttp.ClientTimeout(total=None, sock_read=timeout + 30)) as answer:
            if answer.status != 200:
                yield {"type": "ERROR", "object": {"code": answer.status}}
                return
            async for line in answer.content:
                if line.strip():
                    yield orjson.loads(line)

    async def informer(self, path: str, handle, synced: asyncio.Event, field_selector: str | None = None) -> None:
        """List then watch `path` (the objects `field_selector` selects) for ever (relisting after a 410 or a broken
        stream), calling handle(type, object) for each item and event; `synced` is set after the first list."""
        while True:
            try:  # the server may be down (restarted by a test): list again until it answers
                await self._list_and_watch(path, handle, synced, field_selector)
            except (aiohttp.ClientError, TimeoutError, OSError):
                await asyncio.sleep(0.1)

    async def _list_and_watch(self, path: str, handle, synced: asyncio.Event, field_selector: str | None) -> None:
        status, listed = await self.request("GET", path, params={"fieldSelector": field_selector}
                                            if field_selector else None)
        if status != 200 or listed is None:
            synced.set()  # nothing to list (a CRD not installed yet, a server starting): try again shortly
            await asyncio.sleep(0.2)
            return
        for item in listed["items"]:
            handle("ADDED", item)
        synced.set()
        rv = listed["metadata"]["resourceVersion"]
        async for event in self.watch(path, rv, field_selector=field_selector):
            if event["type"] == "ERROR":
                return
            rv = event["object"]["metadata"]["resourceVersion"]
            if event["type"] != "BOOKMARK":
                handle(event["type"], event["object"])
