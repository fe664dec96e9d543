"""The client's view of an API server's refusal: `ApiStatusError`, built from a `Status` object.

Shared by every client in the project (informers, the controller's write client, leader election,
the start-up checks) so that each handles the same codes the same way.
"""

from __future__ import annotations


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
    def version_too_large(self) -> bool:
        """504: a read at a resourceVersion the server (its watch cache) has not reached."""
        return self.code == 504 and "Too large resource version" in self.message

    @classmethod
    def from_status(cls, status: dict, code: int = 0, retry_after: float = 0.0) -> ApiStatusError:
        return cls(int(code or status.get("code") or 0), status.get("reason", ""), status.get("message", ""),
                   retry_after)
