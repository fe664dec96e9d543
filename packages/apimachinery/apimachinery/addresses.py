"""Is this host a loopback address: one answer for every place the project asks (the proxy choice of kubeclient,
localcluster's exposure warning, `local`'s metrics flag).

A URL's host reaches the network in more spellings than `ipaddress` parses. The resolver the connection goes
through (getaddrinfo, Go's too for a name its ParseIP refuses) reads IPv4 as inet_aton does: `127.1`, `0x7f.1`,
`2130706433`, `017700000001` are all 127.0.0.1. IPv6 may be bracketed (`[::1]`), carry a zone (`::1%lo`), or map
an IPv4 loopback address (`::ffff:127.0.0.1`, which Go's IsLoopback counts and Python's before 3.13 does not).
`localhost`, in any case and with a trailing dot, is loopback as Go's httpproxy treats it. Anything else (a name
that would need resolving) is not, here: the caller decides whether to resolve it.
"""

from __future__ import annotations

import ipaddress
import re
import socket

# What inet_aton reads as an address: digits, hex digits with 0x, dots; nothing after (glibc would stop at a space).
_INET_ATON = re.compile(r"(0[xX][0-9a-fA-F]*|[0-9]+)(\.(0[xX][0-9a-fA-F]*|[0-9]+)){0,3}")


def loopback_address(host: str) -> bool:
    """Whether `host`, as a URL or a socket names it, is a loopback address in any spelling."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.rstrip(".") == "localhost":
        return True
    host = host.split("%", 1)[0]  # an IPv6 zone
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return _inet_aton_loopback(host)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def _inet_aton_loopback(host: str) -> bool:
    if not _INET_ATON.fullmatch(host):
        return False
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host)).is_loopback
    except OSError:
        return False


__all__ = ["loopback_address"]
