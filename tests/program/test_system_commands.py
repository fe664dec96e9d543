"""What a local run needs from the machine, on a machine without openssl (simulated: a PATH that lacks it).

- `scripts/install_system_packages.py --check` (`make local` runs it first) names openssl, with the command that
  installs it, and fails: a local run cannot start without it; the pod network's two, and what real MPI jobs need
  (openmpi-bin, python3-mpi4py), only get a line;
- without --check (`make test` runs it) it installs openssl with apt-get, and fails naming it when it cannot;
- `genericjob-controller local` and `localcluster serve` end with one line that names the command and how to install
  it, exit 1, no traceback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .subprocesses import CLI, ROOT

pytestmark = pytest.mark.slow  # each test runs the programs, make or the installer

SCRIPT = ROOT / "scripts" / "install_system_packages.py"
APT_GET = """#!/bin/sh
echo "$@" >> "{log}"
[ "$1" = install ] || exit 0
for package; do
    [ "$package" = openssl ] && printf '#!/bin/sh\\nexit 0\\n' > "{bin}/openssl" && {chmod} 755 "{bin}/openssl"
done
exit {code}
"""


def executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def machine(tmp_path) -> tuple[dict[str, str], Path]:
    """An environment whose PATH has the C compiler, the envtest tier's etcd and xz, sudo -n and a stand-in apt-get
    that "installs" openssl (and logs its arguments), but no openssl: (the environment, apt-get's log)."""
    directory, log = tmp_path / "bin", tmp_path / "apt-get.log"
    directory.mkdir()
    for name in ("cc", "gcc", "true", "etcd", "xz", "mpirun"):
        if found := shutil.which(name):
            (directory / name).symlink_to(found)
    executable(directory / "apt-get", APT_GET.format(log=log, bin=directory, code=0, chmod=shutil.which("chmod")))
    executable(directory / "sudo", '#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n')
    env = {k: v for k, v in os.environ.items() if k != "CC"}
    return {**env, "PATH": str(directory)}, log


def run(argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=cwd, check=False)


def test_the_check_names_openssl_and_fails(machine):
    env, log = machine
    done = run([sys.executable, str(SCRIPT), "--check"], env)
    assert done.returncode == 1, done
    [line] = done.stderr.splitlines()
    assert line.startswith("a local run needs openssl, which is not installed") and \
        line.endswith(": sudo apt-get install openssl"), line
    assert "openssl" not in done.stdout  # the pod network's line, if any, is another
    assert not log.exists()  # --check never installs


def test_the_check_names_what_real_mpi_jobs_lack(machine):
    env, _ = machine
    (Path(env["PATH"]) / "mpirun").unlink()
    done = run([sys.executable, str(SCRIPT), "--check"], env)
    line = next(line for line in done.stdout.splitlines() if "MPI" in line)
    assert line.startswith("real MPI jobs (mpirun and mpi4py: examples/mpi-allreduce.yaml) run in local runs once "
                           "openmpi-bin is installed: sudo apt-get install openmpi-bin"), line


def test_the_check_passes_with_openssl():
    """On this machine (`make test` installed everything): nothing to say of openssl."""
    done = run([sys.executable, str(SCRIPT), "--check"], dict(os.environ))
    assert done.returncode == 0 and "openssl" not in done.stdout + done.stderr, done
    assert "MPI" not in done.stdout, done  # and Open MPI and mpi4py are installed


def test_the_installer_installs_openssl(machine):
    env, log = machine
    done = run([sys.executable, str(SCRIPT)], env)
    assert done.returncode == 0, done
    [install] = log.read_text().splitlines()
    assert install.split()[:5] == ["install", "-y", "-q", "--no-install-recommends", "openssl"], install
    assert run([sys.executable, str(SCRIPT), "--check"], env).returncode == 0  # and the check then passes


def test_the_installer_fails_naming_what_it_could_not_install(machine, tmp_path):
    env, log = machine
    executable(tmp_path / "bin" / "apt-get", APT_GET.format(log=log, bin=tmp_path / "nowhere", code=100, chmod="chmod"))
    done = run([sys.executable, str(SCRIPT)], env)
    assert done.returncode == 1
    assert "the tests need openssl" in done.stderr and "sudo apt-get install openssl" in done.stderr, done.stderr
    assert "update" in log.read_text()  # it tried again with fresh package lists


def test_make_local_checks_before_it_runs(tmp_path):
    from .test_supply_chain import make_dry_run

    steps = make_dry_run("local", tmp_path)
    check = next(i for i, step in enumerate(steps) if "scripts/install_system_packages.py --check" in step)
    assert check == len(steps) - 2 and "genericjob-controller local" in steps[-1], steps


ONE_LINE = ("the openssl command is not installed (not on PATH), and a local cluster makes its TLS certificates and "
            "service-account signing key with it: sudo apt-get install openssl")


@pytest.mark.parametrize(("argv", "prefix"), [
    ([str(CLI), "local", "--port", "0", "--apply", str(ROOT / "examples" / "generic-example.yaml")],
     "genericjob-controller local: error: "),
    ([str(CLI), "local", "--port", "0"], "genericjob-controller local: error: "),
    ([sys.executable, "-m", "localcluster", "serve", "--port", "0"], "localcluster: ")])
def test_a_local_run_without_openssl_ends_in_one_line(machine, tmp_path, argv, prefix):
    env, _ = machine
    done = run(argv, {**env, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    assert done.returncode == 1, done
    assert done.stderr.splitlines() == [prefix + ONE_LINE], done.stderr
    assert not done.stdout.strip(), done.stdout
