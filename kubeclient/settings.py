"""What the client needs to reach one API server: where it is, whom to trust, and who we are.

`load_settings` (loading.py) makes a `ClientSettings` from a kubeconfig or the pod's service account;
the transports (rest.py: aiohttp for lists and watches, http1.py for writes) take everything from it.
Credentials are an object, not values, because they change under a running controller: an exec
plugin's token expires, a token file or a client certificate is rotated on disk.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Protocol


class Credentials(Protocol):
    """Who the client is, kept fresh (client-go's transport.Config credentials and its cert rotation)."""

    async def authorization(self) -> str | None:
        """The Authorization header's value for the next request ("Bearer ..."), or None to send none.

        Cheap when nothing changed (a cached value); renews before expiry (an exec plugin is re-run before
        its expirationTimestamp, a token file re-read as client-go does, once a minute)."""
        ...

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS settings for new connections: the CA, the client certificate if any. A new object when
        the files behind them changed; the transports compare by identity and drop idle connections made
        with an older one."""
        ...

    async def unauthorized(self) -> bool:
        """The server answered 401: forget cached tokens and certificates and load them again. True if
        anything changed, in which case the request is sent once more (client-go retries an exec plugin's
        401 once); False: the 401 stands."""
        ...

    async def close(self) -> None:
        """Stops whatever renews in the background."""
        ...


@dataclass(frozen=True)
class ClientSettings:
    server: str  # https://host:port, perhaps with a path prefix
    credentials: Credentials
    tls_server_name: str | None = None  # the name the server's certificate is checked against, if not the host
    proxy_url: str | None = None  # kubeconfig's proxy-url; None: the environment's, as client-go reads it
    source: str = ""  # for messages: "in-cluster", "kubeconfig /path (context x)"


__all__ = ["ClientSettings", "Credentials"]
