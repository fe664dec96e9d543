"""Where `local` keeps its pods' output once the pods are gone, and the line that says so.

A job's clean-up (`cleanUpPolicy: Unfinished`, the default) deletes the replicas still running when the
job ends, and a pod's logs go with it (`kubectl logs` then answers NotFound, as on a cluster). On a
laptop those are often the lines that say why the job failed, so `local` has the process runner copy every
pod's output as the pod goes, and every pod's when it stops (localcluster/kubelet/kept_logs.py), into
`.cache/local-PORT/logs/NAMESPACE/POD/CONTAINER.log`: one directory per port, emptied by the next run on
that port, so the files of one run stay until the user starts another there.
"""

from __future__ import annotations

from pathlib import Path

from localcluster.cluster import private_directory
from localcluster.kubelet.process_runner import ProcessRunner


def keep_pod_logs(runner: ProcessRunner, cache: Path, port: int) -> str:
    """Start keeping the pods' output under `cache` (made this user's alone: the output may hold what the pods
    read); the line that says where, or why not."""
    directory = cache / f"local-{port}" / "logs"
    try:
        private_directory(cache)
        kept = runner.keep_logs(directory).resolve()
    except OSError as exc:
        return f"pods' output: not kept once a pod is deleted (cannot write {directory}: {exc.strerror or exc})"
    return (f"pods' output: kept in {kept}/NAMESPACE/POD/CONTAINER.log as each pod is deleted and when local stops "
            f"(the next local on port {port} empties it)")
