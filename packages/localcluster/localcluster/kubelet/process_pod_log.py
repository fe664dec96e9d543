"""The pods/log subresource of pods the process runner runs: what `kubectl logs` reads (container, previous,
follow, tailLines, limitBytes), from the containers' log files."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from aiohttp import web

from .. import errors
from ..api import Api
from .pod_connect import container_of
from .pod_runs import PodRun


async def serve(api: Api, runs: dict[str, PodRun], request: web.Request, namespace: str,
                name: str) -> web.StreamResponse:
    """GET /api/v1/namespaces/{namespace}/pods/{name}/log: what `kubectl logs` reads."""
    pod = api.get(api.registry.builtin("", "v1", "pods"), namespace, name)
    query = request.query
    container = container_of(pod, query.get("container"))
    tail = _int_param(query, "tailLines")
    limit = _int_param(query, "limitBytes")
    run = runs.get(pod["metadata"]["uid"])
    box = run.box(container) if run is not None else None
    if run is None or box is None:
        raise errors.bad_request(f'pod "{name}" is not run by the process runner (no logs)')
    if query.get("previous") in ("true", "1", "True"):
        path = run.log_dir / f"{container}.previous.log"
        if not path.exists():
            raise errors.bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        return web.Response(body=_select(_read_bytes(path), tail, limit), content_type="text/plain")
    sink = box.log
    if sink is None:
        reason = box.state.get("waiting", {}).get("reason", "ContainerCreating")
        raise errors.bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    waiter = sink.waiter()
    data, position = sink.read()
    data = _select(data, tail, limit)
    follow = query.get("follow") in ("true", "1", "True")
    if not follow or sink.closed or limit is not None:
        return web.Response(body=data, content_type="text/plain")
    response = web.StreamResponse(headers={"Content-Type": "text/plain", "Cache-Control": "no-cache, private"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    if data:
        await response.write(data)
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiter.wait(), 1.0)
        if request.transport is None or request.transport.is_closing():
            break
        waiter = sink.waiter()
        data, position = sink.read(position)
        if data:
            await response.write(data)
        if sink.closed:
            break
    return response


def _read_bytes(path: Path) -> bytes:
    return path.read_bytes()


def _int_param(query, name: str) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        value = int(raw)
    except ValueError as exc:
        raise errors.bad_request(f"{name}: invalid value {raw!r}: must be an integer") from exc
    if value < (0 if name == "tailLines" else 1):
        raise errors.bad_request(f"{name}: Invalid value: {value}: must be "
                                 f"{'greater than or equal to 0' if name == 'tailLines' else 'greater than 0'}")
    return value


def _select(data: bytes, tail: int | None, limit: int | None) -> bytes:
    if tail is not None:
        data = b"".join(data.splitlines(keepends=True)[-tail:]) if tail else b""
    if limit is not None:
        data = data[:limit]
    return data

