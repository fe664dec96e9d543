"""Real TensorFlow over the pod network: `genericjob-controller local --apply examples/tensorflow-real.yaml`, a
MultiWorkerMirroredStrategy job (three workers, one port) and a ParameterServerStrategy job (chief, workers, ps),
as written for a cluster, with TensorFlow first on PATH.

TensorFlow lives in a venv of its own, .venv-tf (`make install-tensorflow`, which `make test` runs; its pins are
requirements-tensorflow.lock), as a user's framework is not the controller's: the test fails, not skips, without
it, since CI installs it.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.program.test_local import EXAMPLES, progress, run_local

ROOT = EXAMPLES.parent
TF_BIN = ROOT / ".venv-tf" / "bin"


# Whether the `python3` first on PATH finds the package (not importing it: TensorFlow's import takes seconds of CPU,
# which the pods spend anyway; an installed TensorFlow that cannot be imported fails their run, its error in the
# output the test prints).
INSTALLED = "import importlib.util, sys; sys.exit(importlib.util.find_spec(sys.argv[1]) is None)"


@pytest.fixture
def tensorflow_on_path(monkeypatch):
    monkeypatch.setenv("PATH", f"{TF_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    found = subprocess.run(["python3", "-c", INSTALLED, "tensorflow"], capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, f"TensorFlow is not installed in {TF_BIN.parent} (make install-tensorflow): " \
                                  f"{found.stderr[-2000:]}"


@pytest.mark.timeout(240)
def test_the_real_tensorflow_example_succeeds(tmp_path, tensorflow_on_path):
    done = run_local(tmp_path, "--logs", "--timeout", "200", "--apply", str(EXAMPLES / "tensorflow-real.yaml"),
                     cwd=ROOT, timeout=220)
    assert done.returncode == 0, done.stdout[-20000:] + done.stderr[-5000:]
    for job in ("tf-multi-worker", "tf-parameter-server"):
        assert progress(done.stdout, job)[-1][0] == "Succeeded", done.stdout[-20000:]
    for index in range(3):
        assert re.search(rf"tf-multi-worker\s+worker-{index} \| worker-{index}: all-reduce over 3 workers gave 6.0",
                         done.stdout), done.stdout[-20000:]
    assert re.search(r"tf-parameter-server\s+chief-0 \| chief: 10 steps on 2 workers, total 10.0 on the ps",
                     done.stdout), done.stdout[-20000:]
    assert done.stdout.rstrip().endswith("all 2 jobs succeeded")
