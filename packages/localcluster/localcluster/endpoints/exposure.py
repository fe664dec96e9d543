"""The warning a LocalCluster served beyond this machine's loopback prints at start.

Pods of `local` and `serve --runner process` are processes of the user who started them, and
exec and port-forward reach into them: whoever holds the admin token can run anything as that
user. On a loopback address only this machine's users can try; on any other, the network can.
"""

from __future__ import annotations

import os
import socket

from apimachinery.addresses import loopback_address


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback one (an unresolvable name is not)."""
    if loopback_address(host):
        return True
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(loopback_address(str(info[4][0])) for info in infos)


def exposure_warning(host: str, port: int, kubeconfig: str | None) -> str | None:
    """What serving on host:port exposes, or None on a loopback address."""
    if is_loopback(host):
        return None
    where = f"the token in {kubeconfig}" if kubeconfig else "the admin token"
    return (f"WARNING: serving on {host}:{port}, not a loopback address: anyone who can reach it may try the "
            f"Kubernetes API, and pods, exec and port-forward run processes as this user (uid {os.getuid()}); "
            f"{where} is the only key.")
