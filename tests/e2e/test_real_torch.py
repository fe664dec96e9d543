"""Real PyTorch over the pod network: `genericjob-controller local --apply` of DDP and torchrun jobs running
examples/pytorch/train.py (gloo, c10d rendezvous by the names the controller gives), beside stdlib TensorFlow-style
and GenericJob jobs, all in one run; and each of the two real examples as it is, in a run of its own.

PyTorch must be installed where the interpreter running the tests is (CI installs it: requirements-torch.lock):
the pods find `python3` and `torchrun` first on PATH, in that interpreter's directory.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.test_real_tensorflow import INSTALLED
from tests.program.test_local import EXAMPLES, progress, run_local
from tests.program.test_local_network import apply_all, generic_job, tensorflow_job

ROOT = EXAMPLES.parent  # the examples name their script relative to it
STEPS = {"name": "STEPS", "value": "5"}  # train.py's training steps: few, the run is about the network


@pytest.fixture
def torch_on_path(monkeypatch):
    """PATH with this interpreter's directory first (its python3 and torchrun), which must have torch installed."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    monkeypatch.setenv("PATH", path)
    found = subprocess.run(["python3", "-c", INSTALLED, "torch"], capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, f"PyTorch is not installed for {sys.executable}: {found.stderr}"


def example(name: str, job_name: str, **spec: dict) -> dict:
    """A real example under another name, training STEPS steps, `spec` merged into its spec."""
    job = yaml.safe_load((EXAMPLES / name).read_text())
    job["metadata"]["name"] = job_name
    job["spec"].update(copy.deepcopy(spec))
    for replica in job["spec"]["replicaSpecs"]:
        replica["template"] = copy.deepcopy(replica["template"])  # the examples share theirs with a YAML anchor
        replica["template"]["spec"]["containers"][0].setdefault("env", []).append(STEPS)
    return job


@pytest.mark.timeout(240)
def test_eight_jobs_of_every_kind_talk_over_the_pod_network_at_once(tmp_path, torch_on_path):
    elastic = {"elastic": {"enabled": True, "minReplicas": 1, "maxReplicas": 3, "expectedReplicas": 2}}
    jobs = [example("pytorch-ddp-real.yaml", "ddp-a"), example("pytorch-ddp-real.yaml", "ddp-b"),
            example("pytorch-torchrun-real.yaml", "torchrun-a"),
            example("pytorch-torchrun-real.yaml", "elastic-a", **elastic),
            tensorflow_job("tf-a"), tensorflow_job("tf-b"), generic_job("generic-a"), generic_job("generic-b")]
    out = apply_all(tmp_path, *jobs, timeout=200, cwd=ROOT)
    # torchrun's ranks go by the rendezvous, not by replica: any replica may print rank 0.
    for job, master, world in (("ddp-a", "master-0", 2), ("ddp-b", "master-0", 2), ("torchrun-a", "worker-0", 4),
                               ("elastic-a", "worker-0", 4)):
        assert re.search(rf"{job}\s+\S+ \| rank 0 of {world} on {job}-\S+: .* parameters equal on every rank", out), out
        assert f"The master replica {job}-{master} has succeeded." in out, out
    for job in ("tf-a", "tf-b"):
        assert re.search(rf"{job}\s+chief-0 \| chief 0 reached and heard from 6 tasks", out), out


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("name", "job", "master", "world"), [
    pytest.param("pytorch-ddp-real.yaml", "ddp-real", "master-0", 2, id="ddp-real"),
    pytest.param("pytorch-torchrun-real.yaml", "torchrun-real", "worker-0", 4, id="torchrun-real")])
def test_the_real_pytorch_examples_succeed(tmp_path, torch_on_path, name, job, master, world):
    """Each example as it is, in a run of its own (the eight jobs above run several of them at once)."""
    done = run_local(tmp_path, "--logs", "--timeout", "150", "--apply", str(EXAMPLES / name), cwd=ROOT, timeout=170)
    assert done.returncode == 0, done.stdout + done.stderr
    assert progress(done.stdout, job)[-1][0] == "Succeeded", done.stdout
    line = rf"{job}\s+\S+ \| rank 0 of {world} on {job}-\S+: .* parameters equal on every rank"
    assert re.search(line, done.stdout), done.stdout  # rank 0 speaks for all: the others may be deleted first
    assert f"The master replica {job}-{master} has succeeded." in done.stdout
    assert done.stdout.rstrip().endswith("1 job succeeded")
