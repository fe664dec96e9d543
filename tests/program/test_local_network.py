"""`genericjob-controller local --apply` with jobs that talk over the pod network: each replica listens on the
same port at an address of its own, and reaches the others by the names the controller gives them (TF_CONFIG's
hosts, MASTER_ADDR, `$(service...)`). Standard library only; each run is in the test's process (local_inprocess.py),
to its end, which `--timeout` guards, and every script has a deadline of its own.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from tests.program.test_local import EXAMPLES, progress, run_in_process

pytestmark = pytest.mark.slow  # each test runs local's pods

# A stdlib rendezvous in place of c10d: the master listens on MASTER_PORT on every address (`::`, as c10d does),
# the workers reach it by MASTER_ADDR and send their RANK, and it answers each with every rank it heard.
RENDEZVOUS = """
import os, socket, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
master, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
if rank == 0:
    assert socket.gethostbyname(master) == os.environ["POD_IP"], "MASTER_ADDR is not this pod"
    server = socket.create_server(("::", port), family=socket.AF_INET6, dualstack_ipv6=True)
    server.settimeout(60)
    peers = [server.accept()[0] for _ in range(world - 1)]
    ranks = sorted([0, *(int(peer.recv(16)) for peer in peers)])
    assert len({peer.getpeername()[0] for peer in peers}) == world - 1, "two workers at one address"
    for peer in peers:
        peer.sendall(repr(ranks).encode())
else:
    deadline = time.monotonic() + 60
    while True:
        try:
            peer = socket.create_connection((master, port), timeout=5)
            break
        except OSError as error:
            assert time.monotonic() < deadline, f"cannot reach {master}:{port}: {error}"
            time.sleep(0.2)
    peer.settimeout(max(1.0, deadline - time.monotonic()))  # the master answers once every worker has reached it
    peer.sendall(str(rank).encode())
    ranks = peer.recv(64).decode()
print(f"rank {rank} of {world} heard ranks {ranks}", flush=True)
"""

# All to all, by the names `$(service...)` gives: PEERS lists every replica's host:port, ME is this one's index.
ALL_TO_ALL = """
import os, socket, time
peers, me = os.environ["PEERS"].split(), int(os.environ["ME"])
server = socket.create_server(("", int(peers[me].rpartition(":")[2])))
deadline = time.monotonic() + 60
for index, address in enumerate(peers):
    host, _, port = address.rpartition(":")
    while index != me:
        try:
            with socket.create_connection((host, int(port)), timeout=5) as peer:
                peer.sendall(str(me).encode())
            break
        except OSError as error:
            assert time.monotonic() < deadline, f"cannot reach {address}: {error}"
            time.sleep(0.2)
server.settimeout(deadline - time.monotonic())
heard = sorted(int(server.accept()[0].recv(16)) for _ in range(len(peers) - 1))
assert heard == [index for index in range(len(peers)) if index != me], heard
print(f"replica {me} reached and heard from {heard}", flush=True)
"""


def tensorflow_job(name: str, namespace: str = "default") -> dict:
    """The parameter-server example (chief, 2 ps, 4 workers, all on port 2222), under another name."""
    job = yaml.safe_load((EXAMPLES / "tensorflow-parameter-server.yaml").read_text())
    job["metadata"] = {"name": name, "namespace": namespace}
    return job


def pytorch_job(name: str, workers: int = 2) -> dict:
    container = {"name": "pytorch", "image": "ignored", "command": ["python3", "-c", RENDEZVOUS],
                 "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]}
    template = {"spec": {"containers": [container]}}
    return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "PyTorchTrainingJob", "metadata": {"name": name},
            "spec": {"replicaSpecs": [{"type": "master", "replicas": 1, "template": template},
                                      {"type": "worker", "replicas": workers, "template": copy.deepcopy(template)}]}}


def generic_job(name: str, replicas: int = 3) -> dict:
    peers = " ".join(f"$(service.worker[{rank}].host):$(service.port[http])" for rank in range(replicas))
    container = {"name": "main", "image": "ignored", "command": ["python3", "-c", ALL_TO_ALL],
                 "env": [{"name": "PEERS", "value": peers}, {"name": "ME", "value": "$(rank)"}]}
    return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "metadata": {"name": name},
            "spec": {"service": {"ports": [{"name": "http", "port": 8080}]},
                     "successRules": [{"worker": list(range(replicas))}],
                     "failureRules": [{"worker": [rank]} for rank in range(replicas)],
                     "replicaSpecs": [{"type": "worker", "replicas": replicas,
                                       "template": {"spec": {"containers": [container]}}}]}}


def apply_all(tmp_path: Path, *objects: dict, timeout: float = 90.0, cwd: Path | None = None) -> str:
    """`local --logs --apply` of `objects` (in `cwd`, else tmp_path) to the end: exit 0, every job Succeeded; its
    output. `timeout`: the test's, a little more than the run's `--timeout` (a guard: the jobs end well before)."""
    manifest = tmp_path / "jobs.yaml"
    manifest.write_text(yaml.safe_dump_all(objects))
    done = run_in_process(tmp_path, "--logs", "--timeout", str(timeout - 10), "--apply", str(manifest), cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout[done.stdout.index("finished in"):]
    # Named as `local` prints them: NAMESPACE/NAME outside the default namespace.
    jobs = [f"{o['metadata']['namespace']}/{o['metadata']['name']}" if o["metadata"].get("namespace", "default")
            != "default" else o["metadata"]["name"] for o in objects if o["kind"] != "Namespace"]
    for job in jobs:
        assert progress(done.stdout, job)[-1][0] == "Succeeded", done.stdout
        assert re.search(rf"^  {job}\s+Succeeded ", summary, re.MULTILINE), summary
    assert summary.rstrip().endswith(f"{'all ' if len(jobs) > 1 else ''}{len(jobs)} job{'s' * (len(jobs) > 1)} "
                                     "succeeded"), summary
    return done.stdout


def test_a_tensorflow_job_in_its_namespace_reaches_every_task_at_its_tf_config_address(tmp_path):
    """Seven tasks bind 2222 at once, and reach each other by `[job]-[type]-[index].research.svc`."""
    out = apply_all(tmp_path, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "research"}},
                    tensorflow_job("tf-net", "research"))
    assert "research/tf-net  chief-0 | chief 0 reached and heard from 6 tasks" in out, out


def test_pytorch_workers_reach_the_master_by_master_addr(tmp_path):
    out = apply_all(tmp_path, pytorch_job("torch-net", workers=2))
    assert "master-0 | rank 0 of 3 heard ranks [0, 1, 2]" in out, out
    assert "The master replica torch-net-master-0 has succeeded." in out


@pytest.mark.timeout(180)
def test_two_jobs_of_each_kind_at_once_share_their_ports_without_colliding(tmp_path):
    """Two TensorFlow jobs (14 listeners on 2222) and two PyTorch jobs (two masters on 23456) in one run."""
    out = apply_all(tmp_path, tensorflow_job("tf-a"), tensorflow_job("tf-b"), pytorch_job("torch-a"),
                    pytorch_job("torch-b"), timeout=120)
    for job in ("tf-a", "tf-b"):
        assert re.search(rf"{job}\s+chief-0 \| chief 0 reached and heard from 6 tasks", out), out
    for job in ("torch-a", "torch-b"):
        assert re.search(rf"{job}\s+master-0 \| rank 0 of 3 heard ranks \[0, 1, 2\]", out), out


def test_generic_job_replicas_reach_each_other_by_their_service_names(tmp_path):
    out = apply_all(tmp_path, generic_job("generic-net", replicas=3))
    for rank in range(3):
        others = [index for index in range(3) if index != rank]
        assert f"worker-{rank} | replica {rank} reached and heard from {others}" in out, out
