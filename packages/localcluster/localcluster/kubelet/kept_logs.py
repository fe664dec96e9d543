"""Pods' output kept after the pods are gone, for a person to read (`genericjob-controller local`).

A kubelet removes a pod's logs with the pod, and the process runner does too (its live logs serve
`kubectl logs`, which answers NotFound for a pod deleted, as a real server does). But a local run's
pods are deleted under the user's eyes: a job's clean-up (`cleanUpPolicy: Unfinished`) deletes the
replicas still running when it ends, and those are often the ones whose output says why it failed (a
torchrun master waiting for a worker that crashed). So when asked (`ProcessRunner.keep_logs`), the runner
copies every container's output here as its pod is forgotten (deleted, or the cluster stopping):

    DIRECTORY/NAMESPACE/POD/CONTAINER.log

One file per container name, so every pod of that name adds to it: the controller replaces a replica's
pod by a new one of the same name, and each attempt's output follows the one before. Each section starts
with a line naming the pod, its uid and the container (and, for a container restarted inside its pod, the
instance before the restart first, as `kubectl logs --previous` has it), so attempts can be told apart.

Bounded by what the pods wrote, and by the live logs' own limit: a section is what the runner kept of that
instance (its last `log_limit` bytes). The directory is emptied when the runner starts keeping there, and
kept after the runner stops: the run's owner reads it afterwards, and the next run in the same place
replaces it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CHUNK = 1 << 20


def fresh_directory(directory: Path) -> Path:
    """`directory`, empty and 0700 (what an earlier run left there is removed: it is that run's, not this one's)."""
    if directory.is_symlink() or directory.is_file():
        directory.unlink()
    else:
        shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(mode=0o700, parents=True)
    return directory


def file_for(directory: Path, namespace: str, pod: str, container: str) -> Path:
    """Where the output of `container` of the pods named `pod` is kept. The names are the API's, validated there
    (DNS labels and subdomains): none holds a `/` or is `..`."""
    return directory / namespace / pod / f"{container}.log"


def keep(directory: Path, key: tuple[str, str], uid: str, live: Path, containers: list[str]) -> None:
    """Append what the pod's live log directory `live` holds of each container to its kept file."""
    namespace, pod = key
    for container in containers:
        sections = [(live / f"{container}.previous.log", ", the instance before its last restart"),
                    (live / f"{container}.log", "")]
        present = [(path, note) for path, note in sections if path.exists()]
        if not present:  # never started: nothing written
            continue
        target = file_for(directory, namespace, pod, container)
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "ab") as out:
            for path, note in present:
                out.write(f"==> pod {namespace}/{pod} (uid {uid}), container {container}{note} <==\n".encode())
                ends_in_newline = True
                with open(path, "rb") as source:
                    while chunk := source.read(CHUNK):
                        out.write(chunk)
                        ends_in_newline = chunk.endswith(b"\n")
                if not ends_in_newline:  # the next section's line starts a line of its own
                    out.write(b"\n")
