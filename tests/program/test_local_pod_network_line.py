"""`local` says at start what its pods get: their own network, or this machine's and why (each run in the test's
process: local_inprocess.py)."""

from __future__ import annotations

import os
import re

import pytest

from .test_local import EXAMPLES, run_in_process

pytestmark = pytest.mark.slow  # each test runs local's pods


def test_local_says_pods_get_their_own_network(tmp_path):
    done = run_in_process(tmp_path, "--apply", str(EXAMPLES / "generic-example.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("pod network: "))
    assert re.fullmatch(r"pod network: pods get their own network: an address each in 127\.\d+\.0\.0/16, Service "
                        r"and pod names resolve", line), line


def test_local_on_the_host_network_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALCLUSTER_POD_NETWORK", "host")
    assert os.environ["LOCALCLUSTER_POD_NETWORK"] == "host"
    done = run_in_process(tmp_path, "--apply", str(EXAMPLES / "generic-example.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pod network: pods share this machine's network (as with hostNetwork: true)" in done.stdout.splitlines()
