"""Which /16 of the loopback network a cluster's pods get: one that no other local cluster on this machine holds.

Two clusters drawing the same 127.B.0.0/16 would hand out the same addresses, and a pod of one would meet
the other's (a listener taken, a connection to a stranger). So each cluster claims its /16 for as long as
its pods may use it: an exclusive `flock` on a file named after the network, in a directory that every
user's clusters share (`/tmp/localcluster-pod-networks`, world-writable and sticky as /tmp is: the loopback
network is the machine's, not the user's, so it is /tmp itself, whatever $TMPDIR says). A held lock is a
live claim: the kernel drops it when its process ends, however it ends (SIGKILL, a crash), so a claim left
behind by a dead run is free again, with no pid to check and no pid reuse to fool the check (the file holds
the owner's pid for a person only).

The file is removed by its owner on release, with the lock held; whoever locks a file must then find it
still at its name (same inode), else it locked one just released and removed, and tries again. Only files
this process creates (O_EXCL, O_NOFOLLOW) are written; one found there is opened read-only, never written (a
link or a FIFO planted by another user leads nowhere): a stale claim of this user's is removed, its lock held,
and made afresh; another user's is kept as it is, its lock the claim. Where no claim can be made (the
directory unusable, every network held) the caller draws one at random (pod_network.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import random
import stat
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger("localcluster.network")

CLAIMS_ENV = "LOCALCLUSTER_NETWORK_CLAIMS"  # the shared directory, elsewhere (tests)
SECOND_OCTETS = range(16, 255)  # 127.16.0.0 to 127.254.0.0: away from 127.0.0.1 and Debian's 127.0.1.1
ATTEMPTS = 3  # a network whose claim is released as it is locked is tried again, this many times
_OPEN = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # no link followed, no FIFO waited on


class NetworkClaim:
    """A held claim on 127.`octet`.0.0/16 until `release()` (or the process ends)."""

    def __init__(self, octet: int, path: Path, fd: int) -> None:
        self.octet = octet
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):  # removed while locked, so nobody takes the name for a claim meanwhile
            if _same_file(fd, self.path):
                os.unlink(self.path)
        os.close(fd)  # the lock goes with it


def claims_directory() -> Path:
    return Path(os.environ.get(CLAIMS_ENV) or "/tmp/localcluster-pod-networks")


def claim_network(directory: Path | None = None, octets: Iterable[int] = SECOND_OCTETS) -> NetworkClaim | None:
    """A claim on one of the networks 127.B.0.0/16 (B in `octets`, tried in a random order) that no live claim
    holds; None when there is none, or the shared directory cannot be used (said in the log)."""
    directory = directory or claims_directory()
    try:
        _shared_directory(directory)
    except OSError as exc:
        log.warning("pod network: cannot claim a network in %s (%s); drawing one at random", directory, exc)
        return None
    order = list(octets)
    random.shuffle(order)
    for octet in order:
        claim = _claim(directory, octet)
        if claim is not None:
            return claim
    return None


def _shared_directory(directory: Path) -> None:
    """Make the directory every user's clusters share (as /tmp: anyone may add a name, only its owner remove it)."""
    try:
        directory.mkdir(mode=0o700)
        directory.chmod(0o1777)  # (mkdir's mode is masked by the umask)
    except FileExistsError:
        pass
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(f"{directory} is not a directory")


def _claim(directory: Path, octet: int) -> NetworkClaim | None:
    path = directory / f"127.{octet}.0.0-16"
    for _ in range(ATTEMPTS):
        created = True
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN, 0o644)
        except FileExistsError:
            created = False
            try:
                fd = os.open(path, os.O_RDONLY | _OPEN)
            except FileNotFoundError:
                continue  # released and removed just now: free, try again
            except OSError:
                return None  # a link, or not ours to read: not a claim this process can make
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # held by a live run
            return None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        if not _same_file(fd, path):
            os.close(fd)  # its owner released and removed it as we locked it: the name is free, try again
            continue
        if created:
            os.write(fd, f"{os.getpid()}\n".encode())
            return NetworkClaim(octet, path, fd)
        # A claim its run left behind (that process is gone). One of our own is removed and made afresh, so that
        # it names its new owner; another user's cannot be removed (the sticky bit), and the lock on it is the claim.
        if os.fstat(fd).st_uid == os.geteuid():
            with contextlib.suppress(OSError):
                os.unlink(path)
                os.close(fd)
                continue
        return NetworkClaim(octet, path, fd)
    return None


def _same_file(fd: int, path: Path) -> bool:
    try:
        at_name = os.lstat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (at_name.st_dev, at_name.st_ino)
