"""Writing the admin kubeconfig where only this user can read it, and where no one else can redirect it.

The file holds the admin token: whoever reads it is the cluster's admin, and through pods runs processes as
this user. A directory another user may write (or owns) lets that user plant a symlink where the file will be
written, or swap the file after it is written; a plain open() would follow the link and write the token
wherever it points. So the directory must be this user's and writable by no one else (its read bits are
tightened, as ssh tightens nothing but refuses: here the directory is ours to fix), and the file is written
under a fresh name made with O_EXCL|O_NOFOLLOW and renamed over the target, which replaces a link instead of
following it. A world-writable sticky directory (/tmp) is accepted for an explicit path: others may create
names there, but may neither remove nor replace ours.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path


class UnsafeDirectory(PermissionError):
    """A directory the kubeconfig must not be written into; str() names the path and the fix."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EPERM, message)


def check_directory(path: Path, allow_sticky: bool = False) -> os.stat_result:
    """Refuse a directory owned by another user or writable by group or others (UnsafeDirectory)."""
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeDirectory(f"{path} is not a directory")
    if info.st_uid != os.geteuid():
        raise UnsafeDirectory(f"refusing to write the admin kubeconfig into {path}: it belongs to uid {info.st_uid}, "
                              f"not to this user (uid {os.geteuid()}); remove it, or write elsewhere")
    loose = stat.S_IMODE(info.st_mode) & 0o022
    if loose and not (allow_sticky and info.st_mode & stat.S_ISVTX):
        raise UnsafeDirectory(f"refusing to write the admin kubeconfig into {path}: others may write it (mode "
                              f"{stat.S_IMODE(info.st_mode):04o}), so they may have planted a link to read the token; "
                              f"check what it holds, then `chmod 700 {path}` (or remove it)")
    return info


def private_directory(path: str | Path) -> Path:
    """`path` as a directory only this user may enter: made 0700, or, existing, checked (check_directory) and its
    mode set to 0700."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    check_directory(path)
    path.chmod(0o700)
    return path


def write_private_file(path: str | Path, text: str) -> Path:
    """Write `text` to `path` (0600) without following a link at `path` or trusting a directory others may write:
    a missing directory is made 0700."""
    path = Path(path)
    directory = path.parent
    if not directory.exists():
        directory.mkdir(mode=0o700, parents=True)
    check_directory(directory, allow_sticky=True)
    temporary = directory / f".{path.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(temporary, path)  # a link at `path` is replaced, not followed
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path
