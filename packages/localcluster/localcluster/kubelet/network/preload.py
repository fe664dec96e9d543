"""The two libraries preloaded into a pod's processes: podnet (built here from podnet.c) and nss_wrapper.

podnet gives a pod's processes an address of their own (podnet.c says how); it is compiled with the
machine's C compiler (`$CC`, else cc, gcc or clang) the first time a process needs it, into a private
directory removed when the process exits (a fraction of a second, once, however many clusters it starts).
nss_wrapper (cwrap's, the Samba project's: Debian and Ubuntu `libnss-wrapper`, Fedora
`nss_wrapper`) resolves names from a hosts file of the pod's own (NSS_WRAPPER_HOSTS), falling back to
the machine's resolver for every other name. Both work through LD_PRELOAD, so only on Linux, and only
for dynamically linked programs (a static binary, as many Go programs are, sees the host's network).

`find()` says what this machine has, and for what it lacks the one command that installs it.
"""

from __future__ import annotations

import atexit
import ctypes.util
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ...auth.host_commands import install_hint

SHIM_SOURCE = "podnet.c"
SHIM_LIBRARY = "libpodnet.so"
NSS_WRAPPER = "nss_wrapper"
# Where distributions put it, in case ld.so.cache is not readable by find_library (a minimal container).
LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")
BUILD_TIMEOUT = 60.0


@dataclass(frozen=True)
class Preload:
    """What a pod's processes can be given: the built shim (None: pods share the host's network), nss_wrapper
    (None: pods' names do not resolve), and, for what is missing, why and how to get it."""

    shim: Path | None
    nss_wrapper: str | None
    missing: tuple[str, ...] = ()

    @property
    def libraries(self) -> list[str]:
        return [str(lib) for lib in (self.shim, self.nss_wrapper) if lib is not None]


def find_nss_wrapper() -> str | None:
    """The nss_wrapper library as LD_PRELOAD can name it, or None."""
    found = ctypes.util.find_library(NSS_WRAPPER)
    if found:
        return found
    for directory in LIBRARY_DIRS:
        path = Path(directory) / f"lib{NSS_WRAPPER}.so"
        if path.exists():
            return str(path)
    return None


def find_compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and (path := shutil.which(name)):
            return path
    return None


def build_shim() -> tuple[Path | None, str | None]:
    """podnet.c compiled by this machine's compiler: the library, or None and why not."""
    compiler = find_compiler()
    if compiler is None:
        return None, "no C compiler to build the network shim with"
    return _compiled(compiler)


@functools.cache
def _compiled(compiler: str) -> tuple[Path | None, str | None]:
    directory = Path(tempfile.mkdtemp(prefix="localcluster-podnet-"))  # 0700: nobody else's code gets preloaded
    atexit.register(shutil.rmtree, directory, True)
    source = directory / SHIM_SOURCE
    source.write_bytes(resources.files(__package__).joinpath(SHIM_SOURCE).read_bytes())
    library = directory / SHIM_LIBRARY
    try:
        done = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(source), "-ldl"],
                              capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"building the network shim failed: {exc}"
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["(no message)"])[0]
        return None, f"building the network shim with {compiler} failed: {first}"
    return library, None


def find() -> Preload:
    """What this machine can give pods."""
    if not sys.platform.startswith("linux"):
        return Preload(None, None, (f"pods share this machine's network: their own addresses need Linux "
                                    f"(this is {sys.platform})",))
    shim, why = build_shim()
    if shim is None:
        return Preload(None, None, (f"pods share this machine's network, so replicas listening on one port collide "
                                    f"and no pod's or Service's name resolves: {why} "
                                    f"({install_hint({'gcc': 'gcc'})})",))
    nss = find_nss_wrapper()
    if nss is None:
        return Preload(shim, None, ("no pod's or Service's name resolves, so replicas that find each other by name "
                                    "(MASTER_ADDR, TF_CONFIG) wait forever: nss_wrapper is not installed "
                                    f"({install_hint({'libnss-wrapper': 'nss_wrapper'})})",))
    return Preload(shim, nss)
