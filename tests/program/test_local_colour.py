"""`genericjob-controller local` colours its phase words on a terminal, and only there.

Run as a user runs it: a subprocess whose stdout is a pseudo-terminal (pty.openpty) or a pipe, with
the environment a user may set (NO_COLOR, TERM=dumb). Each reads the output to the process's end; the timeout only
keeps a run that never ends from hanging the test.
"""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import time

import pytest

from controller.devtools.colour import RESET, paint_phase, palette, wants_colour

from .test_local import LOCAL, write

GREEN, RED = "\x1b[32m", "\x1b[31m"
JOBS = "---\n".join(
    "apiVersion: batch.tensorstack.dev/v1beta1\nkind: GenericJob\n"
    f"metadata: {{name: {name}}}\nspec:\n  replicaSpecs:\n  - type: worker\n    replicas: 1\n"
    f"    template: {{spec: {{containers: [{{name: main, image: x, command: [sh, -c, 'exit {code}']}}]}}}}\n"
    for name, code in (("good", 0), ("bad", 3)))


def run_on_a_terminal(tmp_path, env: dict[str, str], timeout: float = 120.0) -> tuple[int, str]:
    """`local --apply` with a pty as its stdout: (exit code, everything it wrote there)."""
    manifest = write(tmp_path, "jobs.yaml", JOBS)
    leader, follower = pty.openpty()
    process = subprocess.Popen([*LOCAL, "--port", "0", "--kubeconfig-out", str(tmp_path / "kubeconfig"),
                                "--apply", str(manifest)], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                               stdout=follower, stderr=subprocess.DEVNULL)
    os.close(follower)  # the child holds it now: reading the leader ends (EIO) once the child has exited
    output = b""
    deadline = time.monotonic() + timeout
    try:
        while True:
            readable, _, _ = select.select([leader], [], [], max(0.0, deadline - time.monotonic()))
            if not readable:
                pytest.fail(f"local did not finish on a terminal within {timeout}s:\n{output.decode()}")
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed
                break
            if not chunk:
                break
            output += chunk
        return process.wait(timeout=max(1.0, deadline - time.monotonic())), output.decode()
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait()


def environment(**changes: str | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "TERM")}
    env["TERM"] = "xterm-256color"
    env.update({key: value for key, value in changes.items() if value is not None})
    return env


@pytest.mark.slow  # the console script
def test_on_a_terminal_succeeded_is_green_and_failed_red(tmp_path):
    code, out = run_on_a_terminal(tmp_path, environment())
    assert code == 1, out  # one job failed
    assert f"good  {GREEN}Succeeded{RESET}  " in out, out
    assert f"bad   {RED}Failed{RESET}     " in out, out
    assert f"worker-0 {RED}Failed{RESET} (exit 3)" in out, out


@pytest.mark.slow  # the console script
@pytest.mark.parametrize("changes", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_colour_when_no_color_is_set_or_the_terminal_is_dumb(tmp_path, changes):
    code, out = run_on_a_terminal(tmp_path, environment(**changes))
    assert code == 1, out
    assert "good  Succeeded  " in out and "worker-0 Failed (exit 3)" in out, out
    assert "\x1b[" not in out, out


@pytest.mark.slow  # the console script
def test_no_colour_into_a_pipe(tmp_path):
    manifest = write(tmp_path, "jobs.yaml", JOBS)
    done = subprocess.run([*LOCAL, "--port", "0", "--kubeconfig-out", str(tmp_path / "kubeconfig"), "--apply",
                           str(manifest)], cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "good  Succeeded  " in done.stdout and "\x1b[" not in done.stdout


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_colour_rules():
    assert wants_colour(Tty(), {"TERM": "xterm"})
    assert wants_colour(Tty(), {"TERM": "xterm", "NO_COLOR": ""})  # no-color.org: set *and not empty*
    assert not wants_colour(Tty(), {"TERM": "xterm", "NO_COLOR": "0"})
    assert not wants_colour(Tty(), {"TERM": "dumb"})
    assert not wants_colour(io.StringIO(), {"TERM": "xterm"})
    assert palette(io.StringIO(), {})("Failed") == "Failed"
    assert paint_phase("Running  ") == "\x1b[36mRunning\x1b[0m  "  # padding stays outside, columns stay aligned
    assert paint_phase("Creating") == "Creating"
