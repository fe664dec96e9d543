"""Slow clients, run in a process of their own so that their memory is not the server's: `count` TLS connections
that each send a request's first line and then one header line every `interval` seconds, never finishing the
head (issue 47's attack on the webhook). It prints one JSON object: how many connected, how many the server cut,
and how long the longest lived from its connect to its cut.

    python -m tests.program.flood HOST PORT COUNT INTERVAL LIMIT

Blocking `ssl` sockets (a few KiB each), not asyncio's TLS (256 KiB each): 2,000 of them fit in a small process.
Stops after LIMIT seconds, whatever is still open.
"""

from __future__ import annotations

import json
import selectors
import socket
import ssl
import sys
import time


def flood(host: str, port: int, count: int, interval: float, limit: float) -> dict:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    chooser = selectors.DefaultSelector()
    opened: dict[ssl.SSLSocket, float] = {}
    lived: list[float] = []
    refused = 0
    started = time.monotonic()
    for _ in range(count):
        begun = time.monotonic()
        try:
            raw = socket.create_connection((host, port), timeout=10)
            tls = context.wrap_socket(raw, server_hostname="webhook")
            tls.sendall(b"POST /validate HTTP/1.1\r\nHost: webhook\r\n")
        except (OSError, ssl.SSLError):
            refused += 1  # cut during its handshake: closed to make room, or refused
            lived.append(time.monotonic() - begun)
            continue
        tls.setblocking(False)
        opened[tls] = begun
        chooser.register(tls, selectors.EVENT_READ)
        _reap(chooser, opened, lived, 0)
    last_line = time.monotonic()
    while opened and time.monotonic() - started < limit:
        if time.monotonic() - last_line >= interval:
            last_line = time.monotonic()
            for tls in list(opened):
                try:
                    tls.send(b"X-Slow: 1\r\n")
                except (OSError, ssl.SSLError):
                    pass  # closed: the read below sees it
        _reap(chooser, opened, lived, 0.05)
    return {"count": count, "cut": len(lived), "refused_in_handshake": refused, "still_open": len(opened),
            "longest": max(lived, default=0.0), "seconds": time.monotonic() - started}


def _reap(chooser: selectors.BaseSelector, opened: dict[ssl.SSLSocket, float], lived: list[float],
          timeout: float) -> None:
    """Record the connections the server closed (end of stream, a reset, a TLS alert)."""
    for key, _ in chooser.select(timeout):
        tls = key.fileobj
        try:
            if tls.recv(4096):  # type: ignore[union-attr]
                continue  # an answer (a 408?): the close follows
        except ssl.SSLWantReadError:
            continue
        except (OSError, ssl.SSLError):
            pass
        chooser.unregister(tls)
        lived.append(time.monotonic() - opened.pop(tls))  # type: ignore[arg-type]
        tls.close()  # type: ignore[union-attr]


if __name__ == "__main__":
    host, port, count, interval, limit = sys.argv[1:6]
    print(json.dumps(flood(host, int(port), int(count), float(interval), float(limit))))
