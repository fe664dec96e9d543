"""The image's venv is slimmed (scripts/slim_venv.py), and nothing `run` loads is among what goes.

The Dockerfile's builder deletes kubernetes_asyncio's generated API and model classes, its tests and the
extensions' sources, and strips the extensions. Here the same script slims a copy of kubernetes_asyncio
(stripping aside: the copy has no extension), and the run path, `run --help` and a controller running a job
are made to use that copy, so a module the slimming removed would fail them (bench/image_venv.py measures
the whole venv so built: BENCHMARKS.md, "The image").
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import CRDS, QUICK, Jobs, genericjob
from tests.slow import starts_processes

from .manifests_support import args_of, dockerfile_stages
from .subprocesses import ROOT, ControllerProcess
from .test_startup import Served

SCRIPT = ROOT / "scripts" / "slim_venv.py"
RUN_PATH = ("from controller.cmd import cli\nfrom controller.runtime import manager\n"
            "from controller.kinds import registry\n"
            "cli.manager_config(cli.parse_args(['run', '--no-leader-elect']))\n")


@pytest.fixture(scope="module")
@starts_processes
def slimmed(tmp_path_factory) -> Path:
    """A directory holding kubernetes_asyncio as the image has it: put it first on PYTHONPATH."""
    site = tmp_path_factory.mktemp("site")
    installed = Path(importlib.util.find_spec("kubernetes_asyncio").submodule_search_locations[0])
    shutil.copytree(installed, site / "kubernetes_asyncio")
    done = subprocess.run([sys.executable, str(SCRIPT), "--no-strip", str(site)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "removed kubernetes_asyncio/client/api/" in done.stdout
    return site


def python(site: Path, code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={"PYTHONPATH": f"{site}:{ROOT}", "PATH": "/usr/bin:/bin"}, check=False)


def test_the_builder_slims_the_venv_after_pip_check_and_before_the_final_copy():
    builder, final = dockerfile_stages()[0], dockerfile_stages()[-1]
    assert "scripts/slim_venv.py scripts/" in args_of(builder, "COPY")
    commands = [c.strip() for run in args_of(builder, "RUN") for c in run.split("&&")]
    [check] = [n for n, c in enumerate(commands) if c.endswith("pip check")]
    [slim] = [n for n, c in enumerate(commands) if "scripts/slim_venv.py" in c]
    assert check < slim, "slimmed before `pip check` saw the venv whole"
    assert commands[slim].endswith("scripts/slim_venv.py /opt/venv/lib/python3.11/site-packages")
    assert "--no-strip" not in commands[slim] and re.search(r"\bbinutils=", " ".join(commands))  # strip is there
    assert args_of(final, "COPY") == ["--from=builder /opt/venv /opt/venv"]
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert "scripts" in ignored and "!scripts/slim_venv.py" in ignored  # in the context, alone of scripts/


def test_the_slimming_removes_the_generated_classes(slimmed):
    client = slimmed / "kubernetes_asyncio" / "client"
    assert not (client / "api").exists()
    assert [p.name for p in (client / "models").iterdir()] == ["__init__.py"]
    assert (client / "api_client.py").is_file() and (slimmed / "kubernetes_asyncio" / "config").is_dir()
    assert not list(slimmed.rglob("*_test.py"))
    size = sum(p.stat().st_size for p in slimmed.rglob("*") if p.is_file())
    assert size < 3_000_000, f"{size} bytes of kubernetes_asyncio left"


def test_the_run_path_imports_with_the_slimmed_package(slimmed):
    done = python(slimmed, RUN_PATH + (
        "import kubernetes_asyncio.client.api_client as a, sys\n"
        f"assert a.__file__.startswith({str(slimmed)!r}), a.__file__\n"
        "try:\n"
        "    from kubernetes_asyncio.client.models import V1Pod\n"
        "except ImportError as err:\n"
        "    assert 'slim_venv.py' in str(err), err\n"
        "else:\n"
        "    raise AssertionError('the generated models are still there')\n"
        "print('ok')\n"))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    helped = python(slimmed, "import sys\nfrom controller.__main__ import main\nsys.argv[0] = 'genericjob-controller'\n"
                             "main()\n", "run", "--help")
    assert helped.returncode == 0 and "--metrics-address" in helped.stdout, helped.stderr


@pytest.mark.runner("scripted")
async def test_a_controller_runs_a_job_with_the_slimmed_package(slimmed, tmp_path, cluster, api_client):
    """The controller (a process, with the slimmed package) against a localcluster served by the test's process."""
    cluster.apply_crds(CRDS)
    served = Served(cluster, cluster.write_kubeconfig(tmp_path / "kubeconfig"))
    jobs = Jobs(api_client)
    async with ControllerProcess(served, env={"PYTHONPATH": f"{slimmed}:{ROOT}"}) as controller:
        await jobs.submit(genericjob("slim", {"worker": 2}, script=QUICK))
        await jobs.wait_phase("slim", "Succeeded", timeout=60)  # generous: a loaded machine
    assert not [line for line in controller.raw if "Traceback" in line], controller.raw[-20:]
