"""The `run` path loads kubernetes_asyncio's ApiClient and config, never its generated API and model classes
(kubeclient/lean_kubernetes_asyncio.py), and whoever asks for those classes still gets them."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from tests.e2e.conftest import QUICK, genericjob

from .subprocesses import ROOT, ControllerProcess, LocalClusterProcess

pytestmark = pytest.mark.slow  # each test runs the program or a fresh interpreter

GENERATED = ("kubernetes_asyncio.client.models.v1_pod", "kubernetes_asyncio.client.api.core_v1_api")


def python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_run_path_imports_no_generated_class():
    out = python("import sys\n"
                 "from controller.cmd import cli\n"
                 "from controller.runtime import manager\n"
                 "from controller.kinds import registry\n"
                 "args = cli.parse_args(['run', '--no-leader-elect'])\n"
                 "cli.manager_config(args)\n"
                 "print(sorted(m for m in sys.modules if m.startswith('kubernetes_asyncio')))\n")
    for module in GENERATED:
        assert module not in out
    assert "kubernetes_asyncio.client.api_client" in out and "kubernetes_asyncio.config.kube_config" in out


def test_the_generated_classes_load_on_first_use_as_a_plain_import_makes_them():
    plain = python("import kubernetes_asyncio, kubernetes_asyncio.client as c, kubernetes_asyncio.client.models as m\n"
                   "print(sorted(dir(kubernetes_asyncio)), sorted(dir(c)), sorted(dir(m)))\n")
    deferred = python(
        "import sys\n"
        "import kubeclient.lean_kubernetes_asyncio as kc\n"
        "assert 'kubernetes_asyncio.client.models.v1_pod' not in sys.modules\n"
        "from kubernetes_asyncio import client\n"
        "from kubernetes_asyncio.client.models import V1Service\n"  # the models package runs its own __init__
        "assert client.V1Pod(metadata=client.V1ObjectMeta(name='a')).metadata.name == 'a'\n"
        "assert client.CoreV1Api and V1Service and client.ApiClient is kc.ApiClient\n"
        "import kubernetes_asyncio, kubernetes_asyncio.client as c, kubernetes_asyncio.client.models as m\n"
        "assert kubernetes_asyncio.watch.Watch and kubernetes_asyncio.__version__\n"
        "try:\n"
        "    client.NoSuchThing\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('a name the package lacks must raise AttributeError')\n"
        "print(sorted(dir(kubernetes_asyncio)), sorted(dir(c)), sorted(dir(m)))\n")
    assert deferred == plain


async def test_a_controller_runs_jobs_without_loading_a_generated_class(tmp_path):
    # -X importtime reports every import on stderr as it happens, lazy ones included.
    async with LocalClusterProcess(tmp_path) as cluster, \
            ControllerProcess(cluster, env={"PYTHONPROFILEIMPORTTIME": "1"}) as controller:
        await cluster.jobs.submit(genericjob("ok", {"worker": 2}, script=QUICK))
        await cluster.jobs.wait_phase("ok", "Succeeded")
        controller.send(signal.SIGTERM)
        assert await controller.exit_code() == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in controller.raw if line.startswith("import time:")}
    assert "kubernetes_asyncio.client.api_client" in imported  # the report is there...
    assert not imported & set(GENERATED)  # ...and the generated classes are not in it
