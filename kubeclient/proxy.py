"""Which proxy, if any, carries the requests to the API server: client-go's decision, made once.

client-go's transport takes kubeconfig's `proxy-url` when the cluster entry has one, and otherwise the
environment as Go's golang.org/x/net/http/httpproxy reads it, once per process: HTTPS_PROXY for an https
server, HTTP_PROXY for an http one (each upper case first, then lower case), minus NO_PROXY. It never
proxies loopback (localhost, 127.0.0.0/8, ::1), whatever the variables say: a developer's HTTPS_PROXY
must not capture a local cluster. NO_PROXY is a comma-separated list of

    *                 nothing is proxied
    10.0.0.0/8        addresses in a CIDR range
    10.96.0.1         one address (optionally :port)
    example.com       that host and its subdomains (optionally :port)
    .example.com      its subdomains only (`*.example.com` is the same)

Entries are compared with the server's host only, never a name resolved to an address. aiohttp's own
reading (trust_env) knows none of the CIDR or loopback rules, looks the variables up in a thread before
every request and reads ~/.netrc; the client's session is made with trust_env off and this decision.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from apimachinery.addresses import loopback_address

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class _NoProxy:
    """NO_PROXY, parsed as httpproxy's Config.init parses it."""

    everything: bool
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    addresses: tuple[tuple[_Address, str], ...]  # (address, port or "")
    domains: tuple[tuple[str, str, bool], ...]  # (".suffix", port or "", whether the bare host matches too)

    @classmethod
    def parse(cls, value: str) -> _NoProxy:
        everything, networks, addresses, domains = False, [], [], []
        for entry in (e.strip().lower() for e in value.split(",")):
            if not entry:
                continue
            if entry == "*":
                everything = True
                continue
            if "/" in entry:
                try:
                    networks.append(ipaddress.ip_network(entry, strict=False))
                except ValueError:
                    pass  # Go's ParseCIDR fails and the entry is then read as a host: it matches nothing
                continue
            host, port = _split_host_port(entry)
            address = _address(host)
            if address is not None:
                addresses.append((address, port))
                continue
            host = host.removeprefix("*")
            bare = not host.startswith(".")
            domains.append((host if not bare else f".{host}", port, bare))
        return cls(everything, tuple(networks), tuple(addresses), tuple(domains))

    def excludes(self, host: str, port: str) -> bool:
        if self.everything:
            return True
        address = _address(host)
        if address is not None:
            return (any(address in network for network in self.networks)
                    or any(address == a and p in ("", port) for a, p in self.addresses))
        return any((host.endswith(suffix) or (bare and host == suffix[1:])) and p in ("", port)
                   for suffix, p, bare in self.domains)


def proxy_for(server: str, proxy_url: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The proxy URL for requests to `server` (https://host:port...), or None to connect directly.

    `proxy_url` is kubeconfig's proxy-url: it wins over the environment, loopback included, as in client-go
    (where it replaces the environment's proxy function)."""
    if proxy_url:
        return _with_scheme(proxy_url)
    env = os.environ if environ is None else environ
    parts = urlsplit(server)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = str(parts.port or (443 if scheme == "https" else 80))
    if not host or loopback_address(host):
        return None
    chosen = _first(env, "HTTPS_PROXY", "https_proxy") if scheme == "https" else _first(env, "HTTP_PROXY", "http_proxy")
    if not chosen:
        return None
    if _NoProxy.parse(_first(env, "NO_PROXY", "no_proxy")).excludes(host, port):
        return None
    return _with_scheme(chosen)


def _first(env: Mapping[str, str], *names: str) -> str:
    """httpproxy's getEnvAny: the first of `names` that is set and not empty."""
    return next((env[name] for name in names if env.get(name)), "")


def _with_scheme(proxy: str) -> str:
    """A proxy given as host:port is http://host:port (httpproxy's parseProxy)."""
    return proxy if "://" in proxy else f"http://{proxy}"


def _address(host: str) -> _Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _split_host_port(entry: str) -> tuple[str, str]:
    """Go's net.SplitHostPort where it succeeds ("host:port", "[v6]:port"), else the whole entry as a host."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") else ""
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, port
    return entry, ""


__all__ = ["proxy_for"]
