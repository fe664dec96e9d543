"""The commands of this machine that a local cluster cannot start without, and what to say when one is missing.

One: `openssl`, which makes the serving certificate (tls.py), the service-account issuer's RSA key
(signing_key.py) and `local`'s webhook pair (controller/devtools/local_webhook.py). Run through `openssl()`,
a machine without it (a minimal container, a Debian without the `openssl` package) gets MissingCommand, whose
message is one line naming the command and the command that installs it: what `genericjob-controller local`
and `localcluster serve` print instead of a FileNotFoundError's traceback. scripts/install_system_packages.py
reads REQUIRED (--check names what is missing; without it, apt-get installs it). The pod network's C compiler
and nss_wrapper are not here: a local run works without them (kubelet/network/preload.py says what it lacks).
"""

from __future__ import annotations

import shutil
import subprocess

OPENSSL = "openssl"
# command -> (Debian's package, Fedora's package), and what a local cluster does with it.
REQUIRED = {OPENSSL: ("openssl", "openssl")}
USES = {OPENSSL: "a local cluster makes its TLS certificates and service-account signing key with it"}


class MissingCommand(RuntimeError):
    """A command a local cluster runs is not on PATH; str(): the one line that says which and how to install it."""

    def __init__(self, command: str) -> None:
        debian, fedora = REQUIRED[command]
        super().__init__(f"the {command} command is not installed (not on PATH), and {USES[command]}: "
                         f"{install_hint({debian: fedora})}")
        self.command = command


def install_hint(packages: dict[str, str]) -> str:
    """The command that installs `packages` ({debian name: fedora name}) on this machine's distribution."""
    if shutil.which("apt-get"):
        return "sudo apt-get install " + " ".join(packages)
    if shutil.which("dnf"):
        return "sudo dnf install " + " ".join(packages.values())
    return "install " + " and ".join(deb if deb == rpm else f"{deb} (Debian) or {rpm} (Fedora)"
                                     for deb, rpm in packages.items())


def missing() -> list[str]:
    """The commands of REQUIRED that are not on PATH."""
    return [command for command in REQUIRED if shutil.which(command) is None]


def openssl(*arguments: str, timeout: float) -> subprocess.CompletedProcess[bytes]:
    """`openssl ARGUMENTS`, its output captured; CalledProcessError when it fails, MissingCommand without it."""
    path = shutil.which(OPENSSL)
    if path is None:
        raise MissingCommand(OPENSSL)
    try:
        return subprocess.run([path, *arguments], check=True, capture_output=True, timeout=timeout)
    except FileNotFoundError:  # removed since it was found
        raise MissingCommand(OPENSSL) from None
