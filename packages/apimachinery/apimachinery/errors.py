"""The client's view of an API server's refusal: `ApiStatusError`, built from a `Status` object.

Shared by every client in the project (informers, the controller's write client, leader election,
the start-up checks) so that each handles the same codes the same way.
"""

from __future__ import annotations

from typing import Any

import orjson


class ApiStatusError(Exception):
    """A Status from the server: an HTTP error, or an ERROR event on a watch."""

    def __init__(self, code: int, reason: str = "", message: str = "", retry_after: float = 0.0) -> None:
        super().__init__(f"{code} {reason}: {message}".rstrip(": "))
        self.code = code
        self.reason = reason
        self.message = message
        self.retry_after = retry_after

    @property
    def gone(self) -> bool:
        """410: the resourceVersion asked for (or a continue token) was compacted away."""
        return self.code == 410

    @property
    def too_large(self) -> bool:
        """The object or the request is larger than the server stores or reads: 413 (a body over the apiserver's
        3 MiB), or etcd's refusal of an object over its 1.5 MiB, which the apiserver answers as a 500 with etcd's
        message (or gRPC's, for a message over its transport limit). Never worth a retry unchanged."""
        if self.code == 413:
            return True
        return self.code == 500 and ("etcdserver: request is too large" in self.message
                                     or "trying to send message larger than max" in self.message)

    @property
    def version_too_large(self) -> bool:
        """504: a read at a resourceVersion the server (its watch cache) has not reached."""
        return self.code == 504 and "Too large resource version" in self.message

    @classmethod
    def from_status(cls, status: dict[str, Any], code: int = 0, retry_after: float = 0.0) -> ApiStatusError:
        return cls(int(code or status.get("code") or 0), status.get("reason", ""), status.get("message", ""),
                   retry_after)

    @classmethod
    def from_body(cls, code: int, reason: str, body: bytes, retry_after: str | None = None) -> ApiStatusError:
        """An error answer: its Status when the body is one, else the HTTP reason and the body's start
        (a proxy's or load balancer's page); `retry_after` is the Retry-After header as sent."""
        seconds = _seconds(retry_after)
        try:
            status = orjson.loads(body)
        except orjson.JSONDecodeError:
            status = None
        if not isinstance(status, dict):
            return cls(code, reason, body[:200].decode(errors="replace"), seconds)
        return cls.from_status(status, code, seconds)


def _seconds(header: str | None) -> float:
    try:
        return max(float(header), 0.0) if header else 0.0
    except ValueError:  # an HTTP date: rare from an apiserver, and the backoff still applies
        return 0.0
