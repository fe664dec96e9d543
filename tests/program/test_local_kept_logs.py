"""`local` keeps every pod's output once the pod is gone, and says where (issue 42: with the default
`cleanUpPolicy: Unfinished` a job's clean-up deleted a replica still running, and its output with it). Each run in
the test's process (local_inprocess.py), in tmp_path, where its `.cache/` is."""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path

import pytest

from controller.devtools.local_pod_logs import KEPT_RUNS
from localcluster.testing import until

from .local_inprocess import LocalRun
from .test_local import EXAMPLES, run_in_process, write
from .test_local_kubectl import kubectl

pytestmark = pytest.mark.slow  # each test runs local's pods

# Worker 0 fails once worker 1 has spoken (MARKER), which fails the job (its failure rule); worker 1, still running
# then, is what the clean-up deletes, as a torchrun master waiting for a worker that crashed.
JOB = """apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata: {name: cleaned}
spec:
  cleanUpPolicy: Unfinished
  failureRules: [{worker: [0]}]
  replicaSpecs:
  - type: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: main
          image: ignored
          command: [sh, -c, 'if [ $(rank) = 0 ]; then while [ ! -e MARKER ]; do sleep 0.05; done;
                    echo worker 0 out of data; exit 3; fi; echo worker 1 waiting for its peers; touch MARKER;
                    exec sleep 60']
"""
KEPT = re.compile(r"^pods' output: kept in (?P<dir>/\S+)/NAMESPACE/POD/CONTAINER\.log as each pod is deleted and when "
                  r"local stops \(the next local on port (?P<port>\d+) empties it; of finished runs, the newest 5 are "
                  r"kept\)$")


async def test_a_replica_deleted_by_the_clean_up_keeps_its_output_where_local_said(tmp_path):
    manifest = write(tmp_path, "cleaned.yaml", JOB.replace("MARKER", str(tmp_path / "spoken")))
    async with LocalRun(tmp_path, "--port", "0", "--kubeconfig-out", str(tmp_path / "kubeconfig")) as running:
        said = await running.line(KEPT.pattern)
        directory = Path(said["dir"])
        assert directory == tmp_path / ".cache" / f"local-{running.port}" / "logs" and int(said["port"]) == running.port
        code, _, err = await kubectl(running.kubeconfig, "apply", "-f", str(manifest))
        assert code == 0, err
        await running.line(r"finished: cleaned\s+Failed")

        async def deleted():  # by the clean-up, with its logs: `kubectl logs` answers as a cluster does
            return await kubectl(running.kubeconfig, "logs", "cleaned-worker-1")

        code, _, err = await until(lambda: _failed(deleted()), timeout=90, what="worker-1 deleted", interval=0.2)
        assert err == 'error: error from server (NotFound): pods "cleaned-worker-1" not found in namespace "default"\n'
        worker1 = directory / "default" / "cleaned-worker-1" / "main.log"
        assert worker1.read_text().endswith("), container main <==\nworker 1 waiting for its peers\n")
        assert await running.stop() == 0
    # Kept when local stops, with worker 0's (failed, not deleted: kept as the cluster stops).
    assert worker1.read_text().endswith("worker 1 waiting for its peers\n")
    worker0 = directory / "default" / "cleaned-worker-0" / "main.log"
    assert worker0.read_text().endswith("), container main <==\nworker 0 out of data\n")


async def _failed(answer):
    code, out, err = await answer
    return (code, out, err) if code != 0 else None


def test_where_the_output_cannot_be_kept_local_says_so_and_runs(tmp_path):
    (tmp_path / ".cache").write_text("a file where local keeps its directory")
    done = run_in_process(tmp_path, "--apply", str(EXAMPLES / "generic-example.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pods' output: not kept once a pod is deleted (cannot write .cache/local-" in done.stdout, done.stdout


def test_a_run_removes_the_output_of_finished_runs_but_the_newest_and_never_a_live_runs(tmp_path):
    """Runs on free ports leave a directory each: a run starting keeps the newest KEPT_RUNS finished ones."""
    cache = tmp_path / ".cache"
    cache.mkdir(mode=0o700)
    runs = [cache / f"local-{port}" for port in range(1, KEPT_RUNS + 3)]
    for age, run in enumerate(reversed(runs)):  # local-1 the oldest
        (run / "logs").mkdir(parents=True)
        (run / "running").touch()
        os.utime(run, (1_000_000 - age, 1_000_000 - age))
    live = cache / "local-99"  # the oldest of all, but its run still holds it
    (live / "logs").mkdir(parents=True)
    fd = os.open(live / "running", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.utime(live, (1, 1))
        done = run_in_process(tmp_path, "--apply", str(EXAMPLES / "generic-example.yaml"))
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        os.close(fd)
    this = Path(next(m for line in done.stdout.splitlines() if (m := KEPT.match(line)))["dir"]).parent
    assert {run.name for run in cache.glob("local-*")} == {this.name, live.name, *(r.name for r in runs[2:])}
