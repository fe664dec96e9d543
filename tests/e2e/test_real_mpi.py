"""A real MPI job under `genericjob-controller local`, unchanged (the spec's "MPIJob", "Local runs"): Debian's Open MPI
`mpirun` in the launcher starts its daemons on three workers whose template runs `/usr/sbin/sshd -D` (the local
kubelet's stand-ins: docs/local.md), and mpi4py's allreduce gives the right sum; a worker killed once restarts the
group, counted once, and the job then succeeds; a scale rewrites the hostfile at /etc/mpi/hostfile, which the next
mpirun reads.

Open MPI and mpi4py must be installed (`make test` installs Debian's openmpi-bin and python3-mpi4py,
scripts/install_system_packages.py); mpi4py is Debian's /usr/bin/python3's, so the pods find /usr/bin first on PATH.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess

import pytest
import yaml

from localcluster.testing import Kubectl
from tests.e2e.test_real_tensorflow import INSTALLED
from tests.program.local_inprocess import LocalRun
from tests.program.test_local import EXAMPLES, progress, run_local

ROOT = EXAMPLES.parent  # the example names its script relative to it
ALLREDUCE = EXAMPLES / "mpi" / "allreduce.py"
SYSTEM_BIN = "/usr/bin"  # Debian's mpirun, and the python3 its mpi4py is for
RUN_TIMEOUT = 150.0

# Every rank holds after its allreduce the first time (no file `held` in the working directory yet), so that a worker
# can be killed while mpirun runs; the launcher's next mpirun goes through.
HOLD = """\
import os, threading
from mpi4py import MPI
comm = MPI.COMM_WORLD
first = comm.bcast(not os.path.exists("held") if comm.rank == 0 else None)
total = comm.allreduce(comm.rank + 1)
if comm.rank == 0:
    print(f"sum {total}" + (", holding" if first else ", the second time"), flush=True)
    if first:
        open("held", "w").close()
if first:
    threading.Event().wait()
"""

# Until the hostfile (where the launcher's Open MPI settings say: its local copy) has `count` hosts, each reachable
# by ssh (a static mpirun needs every host's sshd up: a scale adds hosts before their pods run).
WAIT_FOR_HOSTS = """\
import os, subprocess, sys, time
path, count = os.environ["OMPI_MCA_orte_default_hostfile"], int(sys.argv[1])
while True:
    hosts = [line.split()[0] for line in open(path).read().splitlines() if line.strip()]
    if len(hosts) == count and all(subprocess.run(["ssh", h, "true"], capture_output=True).returncode == 0
                                   for h in hosts):
        break
    time.sleep(0.2)
print("hostfile:", " ".join(hosts), flush=True)
"""


@pytest.fixture
def mpi_on_path(monkeypatch) -> str:
    """PATH with /usr/bin first, where Debian's mpirun and the python3 with its mpi4py are."""
    path = f"{SYSTEM_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    monkeypatch.setenv("PATH", path)
    found = subprocess.run(["python3", "-c", INSTALLED, "mpi4py"], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PATH": path})
    assert found.returncode == 0, f"mpi4py is not installed for {SYSTEM_BIN}/python3 (apt-get install " \
                                  f"python3-mpi4py): {found.stderr}"
    assert os.access(f"{SYSTEM_BIN}/mpirun", os.X_OK), "Open MPI is not installed (apt-get install openmpi-bin)"
    return path


def mpi_job(name: str, workers: int, launcher: list[str]) -> dict:
    """examples/mpi-allreduce.yaml under another name, with `workers` workers and the launcher's command."""
    job = copy.deepcopy(yaml.safe_load((EXAMPLES / "mpi-allreduce.yaml").read_text()))
    job["metadata"]["name"] = name
    job["spec"]["worker"]["replicas"] = workers
    job["spec"]["launcher"]["template"]["spec"]["containers"][0]["command"] = launcher
    return job


async def job_status(kubectl: Kubectl, name: str) -> dict:
    return json.loads((await kubectl.ok("get", "mpijob", name, "-o", "json")).out)["status"]


@pytest.mark.timeout(RUN_TIMEOUT + 30)
def test_the_real_mpi_example_sums_across_three_workers_and_succeeds(tmp_path, mpi_on_path):
    done = run_local(tmp_path, "--logs", "--timeout", str(RUN_TIMEOUT), "--apply",
                     str(EXAMPLES / "mpi-allreduce.yaml"), cwd=ROOT, timeout=RUN_TIMEOUT + 20)
    assert done.returncode == 0, done.stdout + done.stderr
    assert progress(done.stdout, "mpi-allreduce")[-1][0] == "Succeeded", done.stdout
    assert "allreduce across 3 ranks: sum 6, as expected" in done.stdout, done.stdout
    for rank in range(3):  # each rank on a worker of its own, at that worker's address
        assert f"rank {rank} of 3 on mpi-allreduce-worker-" in done.stdout, done.stdout
    assert "The launcher mpi-allreduce-launcher-0 has succeeded." in done.stdout
    assert "Connection refused" not in done.stdout  # the workers' sshd stand-ins were up before the launcher


@pytest.mark.timeout(RUN_TIMEOUT + 30)
async def test_a_worker_killed_once_restarts_the_group_once_and_the_job_succeeds(tmp_path, mpi_on_path):
    (tmp_path / "hold.py").write_text(HOLD)
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(mpi_job("mpi-kill", 3, ["mpirun", "python3", "hold.py"])))
    async with LocalRun(tmp_path, "--logs", "--port", "0", env={"PATH": mpi_on_path}) as running:
        kubectl = Kubectl(running.kubeconfig, tmp_path)
        await kubectl.ok("apply", "-f", str(manifest))
        await running.line(r"mpi-kill\s+launcher-0 \| sum 6, holding", timeout=RUN_TIMEOUT)
        found = await kubectl.ok("get", "pod", "mpi-kill-worker-1", "-o",
                                 "jsonpath={.status.containerStatuses[0].containerID}")
        os.killpg(int(found.out.removeprefix("process://")), signal.SIGKILL)  # its sshd, and with it its orted

        await running.line(r"mpi-kill\s+launcher-0 \| sum 6, the second time", timeout=RUN_TIMEOUT)
        await running.line(r"mpi-kill\s+Succeeded", timeout=RUN_TIMEOUT)
        status = await job_status(kubectl, "mpi-kill")
        assert status["backoffCount"] == 1, status  # one group restart, whichever pods it replaced
        assert status["groupRestart"]["replica"] == "mpi-kill-worker-1", status
        assert status["phase"] == "Succeeded"


@pytest.mark.timeout(RUN_TIMEOUT + 30)
async def test_a_scale_rewrites_the_hostfile_and_the_next_mpirun_reads_it(tmp_path, mpi_on_path):
    (tmp_path / "wait_for_hosts.py").write_text(WAIT_FOR_HOSTS)
    allreduce = f"mpirun python3 {ALLREDUCE}"
    script = f"{allreduce} && python3 wait_for_hosts.py 3 && {allreduce}"
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(mpi_job("mpi-scale", 2, ["sh", "-c", script])))
    async with LocalRun(tmp_path, "--logs", "--port", "0", env={"PATH": mpi_on_path}) as running:
        kubectl = Kubectl(running.kubeconfig, tmp_path)
        await kubectl.ok("apply", "-f", str(manifest))
        await running.line(r"mpi-scale\s+launcher-0 \| allreduce across 2 ranks: sum 3, as expected",
                           timeout=RUN_TIMEOUT)
        await kubectl.ok("patch", "mpijob", "mpi-scale", "--type", "merge", "-p",
                         '{"spec": {"worker": {"replicas": 3}}}')

        hosts = await running.line(r"mpi-scale\s+launcher-0 \| hostfile: (.*)$", timeout=RUN_TIMEOUT)
        assert hosts[1].split() == [f"mpi-scale-worker-{i}.mpi-scale.default.svc" for i in range(3)]
        await running.line(r"mpi-scale\s+launcher-0 \| allreduce across 3 ranks: sum 6, as expected",
                           timeout=RUN_TIMEOUT)
        await running.line(r"mpi-scale\s+Succeeded", timeout=RUN_TIMEOUT)
        status = await job_status(kubectl, "mpi-scale")
        assert status["backoffCount"] == 0, status  # the launcher ran on through the scale
