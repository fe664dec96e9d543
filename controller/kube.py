"""The controller's writes to the API server: raw JSON, a timeout on every call, a client-side rate limit.

Reads come from the informers' caches; everything here is a write (plus the rare live GET that
double-checks a stale cache). Bodies are plain dicts; responses are parsed with orjson and never
deserialised into kubernetes_asyncio's model classes. Errors are `ApiStatusError`s carrying the
HTTP code, so callers can treat 404 and 409 as the ordinary outcomes they are.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import aiohttp
import orjson
from kubernetes_asyncio.client import ApiClient

from informers import ApiStatusError
from informers.transport import status_error

from . import podgroup
from .models import GROUP, PLURAL, VERSION

JOBS_PATH = f"/apis/{GROUP}/{VERSION}/namespaces/{{namespace}}/{PLURAL}"
PODGROUPS_PATH = f"/apis/{podgroup.GROUP}/{podgroup.VERSION}/namespaces/{{namespace}}/{podgroup.PLURAL}"


class TokenBucket:
    """QPS with a burst, as client-go's default rate limiter for a client (training-operator: 20/30)."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last = time.monotonic()

    async def take(self) -> None:
        if self.qps <= 0:
            return
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1
        if self._tokens < 0:
            await asyncio.sleep(-self._tokens / self.qps)


class KubeClient:
    def __init__(self, api_client: ApiClient, *, qps: float = 20.0, burst: int = 30, timeout: float = 30.0) -> None:
        self.api_client = api_client
        self.limiter = TokenBucket(qps, burst)
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        # (verb, resource, code) -> count, exported as metrics and read by tests.
        self.requests: Counter[tuple[str, str, int]] = Counter()

    async def _call(self, verb: str, resource: str, method: str, path: str, body=None,
                    content_type: str = "application/json") -> dict | None:
        await self.limiter.take()
        headers = {"Accept": "application/json", "Content-Type": content_type}
        response = await self.api_client.call_api(
            path, method, header_params=headers, body=body,
            auth_settings=["BearerToken"], _preload_content=False, _request_timeout=self.timeout)
        if response.status >= 400:
            self.requests[(verb, resource, response.status)] += 1
            raise await status_error(response)
        self.requests[(verb, resource, response.status)] += 1
        try:
            raw = await response.read()
        finally:
            response.release()
        return orjson.loads(raw) if raw else None

    # --- pods, services, podgroups --------------------------------------------------------

    async def create(self, resource: str, obj: dict) -> dict:
        return await self._call("create", resource, "POST", _collection(resource, obj["metadata"]["namespace"]), obj)

    async def delete(self, resource: str, namespace: str, name: str, uid: str | None = None) -> None:
        """Delete with a uid precondition: a name reused by a newer object is never hit."""
        options: dict = {"propagationPolicy": "Background"}
        if uid:
            options["preconditions"] = {"uid": uid}
        await self._call("delete", resource, "DELETE", f"{_collection(resource, namespace)}/{name}", options)

    async def force_delete(self, resource: str, namespace: str, name: str, uid: str) -> None:
        options = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        await self._call("delete", resource, "DELETE", f"{_collection(resource, namespace)}/{name}", options)

    async def get(self, resource: str, namespace: str, name: str) -> dict:
        return await self._call("get", resource, "GET", f"{_collection(resource, namespace)}/{name}")

    # --- the job --------------------------------------------------------------------------

    async def replace_status(self, job: dict, status: dict) -> dict:
        """PUT /status with the cached resourceVersion: a stale cache gets 409, never a lost update."""
        meta = job["metadata"]
        body = {"apiVersion": job["apiVersion"], "kind": job["kind"],
                "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                             "resourceVersion": meta["resourceVersion"], "uid": meta["uid"]},
                "spec": job.get("spec"), "status": status}
        path = f"{JOBS_PATH.format(namespace=meta['namespace'])}/{meta['name']}/status"
        return await self._call("update", "genericjobs/status", "PUT", path, body)

    async def create_event(self, event: dict) -> None:
        await self._call("create", "events", "POST", f"/api/v1/namespaces/{event['metadata']['namespace']}/events",
                         event)

    async def patch_event(self, namespace: str, name: str, changes: dict) -> None:
        await self._call("patch", "events", "PATCH", f"/api/v1/namespaces/{namespace}/events/{name}", changes,
                         content_type="application/merge-patch+json")


def _collection(resource: str, namespace: str) -> str:
    if resource == "podgroups":
        return PODGROUPS_PATH.format(namespace=namespace)
    return f"/api/v1/namespaces/{namespace}/{resource}"


__all__ = ["ApiStatusError", "KubeClient", "TokenBucket"]
