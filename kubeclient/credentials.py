"""`RefreshingCredentials`: the settings.Credentials every transport asks before each request, made of a token
source (token_sources.py, exec_plugin.py) and the TLS material (tls_material.py).

After a 401 the token source renews (a token file read again, an exec plugin or an OIDC refresh run) and the
TLS files are checked at once; the transports send the request once more only if either changed (client-go
retries an exec plugin's 401 once, and resets a token file's cache). Concurrent 401s share one renewal, and a
401 to a request sent with a token that was renewed since is retried without renewing again: which token a
request carried is known from the task that sent it (a context variable `authorization()` sets, read by
`unauthorized()` in the same task, as the transports call both; from another task the renewal is joined or
run). So is the SSLContext it connected with (`ssl_context()`, which the transports call for each request):
a 401 to a request made with an older one is retried, whoever reloaded the certificate files.
"""

from __future__ import annotations

import contextvars
import logging
import ssl

from .tls_material import TlsMaterial
from .token_sources import TokenSource

log = logging.getLogger(__name__)

# (id of the credentials, generation of the token) this task last sent, and (id, SSLContext) it last connected with.
_SENT: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar("kubeclient_sent", default=None)
_TLS: contextvars.ContextVar[tuple[int, ssl.SSLContext] | None] = contextvars.ContextVar("kubeclient_tls",
                                                                                         default=None)


class RefreshingCredentials:
    def __init__(self, source: TokenSource, tls: TlsMaterial) -> None:
        self.source, self.tls = source, tls

    async def authorization(self) -> str | None:
        header = await self.source.header()
        _SENT.set((id(self), self.source.generation))
        return header

    def ssl_context(self) -> ssl.SSLContext:
        context = self.tls.context(self.source.client_chain())
        _TLS.set((id(self), context))
        return context

    async def unauthorized(self) -> bool:
        sent = _SENT.get()
        renewed = await self.source.reload(sent[1] if sent is not None and sent[0] == id(self) else None)
        used = _TLS.get()
        # Files changed now, or before: a request on a connection made with an older context (another request
        # reloaded the files since) is sent again too.
        reloaded = self.tls.reload() or (used is not None and used[0] == id(self)
                                         and used[1] is not self.tls.context(self.source.client_chain()))
        log.info("the API server answered 401: %s", "credentials renewed, the request is sent again"
                 if renewed or reloaded else f"{self.source.describe()} gave the same credentials again")
        return renewed or reloaded

    async def close(self) -> None:
        """Stops a renewal in progress (a plugin run is killed: exec_plugin.py)."""
        await self.source.close()

    def describe(self) -> str:
        return self.source.describe()


__all__ = ["RefreshingCredentials"]
