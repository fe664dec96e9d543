"""`genericjob-controller local`: on the examples and on jobs made here, to their end in the test's process (the
console script's entry point: local_inprocess.py), and as a process where a signal or the exit status is the point.

Each test waits for the program's events (its end, a line of its output), never by sleeping; `--port 0` lets them
run side by side with anything else on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config

from controller.devtools import local
from controller.devtools.progress import replica_states
from controller.devtools.submit import ManifestError, load_manifests

from . import local_inprocess as inprocess
from .local_inprocess import Done, Output, hold_deadline_until, printed

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

LOCAL = [sys.executable, "-m", "controller", "local"]  # as `genericjob-controller local`

LINE = re.compile(r"^\d\d:\d\d:\d\d  (?P<job>\S+)\s+(?P<phase>Pending|Running|Succeeded|Failed)\s+(?P<replicas>.+)$")


def run_local(tmp_path: Path, *flags: str, timeout: float = 120.0, cwd: Path | None = None
              ) -> subprocess.CompletedProcess:
    """`local --port 0 FLAGS...` to the end as a process, in tmp_path unless `cwd` is given; pod processes get
    tmp_path as TMPDIR (the restart example's marker). `timeout` only keeps a hung run from hanging the test: the
    run's end is the event waited for (the real frameworks' tests of tests/e2e/ run this way)."""
    return subprocess.run([*LOCAL, "--port", "0", "--kubeconfig-out", str(tmp_path / "kubeconfig"), *flags],
                          cwd=cwd or tmp_path, env={**os.environ, "TMPDIR": str(tmp_path)}, capture_output=True,
                          text=True, timeout=timeout)


def run_in_process(tmp_path: Path, *flags: str, cwd: Path | None = None, stdout: Output | None = None) -> Done:
    """run_local's run in the test's process (local_inprocess.run_in_process): the same output and exit code,
    without a Python start-up per run."""
    return inprocess.run_in_process(cwd or tmp_path, "--port", "0", "--kubeconfig-out", str(tmp_path / "kubeconfig"),
                                    *flags, env={"TMPDIR": str(tmp_path)}, stdout=stdout)


@contextlib.asynccontextmanager
async def started(tmp_path: Path, *flags: str, until: str, timeout: float = 90.0):
    """`local --port 0 FLAGS...` in the background as a process, yielded once a line of its output matches `until`
    (read as it comes; `timeout` only keeps a run that never prints it from hanging the test)."""
    proc = await asyncio.create_subprocess_exec(
        *LOCAL, "--port", "0", "--kubeconfig-out", str(tmp_path / "kubeconfig"), *flags, cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        seen: list[str] = []
        async with asyncio.timeout(timeout):
            while not (seen and re.search(until, seen[-1])):
                line = await proc.stdout.readline()
                assert line, f"exited before printing {until!r}: {seen}"
                seen.append(line.decode())
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def progress(stdout: str, job: str) -> list[tuple[str, str]]:
    """(phase, replica states) of every progress line printed for `job`, in order."""
    found = [LINE.match(line) for line in stdout.splitlines()]
    return [(m["phase"], m["replicas"]) for m in found if m and m["job"] == job]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def job_yaml(name: str, command: str, replicas: int = 1, **extra: str) -> str:
    lines = [f"  {key}: {value}" for key, value in extra.items()]
    return "\n".join([
        "apiVersion: batch.tensorstack.dev/v1beta1", "kind: GenericJob", f"metadata: {{name: {name}}}", "spec:",
        *lines,
        "  replicaSpecs:",
        f"  - type: worker\n    replicas: {replicas}",
        f"    template: {{spec: {{containers: [{{name: main, image: ignored, command: [sh, -c, '{command}']}}]}}}}",
    ]) + "\n"


# --- --apply, to the end ---------------------------------------------------------------------------


@pytest.mark.slow  # local's pods
def test_generic_example_succeeds_and_prints_its_phases(tmp_path):
    done = run_in_process(tmp_path, "--apply", str(EXAMPLES / "generic-example.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert f"export KUBECONFIG={tmp_path / 'kubeconfig'}" in out
    assert "created genericjob.batch.tensorstack.dev/generic-example" in out
    lines = progress(out, "generic-example")
    phases = [phase for phase, _ in lines]
    assert phases[-1] == "Succeeded"
    assert "Running" in phases
    assert phases.index("Running") < phases.index("Succeeded")
    # Every line names the four workers; the last has worker 0 (the success rule) Succeeded.
    for _, replicas in lines:
        assert [r.split()[0] for r in replicas.split(", ")] == [f"worker-{rank}" for rank in range(4)]
    assert lines[-1][1].startswith("worker-0 Succeeded")
    assert len(lines) == len(set(lines)), "a line is printed only when something changed"
    summary = out[out.index("finished in"):]
    assert "generic-example  Succeeded" in summary
    assert 'The job is succeeded with rule: {"worker": [0]}' in summary
    assert summary.rstrip().endswith("1 job succeeded")


@pytest.mark.slow  # local's pods
def test_restart_example_succeeds_after_one_restart_on_every_run(tmp_path):
    """The marker of the first attempt is the job's (its uid, by the downward API), not the machine's: a second
    run, with the same $TMPDIR, restarts once again, and nothing is left behind. (Issue 24: before, the marker
    stayed in $TMPDIR and a second run had no restart; this test ran once and checked the marker stayed.)"""
    for _ in range(2):
        done = run_in_process(tmp_path, "--apply", str(EXAMPLES / "restart-on-failure.yaml"))
        assert done.returncode == 0, done.stdout + done.stderr
        lines = progress(done.stdout, "restart-on-failure")
        assert lines[-1] == ("Succeeded", "worker-0 Succeeded (1 restart), worker-1 Succeeded")
        worker0 = [re.match(r"worker-0 \w+(?: \([^)]*\))?", replicas)[0] for _, replicas in lines]
        # The restart is counted as the failed pod is retired; why it failed is said once its pod is seen.
        failed = next(w for w in worker0 if re.fullmatch(r"worker-0 Failed \((exit 1, )?1 restart\)", w))
        assert worker0.index(failed) < worker0.index("worker-0 Running (1 restart)")
        assert re.search(r"restart-on-failure  Succeeded  \S+s, 1 restart  The job is succeeded", done.stdout)
        assert not list(tmp_path.glob("restart-on-failure-*.once"))


@pytest.mark.slow  # local's pods
def test_service_example_gives_each_replica_its_tf_config_and_they_reach_each_other(tmp_path):
    """The hosts substituted from $(service...) resolve to the replicas' own addresses: each worker listens on
    the port and reaches the other (both must, by the success rule)."""
    done = run_in_process(tmp_path, "--logs", "--apply", str(EXAMPLES / "service-tf-config.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    hosts = '"cluster":{"worker":["tf-config-example-worker-0:2222","tf-config-example-worker-1:2222"]}'
    for rank in range(2):
        assert (f'worker-{rank} | TF_CONFIG={{"task":{{"type":"worker","index":{rank}}},{hosts}}}'
                in done.stdout), done.stdout
        assert f"worker-{rank} | worker {rank} reached 1 and heard from ['worker {1 - rank}']" in done.stdout


@pytest.mark.slow  # local's pods
@pytest.mark.parametrize(("example", "name", "replicas"), [
    ("tensorflow-parameter-server.yaml", "ps-example", {"chief": 1, "worker": 4, "ps": 2}),
    ("tensorflow-multi-worker.yaml", "multi-worker-example", {"worker": 4}),
])
def test_the_tensorflow_examples_check_their_tf_config_and_succeed(tmp_path, example, name, replicas):
    """The T9k manual's two shapes, with a script in place of TensorFlow that checks the cluster its
    TF_CONFIG describes (and fails if it is wrong): every replica prints its task, listens on the same port and
    reaches every other task at its TF_CONFIG address; the master does so before it succeeds."""
    done = run_in_process(tmp_path, "--logs", "--apply", str(EXAMPLES / example))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"created tensorflowtrainingjob.batch.tensorstack.dev/{name}" in done.stdout
    for replica_type, count in replicas.items():
        for index in range(count):
            assert f"{replica_type}-{index} | {replica_type} {index} of {replicas}" in done.stdout, done.stdout
    master, tasks = ("chief-0" if "chief" in replicas else "worker-0"), sum(replicas.values())
    assert f"{master} | {master.replace('-', ' ')} reached and heard from {tasks - 1} tasks" in done.stdout
    assert f"{master} | {master.replace('-', ' ')} trained" in done.stdout
    assert f"The master replica {name}-{master} has succeeded." in done.stdout


@pytest.mark.slow  # local's pods
def test_a_failed_job_exits_1_and_other_kinds_are_created_too(tmp_path):
    manifest = write(tmp_path, "failing.yaml", "\n---\n".join([
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {lr: '0.1'}\n",
        job_yaml("doomed", "echo failing; exit 3"),
        job_yaml("fine", "exit 0"),
    ]))
    done = run_in_process(tmp_path, "--apply", str(manifest))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "created configmap/settings" in done.stdout
    assert progress(done.stdout, "doomed")[-1] == ("Failed", "worker-0 Failed (exit 3)")
    assert progress(done.stdout, "fine")[-1] == ("Succeeded", "worker-0 Succeeded")
    summary = done.stdout[done.stdout.index("finished in"):]
    # Without --logs, the failed replica's last lines of output follow it: they say why it failed.
    failed = r"doomed  Failed     \S+s  The job is failed.*\n    worker-0 Failed \(exit 3\)\n      \| failing\n"
    assert re.search(failed, summary), summary
    assert summary.rstrip().endswith("1 Succeeded, 1 Failed of 2 jobs")


@pytest.mark.slow  # local's pods
def test_timeout_exits_2_and_stops_the_pods(tmp_path, monkeypatch):
    """What a timeout does to a running job. The deadline is held until the job is seen Running and its process has
    written its pid (hold_deadline_until): on a loaded machine a pod can take longer than the 1.5 s to start."""
    pid_file = tmp_path / "pid"
    # `$$$$`: the kubelet turns `$$` into `$`, so the shell sees `$$`, its pid (the container's process).
    manifest = write(tmp_path, "slow.yaml", job_yaml("slow", f"echo $$$$ > {pid_file}; exec sleep 60"))
    out = Output()
    hold_deadline_until(monkeypatch, lambda: printed(out, r"  slow\s+Running\s+worker-0 Running$")
                        and pid_file.exists() and pid_file.read_text().endswith("\n"))
    done = run_in_process(tmp_path, "--timeout", "1.5", "--apply", str(manifest), stdout=out)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "timed out after 1.5s:" in done.stdout
    assert re.search(r"  slow  Running ", done.stdout)
    assert progress(done.stdout, "slow")[-1] == ("Running", "worker-0 Running")
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # the cluster killed the pod's process on its way out
        os.kill(pid, 0)


@pytest.mark.slow  # local's pods
def test_a_bad_manifest_exits_1_with_the_reason(tmp_path):
    typo = write(tmp_path, "typo.yaml", job_yaml("typo", "exit 0", successRulez="[]"))
    done = run_in_process(tmp_path, "--apply", str(typo))
    assert done.returncode == 1
    assert f"error: {typo}: genericjob.batch.tensorstack.dev/typo: " in done.stdout
    assert "successRulez" in done.stdout
    assert "no job to follow" in done.stdout
    missing = run_in_process(tmp_path, "--apply", str(tmp_path / "nowhere.yaml"))
    assert missing.returncode == 1
    assert f"error: {tmp_path / 'nowhere.yaml'}: No such file or directory" in missing.stdout


@pytest.mark.slow  # local's pods
def test_a_refused_file_is_reported_and_every_valid_object_still_runs_to_its_end(tmp_path):
    """`--apply bad.yaml good.yaml` (issue 42): as `kubectl apply -f bad.yaml -f good.yaml`, every object the server
    takes is created (the valid document of the refused file too) and followed to its end; each refusal names its
    file and the field, as it comes and again last; the exit code is 1."""
    bad = write(tmp_path, "bad.yaml", "---\n".join([
        job_yaml("refused", "exit 0", failureRules="[{chief: [0]}]"),  # the webhook: no such replica type
        job_yaml("beside", "exit 0"),
    ]))
    broken = write(tmp_path, "broken.yaml", "\n---\n".join([
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: before}\n",
        "metadata: {name: kindless}\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after\n  oops: [\n",
    ]))
    good = write(tmp_path, "good.yaml", job_yaml("good", "exit 0"))
    done = run_in_process(tmp_path, "--apply", str(bad), str(broken), str(good))
    assert done.returncode == 1, done.stdout + done.stderr
    refused = (f'{bad}: genericjob.batch.tensorstack.dev/refused: admission webhook '
               '"genericjobs.batch.tensorstack.dev" denied the request: spec.failureRules[0]: replica type "chief" '
               "is not in spec.replicaSpecs")
    kindless = f"{broken} (document 2): not a Kubernetes object (apiVersion and kind are required)"
    assert f"\nerror: {refused}\n" in done.stdout and f"\nerror: {kindless}\n" in done.stdout
    not_yaml = f"{broken}: not valid YAML: line 12, column 7: expected ',' or '}}', but got ':'"
    assert f"\nerror: {not_yaml}\n" in done.stdout
    assert "created configmap/before" in done.stdout
    for name in ("beside", "good"):
        assert progress(done.stdout, name)[-1] == ("Succeeded", "worker-0 Succeeded"), done.stdout
    assert not progress(done.stdout, "refused")
    summary = done.stdout[done.stdout.index("finished in"):]
    assert summary.endswith(f"\nall 2 jobs succeeded\n3 objects not applied:\n  {refused}\n  {kindless}\n"
                            f"  {not_yaml}\n"), summary


@pytest.mark.slow  # local's pods
async def test_interrupting_an_apply_run_exits_130_and_stops_the_pods(tmp_path):
    pid_file = tmp_path / "pid"
    manifest = write(tmp_path, "slow.yaml", job_yaml("slow", f"echo $$$$ > {pid_file}; exec sleep 60"))
    async with started(tmp_path, "--apply", str(manifest), until=r"slow\s+Running") as proc:
        proc.send_signal(signal.SIGINT)
        async with asyncio.timeout(60):
            out, _ = await proc.communicate()
    assert proc.returncode == 130
    assert "interrupted after" in out.decode()
    # Ctrl-C says once, last, that what was applied is gone with the process.
    assert out.decode().splitlines()[-1] == ("the local cluster's state is discarded: 1 job, 1 pod and every other "
                                             "object (it is kept in memory only; the next `local` starts empty)")
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


# --- serving until interrupted --------------------------------------------------------------------


@pytest.mark.slow  # local's pods
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_serves_a_working_kubeconfig_until_interrupted(tmp_path, sig):
    kubeconfig = tmp_path / "kubeconfig"
    async with started(tmp_path, until=f"^{local.READY}") as proc:
        configuration = client.Configuration()
        await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
        async with client.ApiClient(configuration) as api:
            namespaces = await client.CoreV1Api(api).list_namespace()
            assert "default" in {ns.metadata.name for ns in namespaces.items}
            crds = await client.ApiextensionsV1Api(api).list_custom_resource_definition()
            assert {c.metadata.name for c in crds.items} == {"genericjobs.batch.tensorstack.dev",
                                                             "podgroups.scheduler.tensorstack.dev",
                                                             "tensorflowtrainingjobs.batch.tensorstack.dev",
                                                             "pytorchtrainingjobs.batch.tensorstack.dev",
                                                             "mpijobs.batch.tensorstack.dev",
                                                             "tensorboards.tensorstack.dev"}  # local only
        proc.send_signal(sig)
        async with asyncio.timeout(60):
            out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        assert out.decode().strip().endswith("stopping\nthe local cluster's state is discarded: 0 jobs, 0 pods and "
                                              "every other object (it is kept in memory only; the next `local` "
                                              "starts empty)")


# --- pieces, in-process ----------------------------------------------------------------------------


def test_flags_and_defaults():
    parser = argparse.ArgumentParser()
    local.add_arguments(parser)
    args = parser.parse_args([])
    # No port, no kubeconfig, no CRDs given: 6443 or a free port, .cache/kubeconfig-PORT, manifests/crds.
    assert (args.port, args.kubeconfig_out, args.crds, args.apply, args.timeout, args.log_level) == (
        None, None, None, None, None, "warning")
    args = parser.parse_args(["--apply", "a.yaml", "b.yaml", "--timeout", "5", "--port", "0", "--log-level", "INFO"])
    assert (args.apply, args.timeout, args.port, args.log_level) == (["a.yaml", "b.yaml"], 5.0, 0, "info")
    with pytest.raises(SystemExit):
        parser.parse_args(["--timeout", "0"])


def test_manifests_load_lists_and_directories_and_reject_non_objects(tmp_path):
    write(tmp_path, "a.yaml", "apiVersion: v1\nkind: List\n"
                              "items:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n")
    write(tmp_path, "b.yml", "---\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n")
    write(tmp_path, "notes.txt", "not a manifest")
    assert [m.obj["metadata"]["name"] for m in load_manifests([str(tmp_path)]) if m.obj] == ["x", "team"]
    bad = write(tmp_path, "bad.yaml", "kind: ConfigMap\n---\napiVersion: v1\nkind: Secret\nmetadata: {}\n")
    assert [(m.source, m.obj, m.problem) for m in load_manifests([str(bad)])] == [
        (str(bad), None, f"{bad} (document 1): not a Kubernetes object (apiVersion and kind are required)"),
        (str(bad), None, f"{bad} (document 2): Secret has no metadata.name")]
    with pytest.raises(ManifestError, match="No such file or directory"):  # nothing is applied
        load_manifests([str(tmp_path / "a.yaml"), str(tmp_path / "nowhere.yaml")])


def test_many_replicas_are_counted_by_phase():
    records = [{"name": f"big-worker-{i}", "phase": "Running" if i < 6 else "Pending", "restartCount": int(i == 0)}
               for i in range(10)]
    job = {"metadata": {"name": "big"},
           "status": {"tasks": [{"type": "worker", "replicas": records},
                                {"type": "ps", "replicas": [{"name": "big-ps-0", "phase": "Succeeded"}]}]}}
    assert replica_states(job) == "worker: 4 Pending, 6 Running (1 restart); ps: 1 Succeeded"


@pytest.mark.slow  # local's pods
def test_the_pytorch_ddp_example_checks_its_environment_and_rank_and_succeeds(tmp_path):
    """A master and two workers without torchrun: each checks MASTER_ADDR, MASTER_PORT, WORLD_SIZE and its RANK
    (master first) against the spec, and fails if one is wrong; the master's success is the job's."""
    done = run_in_process(tmp_path, "--logs", "--apply", str(EXAMPLES / "pytorch-ddp.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "created pytorchtrainingjob.batch.tensorstack.dev/ddp-example" in done.stdout
    for replica, rank in (("master-0", 0), ("worker-0", 1), ("worker-1", 2)):
        assert f"{replica} | {replica} is rank {rank} of 3, master ddp-example-master-0:23456" in done.stdout, \
            done.stdout
    assert "master-0 | rank 0 trained" in done.stdout
    assert "The master replica ddp-example-master-0 has succeeded." in done.stdout


@pytest.mark.slow  # local's pods
def test_the_torchrun_elastic_example_checks_its_pet_variables_and_command_line(tmp_path):
    """torchrun mode, elastic: the stand-in torchrun on the example's PATH checks its flags against PET_*, and
    the script checks both against the spec (PET_NNODES=1:3, no PET_NODE_RANK, the rendezvous at worker-0)."""
    # From the repository's root, as the example says: its PATH entry and script are relative to it.
    done = run_in_process(tmp_path, "--logs", "--apply", str(EXAMPLES / "pytorch-torchrun-elastic.yaml"),
                     cwd=EXAMPLES.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    for index in range(2):
        assert re.search(rf"worker-{index} \| worker-{index} torchrun --nnodes=1:3 --nproc_per_node=1 "
                         r"--rdzv_backend=c10d --rdzv_endpoint=elastic-example-worker-0:23456 --rdzv_id=[-0-9a-f]{36} "
                         "local rank 0", done.stdout), done.stdout
    assert "The master replica elastic-example-worker-0 has succeeded." in done.stdout


@pytest.mark.slow  # local's pods
def test_the_mpijob_example_reads_its_hostfile_and_succeeds_by_its_launcher(tmp_path):
    """A launcher and two workers without MPI: the launcher, made once both workers are Ready, checks the hostfile
    the controller keeps in its ConfigMap (one fully qualified line per worker, slots=2) and its OpenMPI settings;
    its success is the job's, and the workers (standing in for sshd) are cleaned up."""
    done = run_in_process(tmp_path, "--logs", "--apply", str(EXAMPLES / "mpi-hostfile.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "created mpijob.batch.tensorstack.dev/mpi-example" in done.stdout
    assert "worker-1 | worker ready" in done.stdout, done.stdout
    assert ("launcher-0 | launcher: hostfile mpi-example-worker-0.mpi-example.default.svc, "
            "mpi-example-worker-1.mpi-example.default.svc") in done.stdout, done.stdout
    assert "The launcher mpi-example-launcher-0 has succeeded." in done.stdout
