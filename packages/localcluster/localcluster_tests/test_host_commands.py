"""The openssl command, which makes a local cluster's certificates and keys: without it (a PATH that lacks it),
each of its uses raises MissingCommand, one line naming the command and how to install it, not a
FileNotFoundError (tests/program/test_system_commands.py runs `local` and `localcluster serve` so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from localcluster.auth import host_commands, signing_key, tls
from localcluster.auth.host_commands import MissingCommand


def stub(directory: Path, name: str) -> None:
    """An executable `name` in `directory` that does nothing (only its presence on PATH matters)."""
    directory.mkdir(exist_ok=True)
    (directory / name).write_text("#!/bin/sh\nexit 0\n")
    (directory / name).chmod(0o755)


@pytest.fixture
def without_openssl(tmp_path, monkeypatch) -> Path:
    """PATH: a directory of stubs, apt-get's among them (as on Debian), openssl not."""
    stub(tmp_path / "bin", "apt-get")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    return tmp_path / "bin"


def test_every_use_of_openssl_says_it_is_missing_and_how_to_install_it(without_openssl):
    assert host_commands.missing() == ["openssl"]
    uses = [lambda: host_commands.openssl("version", timeout=10), signing_key.issuer_key.__wrapped__,
            lambda: tls.self_signed.__wrapped__("127.0.0.1")]  # (past their caches: a process makes each once)
    for use in uses:
        with pytest.raises(MissingCommand) as raised:
            use()
        [line] = str(raised.value).splitlines()
        assert line.startswith("the openssl command is not installed (not on PATH)")
        assert line.endswith(": sudo apt-get install openssl"), line
        assert raised.value.command == "openssl"


@pytest.mark.parametrize(("manager", "hint"), [("apt-get", "sudo apt-get install openssl"),
                                               ("dnf", "sudo dnf install openssl"), (None, "install openssl")])
def test_the_hint_is_the_distributions_command(tmp_path, monkeypatch, manager, hint):
    (tmp_path / "bin").mkdir()
    if manager:
        stub(tmp_path / "bin", manager)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert str(MissingCommand("openssl")).endswith(f": {hint}")
    assert host_commands.install_hint({"libnss-wrapper": "nss_wrapper"}) == {
        "apt-get": "sudo apt-get install libnss-wrapper", "dnf": "sudo dnf install nss_wrapper",
        None: "install libnss-wrapper (Debian) or nss_wrapper (Fedora)"}[manager]


def test_with_openssl_on_path_it_runs():
    """(`make test` installs it: scripts/install_system_packages.py.)"""
    assert host_commands.missing() == []
    assert host_commands.openssl("version", timeout=30).stdout.startswith((b"OpenSSL", b"LibreSSL"))
