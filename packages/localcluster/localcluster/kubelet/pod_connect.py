"""What the API server checks before it connects a client to a pod's container (logs, exec, port-forward).

As pkg/registry/core/pod/strategy.go: the container named (or the only one), the pod bound to a
node; and, for the streaming subresources, a connection upgrade (a WebSocket here: kubectl 1.30+
tries one first). Errors a connection meets after the upgrade travel as a metav1.Status written
with encoding/json, so without kind and apiVersion. A client's WebSocket messages are bounded
(MAX_MESSAGE_BYTES).
"""

from __future__ import annotations

import orjson
from aiohttp import web

from .. import errors

UPGRADE_REQUIRED = "Upgrade request required"
# The largest WebSocket message a client may send to exec or port-forward (aiohttp's max_msg_size): a larger
# one closes the connection with 1009 (message too big). kubectl writes stdin and forwarded bytes in chunks
# of 32 KiB, so it never comes near; without a bound, one message could hold the server's memory.
MAX_MESSAGE_BYTES = 1024 * 1024


def container_of(pod: dict, requested: str | None) -> str:
    """The container a request means (validateContainer): the one named, else the pod's only container."""
    spec = pod.get("spec") or {}
    name = pod["metadata"]["name"]
    names = [c["name"] for c in spec.get("containers") or ()]
    init_names = [c["name"] for c in spec.get("initContainers") or ()]
    if not requested:
        if len(names) != 1:
            extra = f" or one of the init containers: [{' '.join(init_names)}]" if init_names else ""
            raise errors.bad_request(f"a container name must be specified for pod {name}, choose one of: "
                                     f"[{' '.join(names)}]{extra}")
        return names[0]
    if requested not in names and requested not in init_names:
        raise errors.bad_request(f"container {requested} is not valid for pod {name}")
    return requested


def require_node(pod: dict) -> None:
    if not (pod.get("spec") or {}).get("nodeName"):
        raise errors.bad_request(f"pod {pod['metadata']['name']} does not have a host assigned")


def websocket_protocol(request: web.Request, offered: tuple[str, ...], streaming: str) -> str:
    """The subprotocol a WebSocket upgrade will use; 400 for a request that is no upgrade, or not a
    WebSocket one (an SPDY upgrade, which kubectl falls back to, is not served: `streaming` says what is)."""
    upgrade = request.headers.get("Upgrade", "").lower()
    if "upgrade" not in request.headers.get("Connection", "").lower() or not upgrade:
        raise errors.bad_request(UPGRADE_REQUIRED)
    if upgrade != "websocket":
        raise errors.bad_request(f"unable to upgrade connection: localcluster serves {streaming} over "
                                 f"WebSockets only (kubectl 1.30 or later uses them by default)")
    asked = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    chosen = next((p for p in asked if p in offered), None)
    if chosen is None:
        raise errors.bad_request(f"unable to upgrade connection: requested protocol(s) are not supported: "
                                 f"{asked}; supports {list(offered)}")
    return chosen


def stream_status(status: dict) -> bytes:
    """A Status as the streaming code marshals it (encoding/json: no kind, no apiVersion)."""
    return orjson.dumps({k: v for k, v in status.items() if k not in ("kind", "apiVersion")})
