"""GET pods/log as the apiserver and the kubelet answer it, whichever pod runner runs the pod.

The apiserver (pkg/registry/core/pod/strategy.go LogLocation) checks the container, then:
- a pod not yet bound to a node has no log location: 200 with an empty body (`kubectl logs` of a
  Pending, unscheduled pod exits 0 and prints nothing);
- a pod bound to a node that does not exist: the node lookup's 404 (`nodes "x" not found`);
- a node no kubelet of localcluster serves: the apiserver cannot reach it, and the dial's error (a
  plain Go error, not an API status) answers 500 with no reason (ErrorToAPIStatus), printed by
  kubectl as `Error from server: Get "https://ADDRESS:10250/containerLogs/...": dial tcp ...`;
- otherwise the node's kubelet answers. The kubelet (validateContainerLogStatus) refuses with 400 a
  container it has not started: `container "c" in pod "p" is waiting to start: ContainerCreating`
  (or `is not available` before it reports any status); the apiserver passes that on as BadRequest.
The process runner keeps real logs and answers the rest itself; the scripted runner's containers
print nothing, so a started one has an empty log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from .. import errors
from .nodes import NODE, NODES
from .pod_connect import container_of

if TYPE_CHECKING:
    from ..api import Api

TRUE = ("true", "1", "True")


async def serve(api: Api, runner, request: web.Request, pod: dict) -> web.StreamResponse:
    container = container_of(pod, request.query.get("container"))
    meta, node = pod["metadata"], (pod.get("spec") or {}).get("nodeName")
    if not node:
        return web.Response(body=b"", content_type="text/plain")
    found = api.store.get(NODES, ("", node))
    if found is None:
        raise errors.not_found("nodes", node, "", "nodes")
    if node != NODE:  # a Node no kubelet of localcluster serves: the apiserver cannot reach one
        addresses = [a.get("address") for a in (found.get("status") or {}).get("addresses") or ()]
        if not addresses:
            raise errors.unreasoned_error("no preferred addresses found; known addresses: []")
        raise errors.unreasoned_error(f'Get "https://{addresses[0]}:10250/containerLogs/{meta.get("namespace")}/'
                                    f'{meta["name"]}/{container}": dial tcp {addresses[0]}:10250: connect: '
                                    f"connection refused")
    serve_log = getattr(runner, "pod_log", None)
    if serve_log is not None:
        return await serve_log(request, meta.get("namespace"), meta["name"])
    problem = kubelet_refusal(pod, container, request.query.get("previous") in TRUE)
    if problem is not None:
        raise errors.bad_request(problem)
    return web.Response(body=b"", content_type="text/plain")


def kubelet_refusal(pod: dict, container: str, previous: bool) -> str | None:
    """Why the kubelet has no log of `container` to give (its validateContainerLogStatus), or None."""
    status = pod.get("status") or {}
    name = pod["metadata"]["name"]
    found = next((cs for group in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
                  for cs in status.get(group) or () if cs.get("name") == container), None)
    if found is None:
        return f'container "{container}" in pod "{name}" is not available'
    state, last = found.get("state") or {}, (found.get("lastState") or {}).get("terminated")
    if previous:
        return None if last else f'previous terminated container "{container}" in pod "{name}" not found'
    if "running" in state or "terminated" in state or last:
        return None
    reason = (state.get("waiting") or {}).get("reason")
    if reason == "ErrImagePull":
        return f'container "{container}" in pod "{name}" is waiting to start: image can\'t be pulled'
    if reason == "ImagePullBackOff":
        return f'container "{container}" in pod "{name}" is waiting to start: trying and failing to pull image'
    if "waiting" in state:
        return f'container "{container}" in pod "{name}" is waiting to start: {reason or ""}'
    return f'container "{container}" in pod "{name}" is waiting to start - no logs yet'
