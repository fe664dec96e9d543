"""What localcluster needs of the machine, for a program that installs or checks it (scripts/install_system_packages.py,
`genericjob-controller local`): the commands it runs (openssl), the packages that provide them, and the pod
network's C compiler and nss_wrapper."""

from __future__ import annotations

from .auth.host_commands import REQUIRED, USES, MissingCommand, install_hint, missing, openssl
from .kubelet.network.preload import find_compiler, find_nss_wrapper

__all__ = ["REQUIRED", "USES", "MissingCommand", "find_compiler", "find_nss_wrapper", "install_hint", "missing",
           "openssl"]
