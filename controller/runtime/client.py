"""The controller's writes to the API server: raw JSON, a timeout on every call, a client-side rate limit.

Reads come from the informers' caches; everything here is a write (plus the rare live GET that
double-checks a stale cache). Bodies are plain dicts; responses are parsed with orjson and never
deserialised into kubernetes_asyncio's model classes. Errors are `ApiStatusError`s carrying the
HTTP code, so callers can treat 404 and 409 as the ordinary outcomes they are.

The requests go over `InstrumentedApiClient`'s keep-alive HTTP/1.1 connections (http1.py: a third of
aiohttp's CPU per request), with the ApiClient's server, TLS settings and credentials; through
kubernetes_asyncio's aiohttp session when a proxy is configured or the ApiClient is a plain one.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import Counter
from urllib.parse import urlsplit

import aiohttp
import orjson
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from apimachinery.errors import ApiStatusError
from apimachinery.kubeclient import ApiClient, Configuration
from apimachinery.resource import Resource
from controller.runtime.metrics import RequestMetrics
from kubeclient.http1 import Answer, Http1Pool

_AUTH = ["BearerToken"]


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
        self.timeout = timeout  # seconds, per request
        # InstrumentedApiClient's connections; None: through kubernetes_asyncio's aiohttp session.
        self.pool: Http1Pool | None = getattr(api_client, "write_pool", None)
        # (verb, resource, code) -> count, exported as metrics and read by tests.
        self.requests: Counter[tuple[str, str, int]] = Counter()
        # Collections outside the core group (pods, services, events), by plural: register().
        self.resources: dict[str, Resource] = {}

    def register(self, resource: Resource) -> None:
        """Makes `resource.plural` a name that create, delete, patch and get accept."""
        self.resources[resource.plural] = resource

    def with_own_limit(self) -> KubeClient:
        """The same connection and request counts, with a rate limit of its own (the same QPS and burst)."""
        sibling = KubeClient(self.api_client, qps=self.limiter.qps, burst=self.limiter.burst, timeout=self.timeout)
        sibling.requests = self.requests
        sibling.resources = self.resources
        return sibling

    async def _call(self, verb: str, resource: str, method: str, path: str, body=None,
                    content_type: str = "application/json", answer: bool = True) -> dict | None:
        """One request; the decoded answer, or None when `answer` is False: a caller that never reads the
        object the server sends back (a pod, Service or Event it created) does not pay for decoding it."""
        await self.limiter.take()
        started = time.perf_counter()
        code = "<error>"
        try:
            reply = await self._send(method, path, None if body is None else orjson.dumps(body), content_type)
            code = str(reply.status)
        finally:
            observe = getattr(self.api_client, "request_metrics", None)
            if observe is not None:
                observe.observe(verb, resource, code, time.perf_counter() - started)
        self.requests[(verb, resource, reply.status)] += 1
        if reply.status >= 400:
            raise ApiStatusError.from_body(reply.status, reply.reason, reply.body, reply.retry_after)
        return orjson.loads(reply.body) if answer and reply.body else None

    async def _send(self, method: str, path: str, body: bytes | None, content_type: str) -> Answer:
        """One request with the ApiClient's server and credentials; the answer read whole.

        `ApiClient.call_api` would copy the body through `sanitize_for_serialization` and encode it
        with the standard library's json: about half of the client's CPU per write in a burst. The
        body here is plain JSON already, so orjson encodes it and the bytes are sent as they are.
        """
        api = self.api_client
        headers = {**api.default_headers, "Accept": "application/json", "Content-Type": content_type}
        await api.update_params_for_auth(headers, None, _AUTH)  # refreshes an expiring token, as call_api does
        if self.pool is not None:
            # Sent again on a reused connection lost unanswered only when a second copy is harmless: a GET, the
            # status PUT (its resourceVersion), a delete with a uid precondition; never a create or a patch.
            repeatable = method in ("GET", "PUT") or (method == "DELETE" and b'"preconditions"' in (body or b""))
            return await self.pool.request(method, path, headers, body, self.timeout, idempotent=repeatable)
        rest = api.rest_client
        response = await rest.pool_manager.request(
            method, api.configuration.host + path, data=body, headers=headers,
            timeout=aiohttp.ClientTimeout(total=self.timeout), proxy=rest.proxy, proxy_headers=rest.proxy_headers,
            server_hostname=rest.server_hostname)
        try:
            raw = await response.read()  # to the end, so that the connection is kept for the next request
        finally:
            response.release()
        return Answer(response.status, response.reason or "", raw, response.headers.get("Retry-After"))

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
                                content_type="application/merge-patch+json", answer=answer)

    async def get(self, resource: str, namespace: str, name: str) -> dict:
        return await self._call("get", resource, "GET", f"{self._collection(resource, namespace)}/{name}")

    # --- the job --------------------------------------------------------------------------

    async def replace_status(self, resource: Resource, job: dict, status: dict) -> dict:
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
                         content_type="application/merge-patch+json", answer=False)


class InstrumentedApiClient(ApiClient):
    """An ApiClient that counts every request it sends (rest_client_requests_total), and holds the
    keep-alive connections of `KubeClient`'s writes (`write_pool`; None when a proxy is configured).

    The informers' lists and watches and leader election go through `ApiClient.request`, so one hook
    counts them; `KubeClient`'s writes report to the same metrics.
    """

    def __init__(self, configuration=None, *, metrics: RequestMetrics, **kwargs) -> None:
        super().__init__(configuration, **kwargs)
        self.request_metrics = metrics
        resolve_proxy_once(self)
        conf = self.configuration
        self.write_pool = None if self.rest_client.proxy else Http1Pool(
            conf.host, ssl_context(conf), server_hostname=conf.tls_server_name, limit=conf.connection_pool_maxsize)

    async def close(self) -> None:
        if self.write_pool is not None:
            await self.write_pool.close()
        await super().close()

    async def request(self, method, url, query_params=None, *args, **kwargs):
        verb, resource = request_verb(method, url, query_params)
        started = time.perf_counter()
        code = "<error>"
        try:
            response = await super().request(method, url, query_params, *args, **kwargs)
            code = str(response.status)
            return response
        except Exception as exc:
            status = getattr(exc, "status", None)  # kubernetes_asyncio's ApiException, when content is preloaded
            if status:
                code = str(status)
            raise
        finally:
            self.request_metrics.observe(verb, resource, code, time.perf_counter() - started)


def ssl_context(configuration: Configuration) -> ssl.SSLContext:
    """The TLS settings kubernetes_asyncio's REST client makes of a configuration (its rest.py), for the
    write connections: the CA, a client certificate, verification off only when asked for."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.disable_strict_ssl_verification:
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def resolve_proxy_once(api_client: ApiClient) -> None:
    """Read the environment's proxy for the API server once, not in a thread on every request.

    kubernetes_asyncio makes its aiohttp session with trust_env=True, so aiohttp looks up ~/.netrc
    and the *_PROXY variables in a worker thread before every request: two thread hops per write,
    about a third of the controller's CPU in a burst. client-go reads the proxy variables once, when
    its transport is made, and never reads .netrc; this does the same.
    """
    rest = api_client.rest_client
    if not rest.proxy:
        with contextlib.suppress(LookupError):
            proxy, auth = get_env_proxy_for_url(URL(api_client.configuration.host))
            rest.proxy = str(proxy)
            if auth is not None:
                rest.proxy_headers = {**(rest.proxy_headers or {}), "Proxy-Authorization": auth.encode()}
    rest.pool_manager._trust_env = False  # one of ClientSession's own attributes; no public setter


def request_verb(method: str, url: str, query_params=None) -> tuple[str, str]:
    """The Kubernetes verb and resource ("pods", "genericjobs/status") of a request, as RBAC names them."""
    segments = [s for s in urlsplit(url).path.split("/") if s]
    rest: list[str] | None = None
    for i, segment in enumerate(segments):
        if segment == "api":
            rest = segments[i + 2:]  # api, version
            break
        if segment == "apis":
            rest = segments[i + 3:]  # apis, group, version
            break
    if not rest:
        return method.lower(), ""
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        rest = rest[2:]  # a namespaced resource (not a namespace's own subresource)
    resource, named = rest[0], len(rest) > 1
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    if method == "GET":
        watching = any(k == "watch" and str(v).lower() in ("true", "1") for k, v in _pairs(query_params))
        verb = "get" if named else "watch" if watching else "list"
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method) or (
            ("delete" if named else "deletecollection") if method == "DELETE" else method.lower())
    return verb, resource


def _pairs(params) -> list[tuple]:
    if not params:
        return []
    return list(params.items()) if isinstance(params, dict) else list(params)


__all__ = ["ApiStatusError", "InstrumentedApiClient", "KubeClient", "TokenBucket", "request_verb",
           "resolve_proxy_once", "ssl_context"]
