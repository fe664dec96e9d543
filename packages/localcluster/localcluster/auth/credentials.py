"""What a raw HTTP client needs to reach a LocalCluster: its URL, the admin token and the CA to trust.

Tests, benchmarks and harnesses in this process take them from the cluster (`cluster.credentials`,
`cluster.admin_headers`, `cluster.session()`); those in another process read them from the
kubeconfig `python -m localcluster serve --kubeconfig-out FILE` or `genericjob-controller local`
wrote (`Credentials.from_kubeconfig(FILE)`).
"""

from __future__ import annotations

import base64
import ssl
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import yaml

from .tls import trusting


@dataclass(frozen=True, slots=True)
class Credentials:
    url: str
    token: str
    certificate: bytes | None = None  # the server's self-signed certificate (PEM); None over plain HTTP

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    @property
    def ssl_context(self) -> ssl.SSLContext | bool:
        """For aiohttp's `ssl=`: a context trusting the cluster's certificate (True over plain HTTP)."""
        return trusting(self.certificate) if self.certificate is not None else True

    def session(self, base_url: bool = False, limit: int = 100, **kwargs) -> aiohttp.ClientSession:
        """An aiohttp session that sends the token and trusts the cluster's certificate; with `base_url`,
        request paths are relative to the cluster's URL."""
        headers = {**self.headers, **kwargs.pop("headers", {})}
        connector = aiohttp.TCPConnector(ssl=self.ssl_context, limit=limit)
        return aiohttp.ClientSession(self.url if base_url else None, headers=headers, connector=connector,
                                     **kwargs)

    @classmethod
    def from_kubeconfig(cls, path: str | Path) -> Credentials:
        """The current context's server, token and certificate-authority-data of a kubeconfig."""
        config = yaml.safe_load(Path(path).read_text())
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        ca = cluster.get("certificate-authority-data")
        return cls(cluster["server"], user["token"], base64.b64decode(ca) if ca else None)
