"""Where `local` keeps its pods' output once the pods are gone, and the line that says so.

A job's clean-up (`cleanUpPolicy: Unfinished`, the default) deletes the replicas still running when the
job ends, and a pod's logs go with it (`kubectl logs` then answers NotFound, as on a cluster). On a
laptop those are often the lines that say why the job failed, so `local` has the process runner copy every
pod's output as the pod goes, and every pod's when it stops (localcluster/kubelet/kept_logs.py), into
`.cache/local-PORT/logs/NAMESPACE/POD/CONTAINER.log`: one directory per port, emptied by the next run on
that port, so the files of one run stay for the user to read after it.

Runs on free ports (`--port 0`, or 6443 taken) would leave a directory each, without end: so a run starting
removes those of finished runs but the newest KEPT_RUNS. A run holds a lock (`flock`) on its directory's
`running` file while it lives, which the kernel drops however it ends: a locked directory is a live run's,
never removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from pathlib import Path

from localcluster import ProcessRunner, private_directory

KEPT_RUNS = 5  # finished runs whose output stays in .cache, the newest


def keep_pod_logs(runner: ProcessRunner, cache: Path, port: int) -> str:
    """Start keeping the pods' output under `cache` (made this user's alone: the output may hold what the pods
    read); the line that says where, or why not."""
    run = cache / f"local-{port}"
    try:
        private_directory(cache)
        run.mkdir(mode=0o700, exist_ok=True)
        _hold(run)
        kept = runner.keep_logs(run / "logs").resolve()
        _remove_old_runs(cache, run)
    except OSError as exc:
        return f"pods' output: not kept once a pod is deleted (cannot write {run}: {exc.strerror or exc})"
    return (f"pods' output: kept in {kept}/NAMESPACE/POD/CONTAINER.log as each pod is deleted and when local stops "
            f"(the next local on port {port} empties it; of finished runs, the newest {KEPT_RUNS} are kept)")


def _hold(run: Path) -> None:
    """Lock the run's directory for as long as this process lives: the descriptor is left open on purpose (the
    kernel drops the lock at exit, however the process ends)."""
    fd = os.open(run / "running", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _live(run: Path) -> bool:
    try:
        fd = os.open(run / "running", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # not ours to judge: left alone
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _remove_old_runs(cache: Path, current: Path) -> None:
    finished = [run for run in cache.glob("local-*") if run != current and run.is_dir() and not run.is_symlink()
                and not _live(run)]
    finished.sort(key=lambda run: run.stat().st_mtime, reverse=True)
    for run in finished[KEPT_RUNS:]:
        with contextlib.suppress(OSError):
            shutil.rmtree(run)
