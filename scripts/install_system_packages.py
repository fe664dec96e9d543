"""Install what local runs' pod network needs from the system: a C compiler and nss_wrapper (docs/local.md).

`make test` runs it (its pod-network tests need both); `make local` runs it with --check, which only says
what is missing and the command that installs it (a local run works without them, on the host's network).
It finds them as the pod network does (localcluster/kubelet/network/preload.py). When something is
missing it installs it with apt-get as root, or through `sudo -n` (never a password prompt), else
prints the command and fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from localcluster.kubelet.network.preload import find_compiler, find_nss_wrapper, install_hint

PACKAGES = {"gcc": "gcc", "libnss-wrapper": "nss_wrapper"}  # Debian's name: Fedora's


def missing() -> dict[str, str]:
    lacking = {}
    if find_compiler() is None:
        lacking["gcc"] = PACKAGES["gcc"]
    if find_nss_wrapper() is None:
        lacking["libnss-wrapper"] = PACKAGES["libnss-wrapper"]
    return lacking


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say what is missing; never install")
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        print("the pod network needs Linux: local runs here put pods on this machine's network")
        return 0
    lacking = missing()
    if not lacking:
        return 0
    hint = install_hint(lacking)
    if args.check:
        print(f"pods of local runs get their own network once {', '.join(lacking)} is installed: {hint}")
        return 0
    if shutil.which("apt-get") and apt_get(list(lacking)) and not missing():
        return 0
    print(f"the tests need {', '.join(lacking)} (the pod network of local runs): {hint}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
