"""kubectl against `genericjob-controller local`, as the user guide's debug mode means it: exec into a replica.

`local` runs in the background as a user runs it, the real kubectl using the kubeconfig it writes: one process for
the module's tests that only look at its debug job (its start-up would be most of each one's time), in the test's
process (local_inprocess.py) for the one that needs a job of its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest
import pytest_asyncio

from controller.kinds.registry import KINDS
from tests.slow import starts_processes

from .local_inprocess import LocalRun
from .subprocesses import ROOT, LocalProcess
from .test_local import write

KUBECTL = Path(sys.executable).parent / "kubectl"

DEBUG_JOB = """apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata: {name: debugged}
spec:
  runMode: {debug: {enabled: true}}
  replicaSpecs:
  - type: worker
    replicas: 1
    template:
      spec:
        containers:
        - name: main
          image: ignored
          command: [train]
          workingDir: WORKDIR
          env: [{name: RANK, value: $(rank)}, {name: LEARNING_RATE, value: '0.1'}]
"""


async def kubectl(kubeconfig: Path, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(kubeconfig.parent / "cache"), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ, "KUBERC": "off"})
    out, err = await asyncio.wait_for(proc.communicate(), 60)  # only keeps a hung kubectl from hanging the test
    return proc.returncode, out.decode(), err.decode()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
@starts_processes
async def debugged(tmp_path_factory) -> Path:
    """`local --apply` of the debug job, running (the job never ends: it is debugged), for the tests that only look
    at it; the job's working directory, where its kubeconfig is too."""
    workdir = tmp_path_factory.mktemp("debugged")
    manifest = write(workdir, "debug.yaml", DEBUG_JOB.replace("WORKDIR", str(workdir)))
    async with LocalProcess(workdir, "--port", "0", "--kubeconfig-out", str(workdir / "kubeconfig"), "--apply",
                            str(manifest), ready=r"debugged\s+Running"):
        yield workdir


@pytest.mark.asyncio(loop_scope="module")
async def test_exec_into_a_debug_replica_sees_its_environment(debugged):
    kubeconfig = debugged / "kubeconfig"
    code, out, err = await kubectl(kubeconfig, "exec", "debugged-worker-0", "--", "sh", "-c",
                                   "echo $RANK $LEARNING_RATE; pwd")
    assert (code, out) == (0, f"0 0.1\n{debugged}\n"), err
    code, out, err = await kubectl(kubeconfig, "describe", "pod", "debugged-worker-0")
    assert code == 0, err
    assert "Successfully assigned default/debugged-worker-0 to localnode" in out
    assert "spec.containers{main}: Container started" in out


@pytest.mark.asyncio(loop_scope="module")
async def test_the_controllers_writes_carry_the_programs_name(debugged):
    """Under `local` as under `run`, the controller's User-Agent names the program, so the managedFields of what
    it writes say `genericjob-controller` (never the client library's `OpenAPI-Generator`)."""
    kubeconfig = debugged / "kubeconfig"
    managers = {}
    for what in ("pod/debugged-worker-0", "genericjob/debugged"):
        code, out, err = await kubectl(kubeconfig, "get", what, "-o", "json", "--show-managed-fields")
        assert code == 0, err
        managers[what] = {(e["manager"], e.get("subresource", "")) for e in
                          json.loads(out)["metadata"]["managedFields"]}
    assert managers["pod/debugged-worker-0"] == {("genericjob-controller", ""), ("kubelet", "status")}
    assert managers["genericjob/debugged"] == {("genericjob-controller", ""), ("genericjob-controller", "status")}


# The one command docs/local.md gives for all logs of one job, as written there (JOB is the job's name, LABEL its
# kind's name label), and each kind's label, which `make generate` lists there (scripts/sync_kind_lists.py).
LOGS_COMMAND = re.compile(r"`kubectl logs -l LABEL=JOB (?P<flags>[^`]+)`")
NAME_LABEL = re.compile(r"`(?P<label>[\w./-]+/name)` \((?P<kind>\w+)\)")
TWO_CONTAINERS = """apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata: {name: chatty}
spec:
  replicaSpecs:
  - type: worker
    replicas: 2
    template:
      spec:
        containers:
        - {name: main, image: x, command: [sh, -c, 'for i in $(seq 12); do echo main $i; done; exec sleep 60']}
        - {name: side, image: x, command: [sh, -c, 'for i in $(seq 12); do echo side $i; done; exec sleep 60']}
"""


def documented_logs_command() -> tuple[str, dict[str, str]]:
    """The flags after `-l LABEL=JOB` of the command docs/local.md gives, and kind -> LABEL as it lists them."""
    text = (ROOT / "docs" / "local.md").read_text()
    [flags] = LOGS_COMMAND.findall(text)
    return flags, {m["kind"]: m["label"] for m in NAME_LABEL.finditer(text)}


def test_the_documented_logs_command_names_each_kinds_label():
    assert documented_logs_command()[1] == {name: kind.api.name_label for name, kind in KINDS.items()}


@pytest.mark.slow  # local's pods
async def test_the_documented_logs_command_shows_every_line_of_every_container_of_the_job(tmp_path):
    flags, _ = documented_logs_command()
    manifest = write(tmp_path, "chatty.yaml", TWO_CONTAINERS)
    async with LocalRun(tmp_path, "--port", "0", "--logs", "--apply", str(manifest)) as running:
        for replica in ("worker-0", "worker-1"):  # every line written before kubectl reads them
            for container in ("main", "side"):
                await running.line(rf"chatty\s+{replica}/{container} \| {container} 12$")
        code, out, err = await kubectl(running.kubeconfig, "logs", "-l",
                                       f"{KINDS['GenericJob'].api.name_label}=chatty", *shlex.split(flags))
    assert code == 0, err
    expected = {f"[pod/chatty-{replica}/{container}] {container} {i}" for replica in ("worker-0", "worker-1")
                for container in ("main", "side") for i in range(1, 13)}
    assert set(out.splitlines()) == expected, out
