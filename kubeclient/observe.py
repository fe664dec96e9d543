"""What the client reports about each request, and the Kubernetes names it reports it under.

The client calls `RequestObserver.observe(verb, resource, code, seconds)` once per request: code is the
HTTP status as text, or "<error>" when no answer came; seconds until the answer's headers arrived (a
watch: until it opened). The controller passes its prometheus `RequestMetrics` (client-go's
rest_client_requests_total and rest_client_request_duration_seconds); the client itself imports no
metrics library.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol
from urllib.parse import urlsplit

Params = Mapping[str, object] | Iterable[tuple[str, object]]  # a request's query parameters, as aiohttp takes them


class RequestObserver(Protocol):
    def observe(self, verb: str, resource: str, code: str, seconds: float) -> None: ...


def request_verb(method: str, url: str, query_params: Params | None = None) -> tuple[str, str]:
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


def _pairs(params: Params | None) -> list[tuple[str, object]]:
    if not params:
        return []
    return list(params.items()) if isinstance(params, Mapping) else list(params)


__all__ = ["RequestObserver", "request_verb"]
