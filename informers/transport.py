"""Raw JSON requests through kubernetes_asyncio's ApiClient.

The ApiClient supplies the server URL, TLS and credentials (refreshing tokens as it does for
its own calls); bodies are parsed with orjson into plain dicts. Deserialising into the
generated model classes costs about fifteen times more and is never done here.
"""

from __future__ import annotations

import asyncio

import aiohttp
import orjson

from apimachinery.errors import ApiStatusError
from kubeclient.lean_kubernetes_asyncio import ApiClient

_HEADERS = {"Accept": "application/json"}
_AUTH = ["BearerToken"]

# What a broken network or a restarting server looks like: retried with backoff.
TRANSIENT_ERRORS = (aiohttp.ClientError, OSError, TimeoutError, orjson.JSONDecodeError)


class Transport:
    def __init__(self, api_client: ApiClient, request_timeout: float) -> None:
        self.api_client = api_client
        self.request_timeout = request_timeout

    async def get(self, path: str, params: dict[str, str]) -> bytes:
        """The body of a successful GET, undecoded: the caller decodes it when it suits it."""
        timeout = aiohttp.ClientTimeout(total=self.request_timeout)
        try:
            response = await self._request(path, params, timeout)
            try:
                return await response.read()
            finally:
                response.release()
        except TimeoutError as err:  # aiohttp's carries no message: say what timed out
            raise TimeoutError(f"no response from {self._server} within {self.request_timeout:g} s") from err

    async def open_stream(self, path: str, params: dict[str, str]) -> aiohttp.ClientResponse:
        """A streaming GET: headers within the request timeout, the body at the caller's pace.

        The caller bounds the body with its own inactivity watchdog and must close the response.
        """
        timeout = aiohttp.ClientTimeout(total=None, connect=self.request_timeout,
                                        sock_connect=self.request_timeout)
        try:
            async with asyncio.timeout(self.request_timeout):
                return await self._request(path, params, timeout)
        except TimeoutError as err:
            raise TimeoutError(f"no response from {self._server} within {self.request_timeout:g} s") from err

    @property
    def _server(self) -> str:
        return getattr(self.api_client.configuration, "host", "") or "the API server"

    async def _request(self, path: str, params: dict[str, str], timeout: aiohttp.ClientTimeout
                       ) -> aiohttp.ClientResponse:
        response = await self.api_client.call_api(
            path, "GET", query_params=list(params.items()), header_params=dict(_HEADERS),
            auth_settings=_AUTH, _preload_content=False, _request_timeout=timeout)
        if response.status >= 400:
            raise await status_error(response)
        return response


async def json_body(response: aiohttp.ClientResponse) -> dict | None:
    """The decoded body of an undecoded answer (None if empty), released; ApiStatusError for 4xx/5xx."""
    if response.status >= 400:
        raise await status_error(response)
    try:
        raw = await response.read()
    finally:
        response.release()
    return orjson.loads(raw) if raw else None


async def status_error(response: aiohttp.ClientResponse) -> ApiStatusError:
    try:
        body = await response.read()
    finally:
        response.release()
    return ApiStatusError.from_body(response.status, response.reason or "", body, response.headers.get("Retry-After"))
