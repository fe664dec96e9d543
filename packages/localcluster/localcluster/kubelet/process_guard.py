"""What keeps a pod's processes out of the server's own: its memory, its environment, its open files.

Pods run as local processes of the same user as the server, so by the kernel's rules they may read
/proc/<server>/environ (the developer's environment: cloud keys, tokens), /proc/<server>/mem (the admin token,
every Secret) and /proc/<server>/fd/*. Marking the server not dumpable (prctl PR_SET_DUMPABLE 0, as sshd and
gpg-agent do) puts those files out of reach of any process without CAP_SYS_PTRACE. A server run as root would
hand every capability to its root pods (CAP_SYS_ADMIN, CAP_SYS_MODULE, CAP_SYS_PTRACE...), so a pod starts with a
container runtime's default set, no more (issue 47): the 14 capabilities Docker and containerd give a container
(RUNTIME_DEFAULT), the others dropped from its bounding set and its inheritable set, and its ambient set cleared,
before exec. Pods never inherit the server's descriptors
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
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAP_SYS_PTRACE = 19
# Docker's (moby oci/caps/defaults.go) and containerd's (oci.defaultUnixCaps) default capabilities of a container.
RUNTIME_DEFAULT = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_FOWNER": 3, "CAP_FSETID": 4, "CAP_KILL": 5,
                   "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8, "CAP_NET_BIND_SERVICE": 10, "CAP_NET_RAW": 13,
                   "CAP_SYS_CHROOT": 18, "CAP_MKNOD": 27, "CAP_AUDIT_WRITE": 29, "CAP_SETFCAP": 31}
RUNTIME_DEFAULT_MASK = sum(1 << cap for cap in RUNTIME_DEFAULT.values())
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 63


_LAST_CAP = _last_cap()  # read here, not between fork and exec


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


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
    """In a pod's process between fork and exec: a root server's pod keeps a container runtime's default
    capabilities only (without CAP_SYS_PTRACE it cannot read the server's memory either). Nothing to drop (and
    nothing done) for a server that is not root: its pods have no capability."""
    libc = _libc()
    if libc is None or os.geteuid() != 0:
        return
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    # Root's exec gives the bounding set and the inheritable set: both are cut to the default set.
    header, data = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) == 0:
        for word, part in enumerate(data):
            mask = (RUNTIME_DEFAULT_MASK >> (32 * word)) & 0xFFFFFFFF
            part.inheritable &= mask
        libc.capset(ctypes.byref(header), data)
    for cap in range(_LAST_CAP + 1):
        if not RUNTIME_DEFAULT_MASK >> cap & 1:
            libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
