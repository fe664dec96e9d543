"""Pod addresses: one per running pod, from a /16 of the loopback network 127.0.0.0/8.

On Linux every address of 127.0.0.0/8 is this machine's without any setup, so a process can bind one
and every other process can reach it; the podnet shim binds a pod's listening sockets there. Each
cluster's /16 is one that no other local run on this machine holds (claims.py: 127.16.0.0 to 127.254.0.0,
away from 127.0.0.1 and Debian's 127.0.1.1; drawn at random where none can be claimed), and its
addresses are handed out in turn, not reusing a freed one until the range has gone round: a late
connection to a pod gone meets no new pod.
"""

from __future__ import annotations

import ipaddress
import random

from .claims import SECOND_OCTETS

HOSTS_PER_RANGE = 256 * 256 - 2  # 127.B.0.1 to 127.B.255.254


class AddressPool:
    def __init__(self, second_octet: int | None = None) -> None:
        self.octet = second_octet if second_octet is not None else random.choice(SECOND_OCTETS)
        self.by_uid: dict[str, str] = {}
        self._used: set[str] = set()
        self._next = 1

    @property
    def network(self) -> str:
        return f"127.{self.octet}.0.0/16"

    def assign(self, uid: str) -> str:
        """The pod's address, the same for every call until it is released."""
        if uid in self.by_uid:
            return self.by_uid[uid]
        if len(self._used) >= HOSTS_PER_RANGE:
            raise RuntimeError(f"every address of {self.network} is in use")
        while True:
            n, self._next = self._next, self._next % HOSTS_PER_RANGE + 1
            ip = str(ipaddress.IPv4Address((127 << 24) | (self.octet << 16) | n))
            if ip not in self._used:
                break
        self._used.add(ip)
        self.by_uid[uid] = ip
        return ip

    def release(self, uid: str) -> None:
        ip = self.by_uid.pop(uid, None)
        if ip is not None:
            self._used.discard(ip)
