"""The controller's writes to the API server: raw JSON, a timeout on every call, a client-side rate limit.

Reads come from the informers' caches; everything here is a write (plus the rare live GET that
double-checks a stale cache). Bodies are plain dicts; responses are parsed with orjson and never
deserialised into kubernetes_asyncio's model classes. Errors are `ApiStatusError`s carrying the
HTTP code, so callers can treat 404 and 409 as the ordinary outcomes they are.

The requests go through the one client (kubeclient.rest.RestClient: its keep-alive HTTP/1.1 connections,
credentials, TLS, proxy and request metrics), each KubeClient waiting on its own token bucket.
"""

from __future__ import annotations

from collections import Counter

import orjson

from apimachinery.errors import ApiStatusError
from apimachinery.resource import Resource
from kubeclient.ratelimit import TokenBucket
from kubeclient.rest import RestClient

MERGE_PATCH = "application/merge-patch+json"


class KubeClient:
    def __init__(self, rest: RestClient, *, qps: float = 20.0, burst: int = 30, timeout: float = 30.0) -> None:
        self.shared = rest  # the client this one's requests go through, with a token bucket of their own
        self.rest = rest.with_limit(qps, burst)
        self.timeout = timeout  # seconds, per request
        # (verb, resource, code) -> count, exported as metrics and read by tests.
        self.requests: Counter[tuple[str, str, int]] = Counter()
        # Collections outside the core group (pods, services, events), by plural: register().
        self.resources: dict[str, Resource] = {}

    @property
    def limiter(self) -> TokenBucket:
        return self.rest.limiter

    @limiter.setter
    def limiter(self, bucket: TokenBucket) -> None:
        self.rest.limiter = bucket

    def register(self, resource: Resource) -> None:
        """Makes `resource.plural` a name that create, delete, patch and get accept."""
        self.resources[resource.plural] = resource

    def with_own_limit(self) -> KubeClient:
        """The same connections and request counts, with a rate limit of its own (the same QPS and burst)."""
        sibling = KubeClient(self.shared, qps=self.limiter.qps, burst=self.limiter.burst, timeout=self.timeout)
        sibling.requests = self.requests
        sibling.resources = self.resources
        return sibling

    async def _call(self, verb: str, resource: str, method: str, path: str, body=None,
                    content_type: str = "application/json", answer: bool = True) -> dict | None:
        """One request; the decoded answer, or None when `answer` is False: a caller that never reads the
        object the server sends back (a pod, Service or Event it created) does not pay for decoding it.

        The body is plain JSON already, so orjson encodes it and the bytes are sent as they are
        (kubernetes_asyncio's `call_api` copied it through `sanitize_for_serialization` and the standard
        library's json: about half of the client's CPU per write in a burst)."""
        data = None if body is None else orjson.dumps(body)
        # Sent again on a reused connection lost unanswered only when a second copy is harmless: a GET, the
        # status PUT (its resourceVersion), a delete with a uid precondition; never a create or a patch.
        repeatable = method in ("GET", "PUT") or (method == "DELETE" and b'"preconditions"' in (data or b""))
        reply = await self.rest.send(method, path, data, content_type, verb=verb, resource=resource,
                                     timeout=self.timeout, idempotent=repeatable)
        self.requests[(verb, resource, reply.status)] += 1
        if reply.status >= 400:
            raise ApiStatusError.from_body(reply.status, reply.reason, reply.body, reply.retry_after)
        return orjson.loads(reply.body) if answer and reply.body else None

    # --- pods, services, podgroups --------------------------------------------------------

    async def create(self, resource: str, obj: dict, *, answer: bool = True) -> dict | None:
        """POST; the object made (None with answer=False: not decoded)."""
        path = self._collection(resource, obj["metadata"]["namespace"])
        return await self._call("create", resource, "POST", path, obj, answer=answer)

    async def delete(self, resource: str, namespace: str, name: str, uid: str | None = None) -> None:
        """Delete with a uid precondition: a name reused by a newer object is never hit."""
        options: dict = {"propagationPolicy": "Background"}
        if uid:
            options["preconditions"] = {"uid": uid}
        await self._call("delete", resource, "DELETE", f"{self._collection(resource, namespace)}/{name}", options,
                         answer=False)

    async def force_delete(self, resource: str, namespace: str, name: str, uid: str) -> None:
        options = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        await self._call("delete", resource, "DELETE", f"{self._collection(resource, namespace)}/{name}", options,
                         answer=False)

    async def patch(self, resource: str, namespace: str, name: str, changes: dict, *, answer: bool = True
                    ) -> dict | None:
        """A JSON merge patch: lists in `changes` replace the stored ones whole."""
        return await self._call("patch", resource, "PATCH", f"{self._collection(resource, namespace)}/{name}", changes,
                                content_type=MERGE_PATCH, answer=answer)

    async def get(self, resource: str, namespace: str, name: str) -> dict | None:
        return await self._call("get", resource, "GET", f"{self._collection(resource, namespace)}/{name}")

    # --- the job --------------------------------------------------------------------------

    async def replace_status(self, resource: Resource, job: dict, status: dict) -> dict | None:
        """PUT /status with the cached resourceVersion: a stale cache gets 409, never a lost update."""
        meta = job["metadata"]
        body = {"apiVersion": job["apiVersion"], "kind": job["kind"],
                "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                             "resourceVersion": meta["resourceVersion"], "uid": meta["uid"]},
                "spec": job.get("spec"), "status": status}
        path = f"{resource.path(meta['namespace'])}/{meta['name']}/status"
        return await self._call("update", f"{resource.plural}/status", "PUT", path, body)

    def _collection(self, resource: str, namespace: str) -> str:
        registered = self.resources.get(resource)
        if registered is not None:
            return registered.path(namespace)
        return f"/api/v1/namespaces/{namespace}/{resource}"

    async def create_event(self, event: dict) -> None:
        await self._call("create", "events", "POST", f"/api/v1/namespaces/{event['metadata']['namespace']}/events",
                         event, answer=False)

    async def patch_event(self, namespace: str, name: str, changes: dict) -> None:
        await self._call("patch", "events", "PATCH", f"/api/v1/namespaces/{namespace}/events/{name}", changes,
                         content_type=MERGE_PATCH, answer=False)


__all__ = ["ApiStatusError", "KubeClient"]
