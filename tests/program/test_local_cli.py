"""`genericjob-controller local` as a newcomer meets it: its flags, its port and kubeconfig, its output in a pipe, its
logs, and serving jobs applied with kubectl. Through the console script as a process where the process is the
point (the exit status a shell sees, two instances side by side, a closed pipe); else its entry point in the test's
process (local_inprocess.py)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import re
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from controller.devtools import local
from controller.runtime import logs
from localcluster.testing import Kubectl

from .local_inprocess import LocalRun, run_in_process
from .subprocesses import CLI, ROOT, LocalProcess, until

EXAMPLES = ROOT / "examples"
DOCUMENTATION_ADDRESS = "192.0.2.1"  # TEST-NET-1: never an address of this machine


def run_local(cwd: Path, *flags: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """The console script to its end (`timeout` only keeps a hung run from hanging the test)."""
    return subprocess.run([str(CLI), "local", *flags], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)


@contextlib.contextmanager
def listening(port: int = 0, host: str = "127.0.0.1"):
    """A socket listening on host:port (another program holding it); yields the port, or None when another
    program already holds it (it is taken either way)."""
    holder = socket.socket()
    # As a server would: connections in TIME_WAIT on the port (a `local` just stopped) must not stop the bind.
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        holder.bind((host, port))
    except OSError as exc:
        holder.close()
        if exc.errno != errno.EADDRINUSE:
            raise
        yield None
        return
    with holder:
        holder.listen()
        yield holder.getsockname()[1]


# --- every bad flag: one line, exit 2 -------------------------------------------------------------------


@pytest.mark.parametrize(("flags", "message"), [
    (["--port", "70000"], "argument --port: invalid port (0 to 65535) value: '70000'"),
    (["--port", "http"], "argument --port: invalid port (0 to 65535) value: 'http'"),
    (["--workers", "0"], "argument --workers: invalid positive integer value: '0'"),
    (["--crds", "/nonexistent"], "argument --crds: /nonexistent is not a directory"),
    (["--timeout", "5"], "--timeout needs --apply"),
    (["--webhook-port", "9443", "--no-webhook"], "--webhook-port needs the webhook (--no-webhook turns it off)"),
    (["--webhook-port", "-1"], "argument --webhook-port: invalid port (0 to 65535) value: '-1'"),
    (["--logs=maybe"], "argument --logs: invalid boolean (true or false) value: 'maybe'"),
    (["--log-level-deps", "loud"], "argument --log-level-deps: invalid choice: 'loud'"),
    pytest.param(["--port", "0", "--host", DOCUMENTATION_ADDRESS],
                 f"cannot serve on {DOCUMENTATION_ADDRESS}: Cannot assign requested address (--host must be a name or "
                 "address of this machine)", marks=pytest.mark.slow),  # the cluster starts (its pods' shim built)
    pytest.param(["--port", "0", "--host", "no-such-host.invalid"], "cannot serve on no-such-host.invalid: ",
                 marks=pytest.mark.slow),
])
def test_a_bad_flag_is_one_error_line_and_exit_2(tmp_path, flags, message):
    done = run_in_process(tmp_path, *flags)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("genericjob-controller local: error: ") and message in last, done.stderr
    assert "--port 0" not in last or "in use" in last  # a host that is not ours is no port problem
    assert not (tmp_path / ".cache").exists() or not list((tmp_path / ".cache").iterdir())


@pytest.mark.slow  # local's pods
def test_a_crds_directory_without_the_job_kinds_crds_is_a_bad_flag(tmp_path):
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "notes.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    done = run_in_process(tmp_path, "--port", "0", "--crds", str(tmp_path / "crds"))
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"genericjob-controller local: error: --crds {tmp_path / 'crds'}: no "
                           "CustomResourceDefinition genericjobs.batch.tensorstack.dev, "), last


@pytest.mark.slow  # the console script
def test_an_explicit_port_that_is_taken_is_an_error_not_a_surprise(tmp_path):
    """Through the console script, as a process: the usage error's exit status 2 as a shell sees it (the other
    usage errors run the same entry point in this process)."""
    with listening() as port:
        done = run_local(tmp_path, "--port", str(port))
    assert done.returncode == 2
    assert done.stderr.strip() == (f"genericjob-controller local: error: port {port} on 127.0.0.1 is in use: "
                                   "choose another --port (0 picks a free one)")


@pytest.mark.slow  # local's pods
def test_an_explicit_webhook_port_that_is_taken_is_an_error_too(tmp_path):
    with listening() as port:
        done = run_in_process(tmp_path, "--port", "0", "--webhook-port", str(port))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == (f"genericjob-controller local: error: port {port} on 127.0.0.1 is in use: "
                                   "choose another --webhook-port (0 picks a free one)")
    assert not list((tmp_path / ".cache").glob("kubeconfig-*"))  # written before the webhook, removed as it stops


# --- the default port, one kubeconfig per instance ------------------------------------------------------


@pytest.mark.slow  # local's pods
async def test_the_default_port_taken_serves_on_a_free_one_with_a_kubeconfig_per_instance(tmp_path):
    """6443 held by another program (a k3s, Docker Desktop): `local` says so and serves elsewhere; a second
    `local` beside it gets its own port and kubeconfig, and the first one's kubectl keeps working. (The first a
    process, the second in this one: two processes' start-ups would be most of the test's time.)

    The one test of a fixed port (every other `local` of the tests is given --port 0): 6443 is held here, or, held
    already by another program (another test's `local` on it), taken as it is; should that program let it go as the
    two start (one of them serving on 6443), they are stopped and started again."""
    for _attempt in range(3):
        with listening(local.DEFAULT_PORT, "0.0.0.0") as ours:
            first, second = LocalProcess(tmp_path), LocalRun(tmp_path)
            async with contextlib.AsyncExitStack() as stack:
                async with asyncio.TaskGroup() as starting:  # side by side, as two terminals would start them
                    for instance in (first, second):
                        stack.push_async_exit(instance.__aexit__)
                        starting.create_task(instance.__aenter__())
                if ours is None and local.DEFAULT_PORT in (first.port, second.port):
                    continue  # not taken all along: not the case under test
                await _served_side_by_side(tmp_path, first, second)
                return
    pytest.fail(f"port {local.DEFAULT_PORT} was let go by another program as the instances started, 3 times")


async def _served_side_by_side(tmp_path: Path, first: LocalProcess, second: LocalRun) -> None:
    for instance in (first, second):
        assert f"port {local.DEFAULT_PORT} is in use (another cluster?): serving on a free port instead " \
               "(--port chooses one)" in instance.lines
        assert instance.port != local.DEFAULT_PORT
        assert instance.kubeconfig == tmp_path / ".cache" / f"kubeconfig-{instance.port}"
    assert first.port != second.port

    async def kubectl_works(instance: LocalProcess | LocalRun) -> None:
        kubectl = Kubectl(instance.kubeconfig, tmp_path / str(instance.port))
        shown = await kubectl.ok("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
        assert shown.out == f"https://127.0.0.1:{instance.port}"
        await kubectl.ok("get", "namespaces")

    await asyncio.gather(kubectl_works(first), kubectl_works(second))
    assert await second.stop() == 0
    assert not second.kubeconfig.exists()  # it pointed at a server that is gone
    await Kubectl(first.kubeconfig, tmp_path / "again").ok("get", "genericjobs")
    assert await first.stop() == 0
    assert not first.kubeconfig.exists()


@pytest.mark.slow  # local's pods
async def test_an_explicit_kubeconfig_out_is_written_there_and_kept(tmp_path):
    kubeconfig = tmp_path / "mine" / "config"
    async with LocalRun(tmp_path, "--port", "0", "--kubeconfig-out", str(kubeconfig)) as running:
        assert running.kubeconfig == kubeconfig
        await Kubectl(kubeconfig, tmp_path).ok("get", "namespaces")
        assert await running.stop() == 0
    assert kubeconfig.exists()


# --- output that nobody reads any more ------------------------------------------------------------------


@pytest.mark.slow  # the console script
async def test_a_closed_pipe_ends_the_run_quietly_and_promptly(tmp_path):
    """`local --apply ... | head -5`: once head has gone, no BrokenPipeError traceback, and no run that goes on
    (here nothing more would be printed for a minute: the closed pipe is noticed without a write)."""
    pid_file = tmp_path / "pid"
    job = tmp_path / "slow.yaml"
    job.write_text("apiVersion: batch.tensorstack.dev/v1beta1\nkind: GenericJob\nmetadata: {name: slow}\nspec:\n"
                   "  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: c, image: i, command: "
                   f"[sh, -c, 'echo $$$$ > {pid_file}; exec sleep 60']}}]}}}}\n")
    read, write = os.pipe()
    process = await asyncio.create_subprocess_exec(
        str(CLI), "local", "--port", "0", "--apply", str(job), cwd=tmp_path, stdout=write,
        stderr=asyncio.subprocess.PIPE)
    os.close(write)
    with os.fdopen(read) as reader:  # head -5, but only once the job runs: more lines are certain to come
        lines = []
        while not re.search(r"slow\s+Running", lines[-1] if lines else ""):
            lines.append(await asyncio.to_thread(reader.readline))
            assert lines[-1], f"the output ended early: {lines}"
    async with asyncio.timeout(60):  # promptly: nothing but the closed pipe would end it within the minute
        err = (await process.stderr.read()).decode()
        code = await process.wait()
    assert code == local.EXIT_OUTPUT_CLOSED == 141
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    with pytest.raises(ProcessLookupError):  # and the pods were stopped on the way out
        os.kill(int(pid_file.read_text()), 0)


# --- logs: the program's, not its libraries' ------------------------------------------------------------


def logger_names(stderr: str) -> set[str]:
    """The logger of every console log line (`... [debug    ] event   [logger] key=value`)."""
    return {m[1] for m in re.finditer(r"^\S+ \[\w+\s*\] .*? \[([\w.]+)\]", stderr, re.MULTILINE)}


@pytest.mark.slow  # local's pods
def test_debug_logs_are_the_programs_and_other_libraries_only_when_asked(tmp_path):
    example = str(EXAMPLES / "generic-example.yaml")
    ours = run_in_process(tmp_path, "--port", "0", "--log-level", "debug", "--apply", example)
    assert ours.returncode == 0, ours.stderr
    assert "[debug    ] reconciled" in ours.stderr
    names = logger_names(ours.stderr)
    assert names and all(name.split(".")[0] in logs.OWN_LOGGERS for name in names), names
    deps = run_in_process(tmp_path, "--port", "0", "--log-level", "debug", "--log-level-deps", "debug", "--apply",
                          example)
    assert deps.returncode == 0
    assert any(name.startswith("celpy") for name in logger_names(deps.stderr))  # what the default keeps out


# --- serving: every job applied with kubectl followed in the terminal -----------------------------------


@pytest.mark.slow  # local's pods
async def test_serving_follows_every_job_applied_with_kubectl_and_prints_logs(tmp_path):
    async with LocalRun(tmp_path, "--port", "0", "--logs", env={"TMPDIR": str(tmp_path)}) as running:
        kubectl = Kubectl(running.kubeconfig, tmp_path)
        await kubectl.ok("apply", "-f", str(EXAMPLES / "restart-on-failure.yaml"),
                         "-f", str(EXAMPLES / "tensorflow-multi-worker.yaml"))
        await running.line(r"finished: restart-on-failure\s+Succeeded\s+\S+s, 1 restart  The job is succeeded")
        await running.line(r"finished: multi-worker-example\s+Succeeded .* The master replica "
                           r"multi-worker-example-worker-0 has succeeded")
        await running.line(r"restart-on-failure\s+Running\s+worker-0 Running \(1 restart\)")
        await running.line(r"restart-on-failure\s+worker-1 \| worker 1: succeeding")  # --logs
        await running.line(r"multi-worker-example\s+worker-0 \| worker 0 trained")
        # A job deleted and made again under the same name is followed again.
        await kubectl.ok("delete", "genericjob", "restart-on-failure")
        await kubectl.ok("apply", "-f", str(EXAMPLES / "restart-on-failure.yaml"))
        finished = await _finished_lines(running, "restart-on-failure", 2)
        assert "1 restart" in finished[1]  # a new job (a new uid): its own first attempt fails again
        assert await running.stop(signal.SIGTERM) == 0
    assert running.lines[-2] == "stopping"
    assert re.fullmatch(r"the local cluster's state is discarded: 2 jobs, \d+ pods? and every other object .*",
                        running.lines[-1]), running.lines[-1]


async def _finished_lines(running: LocalRun, job: str, count: int) -> list[str]:
    def found() -> list[str] | None:
        lines = [line for line in running.lines if f"finished: {job} " in line]
        return lines if len(lines) >= count else None

    return await until(found, timeout=90, what=f"{count} finished lines of {job}")
