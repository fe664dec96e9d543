"""Install what local runs need from the system: openssl, and for the pod network a C compiler and nss_wrapper;
for real MPI jobs (examples/mpi-allreduce.yaml, tests/e2e/test_real_mpi.py) Open MPI's mpirun and mpi4py (Debian's
openmpi-bin and python3-mpi4py, for /usr/bin/python3); and what the envtest tier of the tests needs (tests/real):
etcd (Debian's etcd-server) and xz (to unpack ../shared/envtest's kube-apiserver and kube-controller-manager).

A local run cannot start without the openssl command (localcluster makes its certificates and keys with it:
localcluster/auth/host_commands.py); it works without the pod network's two, on the host's network
(docs/local.md). `make test` runs this script (the tests need all three); `make local` runs it with --check,
which only says what is missing and the command that installs it, and fails when openssl is (the pod network's
and MPI's only get a line each: a local run works without them). It finds them
as localcluster does (host_commands.py, and localcluster/kubelet/network/preload.py for the pod network's).
When something is missing it installs it with apt-get as root, or through `sudo -n` (never a password
prompt), else prints the command and fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from localcluster import host as host_commands
from localcluster.host import find_compiler, find_nss_wrapper, install_hint

POD_NETWORK = {"gcc": "gcc", "libnss-wrapper": "nss_wrapper"}  # Debian's name: Fedora's
REQUIRED = dict(host_commands.REQUIRED.values())  # openssl's package, Debian's name: Fedora's
ENVTEST = {"etcd-server": "etcd", "xz-utils": "xz"}  # Debian's name: Fedora's, which is also the command it gives
# Debian's name: Fedora's. What a real MPI job's pods run (docs/local.md, "MPIJob"): mpirun, and mpi4py for the
# system's python3 (Debian's python3-mpi4py is for /usr/bin/python3 alone).
MPI = {"openmpi-bin": "openmpi", "python3-mpi4py": "python3-mpi4py-openmpi"}
SYSTEM_PYTHON = "/usr/bin/python3"
PACKAGES = {**REQUIRED, **POD_NETWORK, **MPI, **ENVTEST}


def missing(envtest: bool = True) -> dict[str, str]:
    """The packages of what this machine lacks ({Debian's name: Fedora's}): the commands a local run needs,
    then (on Linux) the pod network's and (unless `envtest` is false: a local run does not need them) the
    envtest tier's."""
    lacking = dict(host_commands.REQUIRED[command] for command in host_commands.missing())
    if not sys.platform.startswith("linux"):
        return lacking
    if envtest:
        lacking.update({deb: rpm for deb, rpm in ENVTEST.items() if shutil.which(rpm) is None})
    if find_compiler() is None:
        lacking["gcc"] = PACKAGES["gcc"]
    if find_nss_wrapper() is None:
        lacking["libnss-wrapper"] = PACKAGES["libnss-wrapper"]
    if shutil.which("mpirun") is None:
        lacking["openmpi-bin"] = MPI["openmpi-bin"]
    if not has_mpi4py():
        lacking["python3-mpi4py"] = MPI["python3-mpi4py"]
    return lacking


def has_mpi4py() -> bool:
    """Whether the system's python3 imports mpi4py."""
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return False
    found = "import importlib.util, sys; sys.exit(importlib.util.find_spec('mpi4py') is None)"
    return subprocess.run([SYSTEM_PYTHON, "-c", found], capture_output=True, timeout=60).returncode == 0


def apt_get(packages: list[str]) -> bool:
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if prefix and (not shutil.which("sudo") or subprocess.run([*prefix, "true"], capture_output=True).returncode):
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*prefix, "apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
    if subprocess.run(install, env=env).returncode == 0:
        return True
    subprocess.run([*prefix, "apt-get", "update", "-q"], env=env)  # stale package lists on a fresh machine
    return subprocess.run(install, env=env).returncode == 0


def report(lacking: dict[str, str]) -> bool:
    """--check: a line for what a local run needs (stderr) and one for the pod network's (stdout); whether a
    local run can start."""
    needed = {deb: rpm for deb, rpm in lacking.items() if deb in REQUIRED}
    network = {deb: rpm for deb, rpm in lacking.items() if deb in POD_NETWORK}
    mpi = {deb: rpm for deb, rpm in lacking.items() if deb in MPI}
    if needed:
        print(f"a local run needs {', '.join(needed)}, which is not installed (its certificates and keys are made "
              f"with the openssl command): {install_hint(needed)}", file=sys.stderr)
    if network:
        print(f"pods of local runs get their own network once {', '.join(network)} is installed: "
              f"{install_hint(network)}")
    if mpi:
        print(f"real MPI jobs (mpirun and mpi4py: examples/mpi-allreduce.yaml) run in local runs once "
              f"{', '.join(mpi)} {'is' if len(mpi) == 1 else 'are'} installed: {install_hint(mpi)}")
    return not needed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say what is missing (exit 1 when a local run "
                                                             "cannot start without it); never install")
    args = parser.parse_args()
    lacking = missing(envtest=not args.check)
    if not sys.platform.startswith("linux"):
        print("the pod network needs Linux: local runs here put pods on this machine's network")
    if not lacking:
        return 0
    if args.check:
        return 0 if report(lacking) else 1
    if shutil.which("apt-get") and apt_get(list(lacking)) and not missing():
        return 0
    lacking = missing() or lacking
    print(f"the tests need {', '.join(lacking)} (local runs' certificates, pod network and MPI, the envtest tier): "
          f"{install_hint(lacking)}",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
