"""A minimal transport for the credential tests, doing what the client's transports do with `Credentials`: the
header from `authorization()` on every request, `ssl_context()` for a new connection (each request here opens
one), and one more try after a 401 when `unauthorized()` says the credentials changed."""

from __future__ import annotations

from dataclasses import dataclass, field

import aiohttp

from kubeclient.settings import ClientSettings

WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


@dataclass
class Requests:
    settings: ClientSettings
    unauthorized: int = 0  # 401 answers seen
    retried: int = 0  # requests sent again after unauthorized() returned True
    statuses: list[int] = field(default_factory=list)  # each request's final status

    async def whoami(self) -> tuple[int, str | None]:
        """(status, the user the server took us for)."""
        credentials = self.settings.credentials
        for attempt in (1, 2):
            headers = {}
            authorization = await credentials.authorization()
            if authorization:
                headers["Authorization"] = authorization
            connector = aiohttp.TCPConnector(ssl=credentials.ssl_context(), force_close=True)
            async with aiohttp.ClientSession(connector=connector) as session, \
                    session.post(self.settings.server + WHOAMI, json=REVIEW, headers=headers) as answer:
                status, body = answer.status, await answer.json(content_type=None)
            if status == 401:
                self.unauthorized += 1
                if attempt == 1 and await credentials.unauthorized():
                    self.retried += 1
                    continue
            break
        self.statuses.append(status)
        user = body.get("status", {}).get("userInfo", {}).get("username") if status == 201 else None
        return status, user
