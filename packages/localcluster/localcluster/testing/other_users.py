"""Files as another user sees them: the tests that check a kubeconfig, a key or a log is this user's only."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

# The user every system has and no test runs as.
NOBODY = 65534


def world_traversable_directory() -> Path:
    """A directory every user may enter (pytest's tmp_path is 0700: it would hide any file from others)."""
    base = Path(tempfile.mkdtemp(prefix="localcluster-attack-"))
    base.chmod(0o711)
    return base


def read_as(uid: int, path: Path) -> subprocess.CompletedProcess:
    """`cat PATH` as another user (the system's cat: that user may not run this virtualenv's python)."""
    return subprocess.run(["cat", str(path)], user=uid, group=uid, extra_groups=[], capture_output=True, text=True,
                          timeout=30, cwd="/")
