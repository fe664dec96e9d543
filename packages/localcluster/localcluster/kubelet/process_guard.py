"""What keeps a pod's processes out of the server's own: its memory, its environment, its open files.

Pods run as local processes of the same user as the server, so by the kernel's rules they may read
/proc/<server>/environ (the developer's environment: cloud keys, tokens), /proc/<server>/mem (the admin token,
every Secret) and /proc/<server>/fd/*. Marking the server not dumpable (prctl PR_SET_DUMPABLE 0, as sshd and
gpg-agent do) puts those files out of reach of any process without CAP_SYS_PTRACE; a server run as root would
hand that capability to its root pods, so pods start without it (dropped from their bounding set before exec,
as container runtimes leave it out of a container's default set). Pods never inherit the server's descriptors
(close_fds) and get a minimal environment (container_env.base_environment).

This is hygiene, not isolation: files this user may read, the admin kubeconfig in .cache/ and ~/.aws among
them, stay readable by every pod (docs/local.md says so). On systems without prctl nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys

PR_GET_DUMPABLE, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 3, 4, 24
CAP_SYS_PTRACE = 19


@functools.cache
def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


def make_undumpable() -> bool:
    """Keep same-user processes out of this process's /proc files (memory, environment, descriptors); whether
    it could (False off Linux). Children get the flag reset when they exec: only this process is covered."""
    libc = _libc()
    return libc is not None and libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0


def dumpable() -> bool | None:
    libc = _libc()
    return None if libc is None else bool(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))


def drop_pod_privileges() -> None:
    """In a pod's process between fork and exec: without CAP_SYS_PTRACE a root pod cannot read the root
    server's memory either. Nothing to drop (and nothing done) for a server that is not root."""
    libc = _libc()
    if libc is not None and os.geteuid() == 0:
        libc.prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0)
